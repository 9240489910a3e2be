package bgexec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
)

// EventKind says what an [Event] records.
type EventKind string

// The kinds of [Event].
const (
	// EventSpawn: a command is about to start (sent before the process
	// exists, so the session it names may never run: when the spawn
	// fails, a quota refuses it or the registry closes first, its end
	// event says "spawn-error").
	EventSpawn EventKind = "spawn"
	// EventDecision: the approval rules decided an exec call (or
	// [Scope.Decide] or the approval timeout decided a deferred one).
	EventDecision EventKind = "decision"
	// EventInput: the agent sent input to a running session (write,
	// send-keys, paste, submit, or eof closing its stdin). Sent before the
	// bytes are written.
	EventInput EventKind = "input"
	// EventControl: the agent asked to kill, remove or clear a session.
	// The session's end (for kill and remove of a running one) follows as
	// its own end event.
	EventControl EventKind = "control"
	// EventEnd: a session ended, whoever ended it.
	EventEnd EventKind = "end"
	// EventResult: an exec call ([Scope.Exec], or Call with the exec
	// tool) returned: its status and how long the call took.
	EventResult EventKind = "result"
)

// Decisions an [Event] of kind "decision" carries.
const (
	// DecisionAllowed: the call runs without approval (security full, or
	// every command is on the allowlist).
	DecisionAllowed = "allowed"
	// DecisionApproved: an [Approver] or [Scope.Decide] allowed it.
	DecisionApproved = "approved"
	// DecisionDenied: it was refused; nothing ran.
	DecisionDenied = "denied"
	// DecisionPending: the approver deferred it ([ErrApprovalDeferred]).
	DecisionPending = "pending"
)

// Who or what decided, in Event.DecidedBy.
const (
	// DecidedByPolicy: the configured host, elevation, security and ask
	// levels (no approval was needed, or they refused the call).
	DecidedByPolicy = "policy"
	// DecidedByAllowlist: the allowlist (with the allow-always rules).
	DecidedByAllowlist = "allowlist"
	// DecidedByApprover: the Config.Approver.
	DecidedByApprover = "approver"
	// DecidedByDecide: a [Scope.Decide] call on a deferred approval.
	DecidedByDecide = "decide"
	// DecidedByExpiry: Config.ApprovalTimeout passed.
	DecidedByExpiry = "expiry"
)

// Event is one record of what a registry did, handed to an [Observer].
// Which fields are set depends on Kind; the others are zero. An Observer
// must not keep the EnvKeys slice beyond the call if it modifies it.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Time is when it happened.
	Time time.Time
	// Scope is the agent scope (session key) of the call.
	Scope string
	// CallID identifies one exec call: its decision, spawn and result
	// events share it, and so the session it started. Random, 16 hex digits;
	// empty for events not caused by an exec call (input, control,
	// decisions made by Decide or by the approval timeout).
	CallID string
	// SessionID is the session the event is about; empty for decisions
	// (made before there is a session).
	SessionID string
	// ApprovalID names the deferred approval a decision is about.
	ApprovalID string

	// Spawn and decision events: the command line as given.
	Command string
	// Spawn and decision events: the resolved working directory (on a
	// node, as requested; empty for the node's default).
	Workdir string
	// Spawn events: where it runs: "gateway", "sandbox" or "node".
	Host string
	// Spawn events: the node's name when Host is "node".
	Node string
	// Spawn events: the keys (never the values) of the call's env
	// overrides, sorted.
	EnvKeys []string
	// Spawn events: whether it runs on a PTY, was started with
	// background, or elevated.
	PTY, Background, Elevated bool

	// Decision events: DecisionAllowed, DecisionApproved, DecisionDenied
	// or DecisionPending.
	Decision string
	// Decision events: who or what decided (the DecidedBy constants).
	DecidedBy string
	// Decision events: why, in words (a refusal's text, the approver's
	// reason, "security=full", …). Control events: empty.
	Reason string

	// Input events: "write", "send-keys", "paste", "submit" or "eof".
	// Control events: "kill", "remove" or "clear".
	Action string
	// Input events: how many bytes are sent (after key encoding and
	// bracketed-paste markers).
	Bytes int
	// Input events: the bytes themselves, only with
	// Config.ObserveInputData; empty otherwise.
	Data string

	// End events: the exit code; nil when a signal ended it or it never
	// started.
	ExitCode *int
	// End events: the signal that ended it ("SIGTERM"), or "".
	Signal string
	// End events: "exit", "signal", "timeout", "killed", "oom", "lost"
	// or "spawn-error" (as details.exitReason).
	ExitReason string
	// End events: from the start to the end. Result events: from the
	// exec call's start to its return.
	Duration time.Duration
	// Result events: the result's details.status ("completed", "failed",
	// "running", "approval-pending"), or "error" when the call returned a
	// Go error instead (a cancelled context, a closed registry).
	Status string
	// End events: bytes the command printed (both streams, terminal
	// escape sequences included).
	OutputBytes int64
	// End events: whether retained output was cut (the output caps).
	Truncated bool
	// End events: whether the session had been removed (process remove).
	Removed bool
	// End events: the memory limit in bytes it hit, when ExitReason is
	// "oom"; 0 otherwise.
	MemoryLimitBytes int64
	// End events: the most memory the session was charged, in bytes, from
	// its cgroup's peak counter (memory.peak on cgroup v2, Linux 6.12 or
	// newer for a reused cgroup; memory.max_usage_in_bytes on v1); -1 when
	// unknown: no memory controller reaches the session (on a cgroup v1
	// host, one is there only with Limits.MemoryBytes), process-group
	// containment, a node, a Docker container, a pod, a spawn error. wait4's ru_maxrss is no
	// answer: it counts the embedding process's resident set, which a
	// child shares until its exec.
	PeakMemoryBytes int64
	// End events: the CPU time, in milliseconds, of the session's
	// processes that were waited for (the shell and every descendant it or
	// its children reaped, from wait4's rusage); -1 when unknown (a
	// sandboxed, node, Docker or pod session, a spawn error).
	CPUMs int64
}

