package bgexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
)

// ProcessRequest is the process tool's parameters. Field names and JSON
// names mirror the tool schema.
//
// A ProcessRequest is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type ProcessRequest struct {
	// Action is one of list, poll, log, write, send-keys, submit, paste,
	// kill, clear, remove, and the additions resize, wait, screen and
	// reset-shell (see [Scope.ResetShellState]).
	// Required and case-sensitive: "POLL" is an unknown action. An unknown
	// action fails with "Unknown action <action>. Expected one of: …",
	// before the check for a missing SessionID.
	Action string `json:"action"`
	// SessionID names the session; required for every action but list
	// and reset-shell.
	SessionID string `json:"sessionId,omitzero"`
	// Data is written to stdin (write).
	Data string `json:"data,omitzero"`
	// EOF closes stdin after Data (write); on a PTY it sends EOT (0x04).
	EOF bool `json:"eof,omitzero"`
	// Keys are key tokens (send-keys), e.g. "C-c", "Enter", "Up".
	Keys []string `json:"keys,omitzero"`
	// Hex are raw bytes as 1–2 hex digits each, optional 0x (send-keys).
	Hex []string `json:"hex,omitzero"`
	// Literal is sent as UTF-8 bytes before Hex and Keys (send-keys).
	Literal string `json:"literal,omitzero"`
	// Text is pasted (paste). An empty Text is refused only when nothing
	// would be sent, that is with Bracketed false; a bracketed paste of ""
	// sends the two markers.
	Text string `json:"text,omitzero"`
	// Bracketed wraps a paste in ESC[200~ … ESC[201~. Nil means true.
	Bracketed *bool `json:"bracketed,omitzero"`
	// Offset is the first line (0-based) to return (log). Nil means the
	// last Limit lines (the last DefaultLogLines, 200, when Limit is nil
	// too). A negative offset is 0; one past the end returns no lines. In JSON any number is
	// accepted and floored (see [ProcessRequest.UnmarshalJSON]).
	Offset *int `json:"offset,omitzero"`
	// Limit is the number of lines to return (log). Nil means to the end
	// (with Offset nil too, the last DefaultLogLines, 200); 0 or less
	// returns no lines. In JSON any number is accepted and floored.
	Limit *int `json:"limit,omitzero"`
	// Timeout is in milliseconds: how long poll waits for new output or the
	// exit (0 … 120000, default 0, or 5000 with IdleMs), how long wait
	// waits (default 30000, at most 600000), or how long screen waits for
	// IdleMs of quiet (default 5000). Numeric strings are accepted.
	Timeout *Number `json:"timeout,omitzero"`
	// Cols and Rows are the new terminal size for resize (1–1000 each).
	Cols int `json:"cols,omitzero"`
	Rows int `json:"rows,omitzero"`
	// Pattern is an RE2 regular expression matched against each output line (wait).
	Pattern string `json:"pattern,omitzero"`
	// Port is a TCP port on 127.0.0.1 or ::1 to wait for (wait).
	Port int `json:"port,omitzero"`
	// IdleMs is a quiet period in milliseconds (poll, wait, screen): poll
	// and wait return once new output has arrived and then none for IdleMs
	// (or at the exit or the timeout); screen first waits until no output
	// has arrived for IdleMs. Quiet counts from the later of the call's
	// start, the last input and the last output, after the answer to input
	// not yet answered. Nil or 0: no quiet wait. At most 600000. On a
	// pipe session with open stdin, poll also uses it (default 500) to say
	// that an unfinished last line may be a prompt.
	IdleMs *float64 `json:"idleMs,omitzero"`
	// Screen makes write, send-keys, submit and paste on a PTY session
	// answer with the settled screen after sending (as the screen action
	// with IdleMs and Timeout would), so one call is one step of a
	// terminal program. Default false.
	Screen bool `json:"screen,omitzero"`
	// Attributes makes a screen mark reverse-video, bold and underlined
	// runs in its text: ⟦r⟧…⟦/r⟧, ⟦b⟧…⟦/b⟧, ⟦u⟧…⟦/u⟧. Default false.
	Attributes bool `json:"attributes,omitzero"`
}

