package bgexec

import (
	"fmt"
	"time"

	"github.com/bgexec/bgexec/internal/session"
)

// inputState is what poll, log and list say about a running session's
// input: whether it may be waiting for some. The decision comes from what
// the process is doing (its foreground process blocked reading the
// session's stdin or terminal, see [session.Session.ReadingInput]), never
// from the shape of its output.
type inputState struct {
	writable   bool
	idle       time.Duration
	lastOutput time.Time
	waiting    bool
}

// inputStateOf looks at a running session. The kernel is asked only once
// the session has been quiet for the input-wait threshold.
func (sc *Scope) inputStateOf(s *session.Session) inputState {
	last := s.LastOutput()
	st := inputState{writable: s.Writable(), idle: max(time.Since(last), 0), lastOutput: last}
	if st.writable && st.idle >= sc.reg.cfg.inputWait {
		st.waiting = s.ReadingInput() == session.ReadingYes
	}
	return st
}

// details adds stdinWritable, waitingForInput, idleMs and lastOutputAt.
func (st inputState) details(d *Details) {
	d.StdinWritable = ptr(st.writable)
	d.WaitingForInput = ptr(st.waiting)
	d.IdleMs = ptr(st.idle.Milliseconds())
	d.LastOutputAt = ptr(st.lastOutput.UnixMilli())
}

// line is the input-wait line that replaces "Process still running.".
func (st inputState) line() string {
	return fmt.Sprintf("No new output for %ds; this session may be waiting for input. Use process write, send-keys, submit, or paste to provide input.", int64(st.idle/time.Second))
}

// listMarker is the list line's marker for a session waiting for input.
const listMarker = " [input-wait]"