// Observer sees every exec call and session of a registry (see
// Config.Observer and the package documentation's "Audit trail"). Observe
// is called from one goroutine at a time, the registry's delivery
// goroutine, in the order the events happened; it should return soon,
// since events wait in a bounded queue meanwhile.
type Observer interface {
	Observe(Event)
}

// CheckedObserver is an [Observer] that can fail. With
// Config.ObserverRequired, the events that come before a command starts
// (its decision and spawn events) and before input reaches a session are
// delivered through ObserveErr, and the call waits for it: an error refuses
// the exec (or the write) and nothing runs. Other events go through
// ObserveErr too, and an error there is only counted. An Observer without
// ObserveErr never fails.
type CheckedObserver interface {
	Observer
	ObserveErr(Event) error
}

// SpawnEnvObserver is an [Observer] that adds environment entries to the
// commands it sees start (for example a trace context, TRACEPARENT).
// SpawnEnv is called on the exec call's goroutine, with its context,
// right before the spawn event is queued and before the process is
// created, for every spawn; the "KEY=VALUE" entries it returns are set in
// the child's environment over every other value but the shell markers.
// It must be safe for concurrent use and must not block. Entries whose key
// the environment rules refuse as overrides are dropped.
type SpawnEnvObserver interface {
	Observer
	SpawnEnv(ctx context.Context, ev *Event) []string
}

// DefaultObserverQueue is the default of Config.ObserverQueue: how many
// events may wait for the observer.
const DefaultObserverQueue = 4096

// ObserverStats counts the events of a registry's observer (see
// [Registry.ObserverStats]).
type ObserverStats struct {
	// Delivered is how many events the observer received.
	Delivered uint64
	// Dropped is how many events were never delivered: the queue was full
	// (a slow observer), or the registry had closed.
	Dropped uint64
	// Failed is how many deliveries a [CheckedObserver] failed (or that
	// panicked).
	Failed uint64
}

// ObserverStats returns the counters of Config.Observer's events; all
// zero without one. Safe for concurrent use.
func (r *Registry) ObserverStats() ObserverStats {
	q := r.obs
	if q == nil {
		return ObserverStats{}
	}
	return ObserverStats{Delivered: q.delivered.Load(), Dropped: q.dropped.Load(), Failed: q.failed.Load()}
}

// errObserverStopped is what an event waiting for delivery gets when the
// registry closed before it was delivered.
var errObserverStopped = errors.New("the registry is closing")

// observerSettings is the resolved observer configuration.
type observerSettings struct {
	observer  Observer
	required  bool
	inputData bool
	queue     int
}

func resolveObserver(c *Config) (observerSettings, error) {
	o := observerSettings{observer: c.Observer, required: c.ObserverRequired, inputData: c.ObserveInputData, queue: DefaultObserverQueue}
	if c.ObserverQueue > 0 {
		o.queue = c.ObserverQueue
	}
	if o.required && o.observer == nil {
		return o, errors.New("bgexec: Config.ObserverRequired is set but Config.Observer is nil")
	}
	return o, nil
}