// Limits of process parameters.
const (
	// MaxPollTimeoutMs is the longest poll wait in milliseconds.
	MaxPollTimeoutMs = 120000
	// DefaultLogLines is how many trailing lines log returns without offset/limit.
	DefaultLogLines = 200
	// WriteBound is how long write, send-keys, submit and paste wait for the
	// child to take the bytes before reporting a partial write.
	WriteBound = 5 * time.Second
)

const actionList = "list, poll, log, write, send-keys, submit, paste, kill, clear, remove, resize, wait, screen, reset-shell"

// maxLineArg bounds a floored JSON offset or limit, far beyond any log.
const maxLineArg = 1 << 53

// UnmarshalJSON decodes the process tool's JSON arguments like the default
// decoder, except that offset and limit accept any JSON number and are
// floored (2.9 → 2, -0.5 → -1), since log never refuses a number. Like
// the default decoder it ignores unknown fields; [Scope.Call] refuses them
// by the schema first.
func (r *ProcessRequest) UnmarshalJSON(b []byte) error {
	type fields ProcessRequest // the same fields without this method
	w := struct {
		*fields
		// These shadow the embedded fields of the same JSON name.
		Offset *float64 `json:"offset"`
		Limit  *float64 `json:"limit"`
	}{fields: (*fields)(r)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Offset != nil {
		r.Offset = ptr(floorLineArg(*w.Offset))
	}
	if w.Limit != nil {
		r.Limit = ptr(floorLineArg(*w.Limit))
	}
	return nil
}

func floorLineArg(f float64) int {
	if math.IsNaN(f) {
		return 0
	}
	return int(clamp(math.Floor(f), -maxLineArg, maxLineArg))
}

// Process runs one process action (the process tool). A Go error means the
// call could not be made (nil request, registry closed, ctx ended before
// it started); tool-level failures are Results with status "failed". Poll
// and wait block at most their timeout (and Config.MaxCallWaitMs) and
// return early when ctx ends. With Config.ExitNoticesInResults the text
// starts with the scope's exit notices not yet shown. Process panics on a
// nil ctx. Safe for concurrent use.
func (sc *Scope) Process(ctx context.Context, req *ProcessRequest) (res *Result, err error) {
	defer func() {
		if res != nil && res.Details.Status == StatusFailed && res.Details.Error == "" {
			res.Details.Error = res.Text()
		}
		res = sc.withNotices(res)
		sc.giveBackIfCancelled(ctx, res)
	}()
	if err := sc.begin(ctx, "process", req == nil); err != nil {
		return nil, err
	}
	// Actions are matched exactly, and an unknown action is reported
	// before a missing sessionId, as the newest reference does.
	if req.Action == "list" {
		return sc.list(), nil
	}
	if req.Action == "reset-shell" {
		return sc.resetShell(ctx)
	}
	h, ok := processActions[req.Action]
	if !ok {
		return failure(fmt.Sprintf("Unknown action %s. Expected one of: %s", req.Action, actionList)), nil
	}
	id := strings.TrimSpace(req.SessionID)
	if id == "" {
		return failure("sessionId is required for this action."), nil
	}
	s, found, bg := sc.reg.lookup(sc.key, id)
	switch {
	case !found:
		return failure(h.notFound + id), nil
	case !bg:
		return failure("Session " + id + " is not backgrounded."), nil
	}
	if req.Action == "kill" || req.Action == "remove" || req.Action == "clear" {
		sc.observeControl(s, req.Action)
	}
	return h.run(sc, ctx, s, req)
}

type actionHandler struct {
	notFound string // the failure text for an unknown session, before its id
	run      func(sc *Scope, ctx context.Context, s *session.Session, req *ProcessRequest) (*Result, error)
}

// Failure texts for an unknown session, by what the action needs.
const (
	noSession         = "No session found for "
	noActiveSession   = "No active session found for "
	noFinishedSession = "No finished session found for "
)

var processActions = map[string]actionHandler{
	"poll":      {noSession, (*Scope).poll},
	"log":       {noSession, (*Scope).log},
	"write":     {noActiveSession, thenScreen((*Scope).write)},
	"send-keys": {noActiveSession, thenScreen((*Scope).sendKeys)},
	"submit":    {noActiveSession, thenScreen((*Scope).submit)},
	"paste":     {noActiveSession, thenScreen((*Scope).paste)},
	"kill":      {noActiveSession, (*Scope).kill},
	"clear":     {noFinishedSession, (*Scope).clearSession},
	"remove":    {noSession, (*Scope).remove},
	"resize":    {noActiveSession, (*Scope).resize},
	"wait":      {noSession, (*Scope).wait},
	"screen":    {noSession, (*Scope).screen},
}

// list answers the list action. The text has one line per session, newest
// first whatever its status, as the reference prints it; details.sessions
// lists the running sessions first, then the finished ones, newest first
// within each. Each session is looked at once.
func (sc *Scope) list() *Result {
	sessions := sc.reg.list(sc.key) // newest first
	lines := make([]string, 0, len(sessions))
	var running, finished []SessionInfo
	scan := newResourceScan()
	for _, l := range sessions {
		s, sn := l.s, &l.sn
		info := SessionInfo{
			SessionID: s.ID(), Status: statusOf(sn.Status), Pid: s.Pid(),
			StartedAt: s.StartedAt().UnixMilli(), RuntimeMs: sn.Runtime.Milliseconds(),
			Cwd: s.Cwd(), Command: s.Command(), Name: s.Name(),
			Tail: sn.Tail, Truncated: sn.Truncated, Title: s.Title(),
		}
		marks := ""
		switch {
		case sn.Ended && sn.Exit.Reason == session.ReasonTimeout:
			marks = " [timed out]"
		case !sn.Ended && sc.inputStateOf(s).waiting:
			marks = listMarker
		}
		line := fmt.Sprintf("%s %-9s %s%s :: %s", s.ID(), sn.Status, compactDuration(sn.Runtime), marks, s.Name())
		if !sn.Ended {
			info.Resources = scan.of(s)
			lines = append(lines, line+info.Resources.listSuffix())
			running = append(running, info)
			continue
		}
		lines = append(lines, line)
		info.EndedAt = sn.Exit.At.UnixMilli()
		info.ExitCode, info.ExitSignal = sn.Exit.Code, sn.Exit.Signal
		finished = append(finished, info)
	}
	text := "No running or recent sessions."
	if len(lines) > 0 {
		text = strings.Join(lines, "\n")
	}
	return textResult(text, Details{Status: StatusCompleted, Sessions: append(running, finished...)})
}

// exitLine is the poll/wait line about the process state.
func exitLine(sn *session.Snapshot) string {
	if !sn.Ended {
		return "Process still running."
	}
	return endLine(&sn.Exit)
}

// endLine is the poll, wait and log line about how a session ended. A
// timeout ends with the timeout guidance, a kill says it was requested.
func endLine(e *session.Exit) string {
	switch {
	case e.Reason == session.ReasonLost:
		return e.Note
	case e.Reason == session.ReasonTimeout:
		return "Process exited with timeout.\n\n" + timeoutGuidance
	case e.Reason == session.ReasonOOM:
		return "Process killed: out of memory" + strings.TrimPrefix(oomText(e.MemoryLimit), "Command killed: out of memory")
	case e.Reason == session.ReasonKilled && e.Signal != "":
		return "Process stopped by request (signal " + e.Signal + ")."
	case e.Reason == session.ReasonKilled && e.Code != nil:
		return fmt.Sprintf("Process stopped by request (it exited with code %d).", *e.Code)
	case e.Signal != "":
		return "Process exited with signal " + e.Signal + "."
	case e.Code != nil:
		return fmt.Sprintf("Process exited with code %d.", *e.Code)
	}
	return "Process exited (" + string(e.Reason) + ")."
}

func (sc *Scope) poll(ctx context.Context, s *session.Session, req *ProcessRequest) (*Result, error) {
	var wait time.Duration
	if req.Timeout != nil {
		ms := clamp(float64(*req.Timeout), 0, MaxPollTimeoutMs)
		if ms != ms { // NaN
			ms = 0
		}
		wait = capWait(time.Duration(ms*float64(time.Millisecond)), sc.reg.cfg.maxTimeout)
	}
	idle, bad := idleArg(req.IdleMs)
	if bad != nil {
		return bad, nil
	}
	if idle > 0 && req.Timeout == nil {
		wait = DefaultIdleTimeoutMs * time.Millisecond
	}
	asked := wait
	wait, capped := sc.reg.cfg.capWait(wait)
	dr := s.PollIdle(ctx, wait, idle)
	sc.reg.retract(sc.key, dr.Retract)
	sn := &dr.Snap
	d := Details{Status: statusOf(sn.Status), SessionID: s.ID(), Name: s.Name(), Aggregated: dr.Aggregated, Title: titleOf(s)}
	d.Stdout, d.Stderr = streamsOf(s)
	end := exitLine(sn)
	if sn.Ended {
		exitDetails(&d, &sn.Exit)
		end += closedPortsNote(s.Listeners())
	} else {
		d.RetryInMs = ptr(retryAfter(dr.EmptyPolls, dr.AfterOutput))
		d.Resources = sessionResources(s)
		in := sc.inputStateOf(s)
		in.details(&d)
		if in.waiting {
			end = in.line()
		}
	}
	body := strings.TrimRight(dr.Text, "\n")
	if body == "" {
		body = "(no new output)"
	}
	body = cutBody(body, &dr)
	if d.WaitingForInput != nil && !*d.WaitingForInput && waitingForInput(s, &dr, idle) {
		body += "\n" + waitingForInputNote
	}
	text := body + "\n\n" + end
	if capped && !sn.Ended && dr.Text == "" {
		text += "\n" + sc.reg.cfg.cappedNote("timeout", asked, "poll again to keep waiting.")
	}
	res := textResult(s.WithHint(text), d)
	sc.reg.noteSpill(res, s, dr.Loss != session.LostNothing)
	res.tookDrain(s, &dr)
	return res, nil
}

// retryAfter is the suggested poll delay after n consecutive empty polls:
// 5000 after a poll with output (n = 0), then 10000, 30000 and 60000 from
// then on. A session never polled with output starts at 5000 for its first
// empty poll (n = 1), as if a poll with output had come before it.
func retryAfter(n int, afterOutput bool) int64 {
	steps := []int64{5000, 10000, 30000, 60000}
	if !afterOutput {
		n = max(n-1, 0)
	}
	return steps[min(n, len(steps)-1)]
}

// log answers the log action. Line numbers count from the first line the
// session ever printed: when the retention cap dropped older lines, offsets
// still name the same lines, details.firstLine is the oldest kept, and the
// text says which lines are gone. Only the selected lines are copied.
func (sc *Scope) log(_ context.Context, s *session.Session, req *ProcessRequest) (*Result, error) {
	var offset, limit *int64
	if req.Offset != nil {
		offset = ptr(int64(*req.Offset))
	}
	if req.Limit != nil {
		limit = ptr(int64(*req.Limit))
	}
	p, sn := s.Page(offset, limit, DefaultLogLines)
	d := Details{
		Status: statusOf(sn.Status), SessionID: s.ID(), Name: s.Name(),
		TotalLines: ptr(int(p.TotalLines)), TotalChars: ptr(p.RetainedChars), Truncated: ptr(p.Truncated),
	}
	if p.Truncated {
		d.FirstLine = ptr(p.FirstLine)
	}
	if sn.Ended {
		exitDetails(&d, &sn.Exit)
	}
	var text string
	switch {
	case p.TotalLines == 0 && !sn.Ended:
		text = "(no output yet)"
	case len(p.Lines) == 0:
		// Nothing printed, or a window with no lines in it (limit <= 0, an
		// offset past the end): the reference's text for both.
		text = "(no output recorded)"
	default:
		text = strings.Join(p.Lines, "\n")
		if offset == nil && limit == nil && p.TotalLines-p.FirstLine > DefaultLogLines {
			text += fmt.Sprintf("\n\n[showing last %d of %d lines; pass offset/limit to page]", DefaultLogLines, p.TotalLines)
		}
	}
	if p.Truncated {
		text = discardNotice + "\n\n" + logDropNotice(p.FirstLine) + "\n" + text
	}
	if sn.Ended && (sn.Exit.Reason == session.ReasonTimeout || sn.Exit.Reason == session.ReasonKilled) {
		// What the model must know about such an end, even when it reads
		// only the log: a timeout's side effects, a kill's request.
		text += "\n\n" + endLine(&sn.Exit)
	}
	if !sn.Ended {
		in := sc.inputStateOf(s)
		in.details(&d)
		if in.waiting {
			text += "\n\n" + in.line()
		}
	}
	res := textResult(text, d)
	sc.reg.noteSpill(res, s, p.Truncated)
	return res, nil
}

// titleOf is a session's title for details.title, nil when it has none.
func titleOf(s *session.Session) *string {
	if t := s.Title(); t != "" {
		return &t
	}
	return nil
}

// inputCheck checks that s can take input and returns the failure if not.
func inputCheck(s *session.Session) *Result {
	if s.Snapshot(0).Ended {
		return failure("No active session found for " + s.ID())
	}
	if !s.Writable() {
		return failure("Session " + s.ID() + " stdin is not writable.")
	}
	return nil
}

// deliver writes p within the write bound (and ctx's deadline); short
// writes become a failure that says how much arrived. A call whose ctx
// ends while another write holds the input writes nothing and says so.
func (sc *Scope) deliver(ctx context.Context, s *session.Session, action string, p []byte) (int, *Result) {
	if r := sc.observeInput(ctx, s, action, p); r != nil {
		return 0, r
	}
	bound := WriteBound
	if dl, ok := ctx.Deadline(); ok {
		bound = max(min(bound, time.Until(dl)), time.Millisecond)
	}
	n, err := s.Write(ctx, p, bound)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, session.ErrStdinClosed):
		return n, failure("Session " + s.ID() + " stdin is not writable.")
	case errors.Is(err, session.ErrInputBusy):
		return 0, inputBusy(s)
	default:
		r := textResult(fmt.Sprintf("Wrote %d of %d bytes to session %s; the rest was not taken within %s (%v). The command may not be reading its input.", n, len(p), s.ID(), bound.Round(time.Millisecond), err),
			Details{Status: StatusFailed, SessionID: s.ID()})
		r.IsError = true
		return n, r
	}
}

