package bgexec

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// NewAuditLog returns an [Observer] that appends one JSON object per
// event to w, each on its own line, and never rewrites what it wrote
// (open a file with os.O_APPEND). Every line has "event" (the kind),
// "time" (RFC 3339, UTC, nanoseconds), "scope" and "sessionId" ("" for a
// decision, made before there is a session), and "callId" when the event
// belongs to an exec call; then, by kind:
//
//   - spawn: "command", "workdir", "host", "node" (on nodes), "envKeys"
//     (the names of the call's env overrides, never their values; [] when
//     none), "pty", "background", "elevated";
//   - decision: "command", "workdir", "decision" (allowed, approved,
//     denied, pending), "decidedBy" (policy, allowlist, approver, decide,
//     expiry), "reason", "approvalId" (when an approval is concerned);
//   - input: "action" (write, send-keys, paste, submit, eof), "bytes",
//     and "data" only with Config.ObserveInputData;
//   - control: "action" (kill, remove, clear);
//   - end: "exitCode" (null when a signal ended it), "signal" ("" when it
//     exited), "exitReason", "durationMs", "outputBytes", "truncated",
//     "removed", "cpuMs" and "peakMemoryBytes" (-1 when unknown; see
//     Event.CPUMs and Event.PeakMemoryBytes), and "memoryLimitBytes" for
//     an out-of-memory end;
//   - result: "status" (completed, failed, running, approval-pending, or
//     error for a call that returned a Go error) and "durationMs", the
//     exec call's own time.
//
// The returned value is a [CheckedObserver]: a write error is its failure
// (see Config.ObserverRequired). Writes are serialized, so w needs no
// locking of its own; the registry calls it from one goroutine anyway.
// Closing w is the caller's business, after [Registry.Close].
func NewAuditLog(w io.Writer) Observer {
	return &auditLog{w: w}
}

type auditLog struct {
	mu  sync.Mutex // serializes writes
	w   io.Writer
	buf []byte
}

// auditHead is the part of every line.
type auditHead struct {
	Event     EventKind `json:"event"`
	Time      string    `json:"time"`
	Scope     string    `json:"scope"`
	SessionID string    `json:"sessionId"`
	CallID    string    `json:"callId,omitempty"`
}

type auditSpawn struct {
	auditHead
	Command    string   `json:"command"`
	Workdir    string   `json:"workdir"`
	Host       string   `json:"host"`
	Node       string   `json:"node,omitempty"`
	EnvKeys    []string `json:"envKeys"`
	PTY        bool     `json:"pty"`
	Background bool     `json:"background"`
	Elevated   bool     `json:"elevated"`
}

type auditDecision struct {
	auditHead
	Command    string `json:"command"`
	Workdir    string `json:"workdir"`
	Decision   string `json:"decision"`
	DecidedBy  string `json:"decidedBy"`
	Reason     string `json:"reason"`
	ApprovalID string `json:"approvalId,omitempty"`
}

type auditInput struct {
	auditHead
	Action string  `json:"action"`
	Bytes  int     `json:"bytes"`
	Data   *string `json:"data,omitempty"`
}

type auditControl struct {
	auditHead
	Action string `json:"action"`
}

type auditResult struct {
	auditHead
	Status     string `json:"status"`
	DurationMs int64  `json:"durationMs"`
}

type auditEnd struct {
	auditHead
	ExitCode         *int   `json:"exitCode"`
	Signal           string `json:"signal"`
	ExitReason       string `json:"exitReason"`
	DurationMs       int64  `json:"durationMs"`
	OutputBytes      int64  `json:"outputBytes"`
	Truncated        bool   `json:"truncated"`
	Removed          bool   `json:"removed"`
	MemoryLimitBytes int64  `json:"memoryLimitBytes,omitempty"`
	CPUMs            int64  `json:"cpuMs"`
	PeakMemoryBytes  int64  `json:"peakMemoryBytes"`
}

// Observe writes ev; a write error is dropped (see ObserveErr).
func (a *auditLog) Observe(ev Event) { _ = a.ObserveErr(ev) }

// ObserveErr writes ev as one line and returns the write's error.
func (a *auditLog) ObserveErr(ev Event) error {
	head := auditHead{Event: ev.Kind, Time: ev.Time.UTC().Format(time.RFC3339Nano), Scope: ev.Scope, SessionID: ev.SessionID, CallID: ev.CallID}
	var line any
	switch ev.Kind {
	case EventSpawn:
		keys := ev.EnvKeys
		if keys == nil {
			keys = []string{}
		}
		line = auditSpawn{head, ev.Command, ev.Workdir, ev.Host, ev.Node, keys, ev.PTY, ev.Background, ev.Elevated}
	case EventDecision:
		line = auditDecision{head, ev.Command, ev.Workdir, ev.Decision, ev.DecidedBy, ev.Reason, ev.ApprovalID}
	case EventInput:
		in := auditInput{auditHead: head, Action: ev.Action, Bytes: ev.Bytes}
		if ev.Data != "" {
			in.Data = &ev.Data
		}
		line = in
	case EventControl:
		line = auditControl{head, ev.Action}
	case EventResult:
		line = auditResult{head, ev.Status, ev.Duration.Milliseconds()}
	case EventEnd:
		line = auditEnd{head, ev.ExitCode, ev.Signal, ev.ExitReason, ev.Duration.Milliseconds(), ev.OutputBytes, ev.Truncated, ev.Removed, ev.MemoryLimitBytes, ev.CPUMs, ev.PeakMemoryBytes}
	default:
		line = head
	}
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// One Write per line, so a file opened with O_APPEND gets whole lines
	// even when several writers share it.
	a.buf = append(append(a.buf[:0], b...), '\n')
	_, err = a.w.Write(a.buf)
	return err
}