// queued is an event waiting for the delivery goroutine; ack, when set,
// receives the outcome.
type queued struct {
	ev  Event
	ack chan error
}

// observerQueue is the bounded queue of events and its one delivery
// goroutine, started by NewRegistry and stopped by Close.
type observerQueue struct {
	obs      Observer
	settings observerSettings

	delivered, dropped, failed atomic.Uint64

	mu      sync.Mutex // guards the fields below
	q       []queued
	calls   map[string]string // the call id of each session not ended yet
	stopped bool              // no more events are taken
	// abandoned is set when Close stopped waiting: nothing more is
	// delivered.
	abandoned bool
	calling   bool
	// quit is closed when Close stops waiting for the goroutine: a call
	// waiting for its event's delivery stops waiting then.
	quit chan struct{}

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// startObserver starts the delivery goroutine; nil without an observer.
func startObserver(st *observerSettings) *observerQueue {
	if st.observer == nil {
		return nil
	}
	q := &observerQueue{
		obs: st.observer, settings: *st,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), quit: make(chan struct{}),
	}
	go func() {
		defer close(q.done)
		q.run()
	}()
	return q
}

// put queues ev. It never blocks: with the queue full (or stopped) the
// event is dropped and counted, and ack (if any) gets the reason.
func (q *observerQueue) put(ev Event, ack chan error) {
	q.mu.Lock()
	var why error
	switch {
	case q.stopped:
		why = errObserverStopped
	case len(q.q) >= q.settings.queue:
		why = fmt.Errorf("the observer's queue is full (%d events)", q.settings.queue)
	default:
		q.q = append(q.q, queued{ev, ack})
	}
	q.mu.Unlock()
	if why != nil {
		q.dropped.Add(1)
		if ack != nil {
			ack <- why
		}
		return
	}
	kick(q.kick)
}

// setCall remembers the exec call that started session id, for its end
// event.
func (q *observerQueue) setCall(id, call string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.calls == nil {
		q.calls = make(map[string]string)
	}
	q.calls[id] = call
}

// takeCall returns and forgets the call id of session id.
func (q *observerQueue) takeCall(id string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	call := q.calls[id]
	delete(q.calls, id)
	return call
}

// run delivers events in order until stop, then delivers what is left.
func (q *observerQueue) run() {
	for {
		q.mu.Lock()
		batch := q.q
		q.q = nil
		stopping := q.stopped
		q.mu.Unlock()
		for i, e := range batch {
			q.mu.Lock()
			if q.abandoned {
				q.mu.Unlock()
				for _, rest := range batch[i:] {
					q.dropped.Add(1)
					if rest.ack != nil {
						rest.ack <- errObserverStopped
					}
				}
				return
			}
			q.calling = true
			q.mu.Unlock()
			err := q.deliver(e.ev)
			q.mu.Lock()
			q.calling = false
			q.mu.Unlock()
			if e.ack != nil {
				e.ack <- err
			}
		}
		if len(batch) > 0 {
			continue
		}
		if stopping {
			return
		}
		select {
		case <-q.kick:
		case <-q.stop:
			q.mu.Lock()
			q.stopped = true
			q.mu.Unlock()
		}
	}
}

// deliver hands one event to the observer; a panic counts as a failure.
func (q *observerQueue) deliver(ev Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the observer panicked: %v", p)
		}
		if err != nil {
			q.failed.Add(1)
		} else {
			q.delivered.Add(1)
		}
	}()
	if c, ok := q.obs.(CheckedObserver); ok {
		return c.ObserveErr(ev)
	}
	q.obs.Observe(ev)
	return nil
}

// close stops taking events, delivers the queued ones and waits for the
// goroutine until ctx ends. Then nothing more is delivered; a call in
// progress is left to finish on its own and ctx.Err() returned.
func (q *observerQueue) close(ctx context.Context) error {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	first := !q.stopped
	q.stopped = true
	q.mu.Unlock()
	if first {
		close(q.stop)
	}
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	q.abandoned = true
	calling := q.calling
	q.mu.Unlock()
	close(q.quit)
	if calling {
		return ctx.Err()
	}
	<-q.done
	return nil
}

// observe queues ev without waiting.
func (r *Registry) observe(ev Event) {
	if r.obs == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	r.obs.put(ev, nil)
}