// inputBusy is the failure of an input call that gave up waiting behind
// another write when its context ended.
func inputBusy(s *session.Session) *Result {
	return failure("Nothing was written to session " + s.ID() + ": another write to it was still in progress when this call's deadline came. Retry once it has finished.")
}

func (sc *Scope) write(ctx context.Context, s *session.Session, req *ProcessRequest) (*Result, error) {
	if r := inputCheck(s); r != nil {
		return r, nil
	}
	n, r := sc.deliver(ctx, s, "write", []byte(req.Data))
	if r != nil {
		return r, nil
	}
	var note string
	if s.PTY() && canonicalMode(s.TTYName()) {
		if kept := canonicalKept([]byte(req.Data)); kept < n {
			note = fmt.Sprintf(" The terminal is in canonical (line) mode, which keeps at most %d bytes per line: the kernel dropped %d bytes of over-long lines. Send shorter lines, or use a program that switches the terminal to raw mode.", maxCanonLine, n-kept)
			n = kept
		}
	}
	closed := ""
	if req.EOF {
		unfinished := req.Data != "" && !strings.HasSuffix(req.Data, "\n") && !strings.HasSuffix(req.Data, "\r")
		if r := sc.observeInput(ctx, s, "eof", nil); r != nil {
			return r, nil
		}
		if err := s.CloseInput(ctx, unfinished); err != nil {
			if errors.Is(err, session.ErrInputBusy) {
				if req.Data == "" {
					return inputBusy(s), nil
				}
				return failure(fmt.Sprintf("Wrote %d bytes to session %s, but stdin was not closed: another write to it was still in progress when this call's deadline came. Retry the eof once it has finished.", n, s.ID())), nil
			}
			return failure("Session " + s.ID() + " stdin is not writable."), nil
		}
		closed = " (stdin closed)"
	}
	text := fmt.Sprintf("Wrote %d bytes to session %s%s.", n, s.ID(), closed) + note
	return textResult(text, Details{Status: StatusRunning, SessionID: s.ID()}), nil
}

func (sc *Scope) submit(ctx context.Context, s *session.Session, _ *ProcessRequest) (*Result, error) {
	if r := inputCheck(s); r != nil {
		return r, nil
	}
	if _, r := sc.deliver(ctx, s, "submit", []byte("\r")); r != nil {
		return r, nil
	}
	return textResult(fmt.Sprintf("Submitted session %s (sent CR).", s.ID()), Details{Status: StatusRunning, SessionID: s.ID()}), nil
}

func (sc *Scope) paste(ctx context.Context, s *session.Session, req *ProcessRequest) (*Result, error) {
	// Only an empty payload is refused: a bracketed paste of "" still sends
	// the two markers, as the reference does.
	data := req.Text
	if req.Bracketed == nil || *req.Bracketed {
		data = "\x1b[200~" + data + "\x1b[201~"
	}
	if data == "" {
		return failure("No paste text provided."), nil
	}
	if r := inputCheck(s); r != nil {
		return r, nil
	}
	if _, r := sc.deliver(ctx, s, "paste", []byte(data)); r != nil {
		return r, nil
	}
	return textResult(fmt.Sprintf("Pasted %d chars to session %s.", utf8.RuneCountInString(req.Text), s.ID()), Details{Status: StatusRunning, SessionID: s.ID()}), nil
}