// observeChecked queues ev and, with ObserverRequired, waits for its
// delivery: it returns a failure text when the observer failed, the queue
// was full or ctx ended first; "" otherwise.
func (r *Registry) observeChecked(ctx context.Context, ev Event) string {
	if r.obs == nil {
		return ""
	}
	if !r.obs.settings.required {
		r.observe(ev)
		return ""
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	ack := make(chan error, 1)
	r.obs.put(ev, ack)
	var err error
	select {
	case err = <-ack:
	case <-ctx.Done():
		err = fmt.Errorf("it did not confirm the %s event before the call's context ended", ev.Kind)
	case <-r.obs.quit:
		err = errObserverStopped
	}
	if err == nil {
		return ""
	}
	return "The audit observer failed (" + err.Error() + "), and it is required here (Config.ObserverRequired): nothing was done. Retry later, or ask the operator to check the audit sink."
}

// newCallID returns a random id for one exec call.
func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
	return hex.EncodeToString(b[:])
}

// verdict is what the approval rules decided about one call, for its
// decision event.
type verdict struct {
	decision, by, reason string
}

// allowedVerdict is the verdict of a call that needs no approval: security
// full lets everything run, otherwise the allowlist did.
func (sc *Scope) allowedVerdict(req *ExecRequest) verdict {
	st := &sc.reg.cfg
	sec, _ := parseSecurity(req.Security) // the gate has validated both
	ask, _ := parseAsk(req.Ask)
	sec, ask = max(sec, st.security), max(ask, st.ask)
	levels := "security=" + securityNames[sec] + " ask=" + askNames[ask]
	if sec == securityFull && ask != askAlways {
		return verdict{DecisionAllowed, DecidedByPolicy, levels}
	}
	return verdict{DecisionAllowed, DecidedByAllowlist, "every command is on the allowlist (" + levels + ")"}
}

// observeResult sends the result event of an exec call that started at
// start: its session is the one it started, also when the result does
// not name it (a foreground run that completed).
func (sc *Scope) observeResult(ct *callTrace, start time.Time, res *Result, err error) {
	if sc.reg.obs == nil {
		return
	}
	ev := Event{Kind: EventResult, Time: time.Now(), Scope: sc.key, CallID: ct.id, SessionID: ct.session, Status: "error"}
	ev.Duration = ev.Time.Sub(start)
	if err == nil && res != nil {
		ev.Status = string(res.Details.Status)
	}
	sc.reg.observe(ev)
}

// observeDecision sends an exec call's decision event; with
// ObserverRequired it waits, and returns a failure text if the observer
// failed.
func (sc *Scope) observeDecision(ctx context.Context, call string, req *ExecRequest, cwd string, v verdict, approvalID string) string {
	if sc.reg.obs == nil || v.decision == "" {
		return ""
	}
	if approvalID == "" && v.by == DecidedByDecide {
		// checkPolicy's reason is "<approval id> <decision>".
		approvalID, v.reason, _ = strings.Cut(v.reason, " ")
	}
	ev := Event{
		Kind: EventDecision, Scope: sc.key, CallID: call, ApprovalID: approvalID,
		Command: req.Command, Workdir: cwd, Decision: v.decision, DecidedBy: v.by, Reason: v.reason,
	}
	if v.decision == DecisionPending {
		sc.reg.observe(ev) // nothing runs now
		return ""
	}
	return sc.reg.observeChecked(ctx, ev)
}

// spawnObservation is an exec call's spawn as the observer sees it: the
// session id reserved for it, so the spawn event can name it before the
// process exists.
type spawnObservation struct {
	reg   *Registry
	scope string
	call  string
	id    string // "" without an observer
}

// observeSpawn reserves the session id, asks a SpawnEnvObserver for
// environment entries (returned, for the command's environment) and sends
// the spawn event; with ObserverRequired it waits for it and returns a
// failure text when the observer failed (the id is released then).
func (sc *Scope) observeSpawn(ctx context.Context, c *execCall, pty bool) (so spawnObservation, added []string, failure string) {
	r, req := sc.reg, c.req
	if r.obs == nil {
		return spawnObservation{}, nil, ""
	}
	so = spawnObservation{reg: r, scope: sc.key, call: c.call, id: r.reserveID()}
	ev := Event{
		Kind: EventSpawn, Scope: sc.key, CallID: c.call, SessionID: so.id, Command: req.Command, Workdir: c.cwd,
		Host: c.host.host.Name(), Node: c.host.node, PTY: pty, Background: req.Background, Elevated: req.Elevated,
	}
	for k := range req.Env {
		ev.EnvKeys = append(ev.EnvKeys, k)
	}
	slices.Sort(ev.EnvKeys)
	if h, ok := r.obs.obs.(SpawnEnvObserver); ok {
		ev.Time = time.Now()
		probe := ev
		probe.EnvKeys = slices.Clone(ev.EnvKeys)
		added = r.allowedEnv(h.SpawnEnv(ctx, &probe))
	}
	r.obs.setCall(so.id, c.call)
	if msg := r.observeChecked(ctx, ev); msg != "" {
		so.release()
		return spawnObservation{}, nil, msg
	}
	return so, added, ""
}

// spawnFailed sends the end event of a spawn that failed and releases the
// reserved id.
func (so spawnObservation) spawnFailed(start time.Time) {
	if so.id == "" {
		return
	}
	so.reg.observe(Event{
		Kind: EventEnd, Scope: so.scope, CallID: so.call, SessionID: so.id,
		ExitReason: string(session.ReasonSpawnError), Duration: time.Since(start), CPUMs: -1, PeakMemoryBytes: -1,
	})
	so.release()
}

func (so spawnObservation) release() {
	if so.id != "" {
		so.reg.unreserveID(so.id)
		so.reg.obs.takeCall(so.id)
	}
}

// allowedEnv keeps the "KEY=VALUE" entries whose key the environment rules
// accept as an override.
func (r *Registry) allowedEnv(entries []string) []string {
	var out []string
	for _, e := range entries {
		k, v, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			continue
		}
		if r.env.ValidateOverrides(map[string]string{k: v}) == "" {
			out = append(out, e)
		}
	}
	return out
}

// reserveID picks a fresh session id that add will use, so the spawn event
// can name it before the process starts.
func (r *Registry) reserveID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.freshIDLocked()
	if r.reserved == nil {
		r.reserved = make(map[string]struct{})
	}
	r.reserved[id] = struct{}{}
	return id
}

func (r *Registry) unreserveID(id string) {
	r.mu.Lock()
	delete(r.reserved, id)
	r.mu.Unlock()
}

// observeInput sends an input event; with ObserverRequired it waits, and
// returns the failure result when the observer failed (nothing is written
// then).
func (sc *Scope) observeInput(ctx context.Context, s *session.Session, action string, p []byte) *Result {
	r := sc.reg
	if r.obs == nil {
		return nil
	}
	ev := Event{Kind: EventInput, Scope: sc.key, SessionID: s.ID(), Action: action, Bytes: len(p)}
	if r.obs.settings.inputData {
		ev.Data = string(p)
	}
	if msg := r.observeChecked(ctx, ev); msg != "" {
		return failure(msg)
	}
	return nil
}

// observeControl sends a control event (kill, remove, clear).
func (sc *Scope) observeControl(s *session.Session, action string) {
	sc.reg.observe(Event{Kind: EventControl, Scope: sc.key, SessionID: s.ID(), Action: action})
}

// observeEnd sends a session's end event; called by its owner goroutine.
func (r *Registry) observeEnd(s *session.Session) {
	if r.obs == nil {
		return
	}
	sn := s.Snapshot(0)
	e := sn.Exit
	cpu := int64(-1)
	if u, ok := s.Process().(host.EndUsager); ok {
		if c, ok := u.EndUsage(); ok {
			cpu = c
		}
	}
	peak := int64(-1)
	if p, ok := s.Process().(host.PeakReporter); ok {
		if b, ok := p.PeakMemory(); ok {
			peak = b
		}
	}
	r.observe(Event{
		Kind: EventEnd, Time: e.At, Scope: s.Scope(), CallID: r.obs.takeCall(s.ID()), SessionID: s.ID(),
		ExitCode: e.Code, Signal: e.Signal, ExitReason: string(e.Reason),
		Duration: e.At.Sub(s.StartedAt()), OutputBytes: s.OutputBytes(), Truncated: sn.Truncated,
		Removed: sn.Removed, MemoryLimitBytes: e.MemoryLimit, CPUMs: cpu, PeakMemoryBytes: peak,
	})
}

// observeApproval sends the decision event of a deferred approval decided
// by Decide or expired.
func (r *Registry) observeApproval(p *pendingApproval, decision, by, reason string) {
	r.observe(Event{
		Kind: EventDecision, Scope: p.scope, ApprovalID: p.id, Command: p.req.Command, Workdir: p.areq.Workdir,
		Decision: decision, DecidedBy: by, Reason: reason,
	})
}