// kill is the agent's kill: its result reports the end, so no exit event
// is sent for it, and an event already sent is retracted.
func (sc *Scope) kill(ctx context.Context, s *session.Session, _ *ProcessRequest) (*Result, error) {
	// Without a cgroup, processes that left the process group survive the
	// kill; remember the session's descendants to say so.
	var escaped func() string
	var listErr error
	if w, ok := s.Process().(host.EscapeWatcher); ok {
		escaped, listErr = w.WatchEscapes()
	}
	refreshResources(s) // notes its listening ports for the result
	if !s.Kill() {
		return failure("No active session found for " + s.ID()), nil
	}
	// Bounded by the grace period, the drain timeout (an escaper may hold the
	// pipe) and a second for the kernel.
	t := time.NewTimer(sc.reg.cfg.killGrace + sc.reg.cfg.drainTimeout + time.Second)
	defer t.Stop()
	select {
	case <-s.Done():
		sn := s.Snapshot(0)
		d := Details{Status: statusOf(sn.Status), SessionID: s.ID(), Name: s.Name()}
		exitDetails(&d, &sn.Exit)
		if sn.Exit.Leftover != nil {
			// The shell ended, but what it left could not be seen gone.
			return textResult("Termination requested for session "+s.ID()+".\n"+leftoverWarning(sn.Exit.Leftover, inCgroup(s)), d), nil
		}
		text := "Killed session " + s.ID() + "." + closedPortsNote(s.Listeners())
		if listErr != nil {
			text += "\nWarning: could not list the session's processes before the kill (" + listErr.Error() + "); a process that left the process group may have escaped."
		}
		if escaped != nil {
			if w := escaped(); w != "" {
				text += "\n" + w
			}
		}
		return textResult(text, d), nil
	case <-t.C:
	case <-ctx.Done():
	}
	return textResult("Termination requested for session "+s.ID()+".", Details{Status: StatusRunning, SessionID: s.ID(), Name: s.Name()}), nil
}

// leftoverWarning is the warning line for a session whose end could not be
// confirmed.
// inCgroup reports whether the session runs in a cgroup of its own.
func inCgroup(s *session.Session) bool {
	c, ok := s.Process().(host.Container)
	return ok && c.InCgroup()
}

func leftoverWarning(err error, cgroup bool) string {
	w := "Warning: the end of every process of the session could not be confirmed (" + strings.ReplaceAll(err.Error(), "\n", "; ") + "); some may still run"
	if cgroup {
		return w + ". Its cgroup is not reused, and is killed again until it is empty."
	}
	return w + "."
}

func (sc *Scope) clearSession(_ context.Context, s *session.Session, _ *ProcessRequest) (*Result, error) {
	if !s.Snapshot(0).Ended {
		return failure("No finished session found for " + s.ID()), nil
	}
	sc.reg.forget(s)
	return textResult("Cleared session "+s.ID()+".", Details{Status: StatusCompleted, SessionID: s.ID()}), nil
}

func (sc *Scope) remove(_ context.Context, s *session.Session, _ *ProcessRequest) (*Result, error) {
	// A running session is forgotten at once (lookups skip removed
	// sessions) and killed without an exit event; its owner drops it from
	// the registry when the kill completes.
	if !s.Remove() {
		sc.reg.forget(s)
	}
	s.RemoveSpill() // now, not when the kill completes
	return textResult("Removed session "+s.ID()+".", Details{Status: StatusCompleted, SessionID: s.ID()}), nil
}
