package bgexec

import (
	"context"
	"fmt"
	"time"

	"github.com/bgexec/bgexec/internal/session"
)

// Limits of the quiet waits (idleMs) of poll, wait and screen.
const (
	// DefaultIdleTimeoutMs bounds a screen's quiet wait, and a poll's when
	// the poll has no timeout, in milliseconds.
	DefaultIdleTimeoutMs = 5000
	// MaxIdleMs is the longest quiet period idleMs may ask for, in ms.
	MaxIdleMs = 600000
	// DefaultPromptIdleMs is how long a pipe session must have been quiet
	// after an unfinished line for poll to say it may be waiting for
	// input, when the poll passes no idleMs.
	DefaultPromptIdleMs = 500
)

// waitingForInputNote follows a poll's output when the program seems to
// wait at a prompt.
const waitingForInputNote = "(waiting for input?)"

// idleArg converts idleMs; a bad value is a failure result.
func idleArg(n *float64) (time.Duration, *Result) {
	if n == nil {
		return 0, nil
	}
	ms := float64(*n)
	if ms != ms || ms < 0 || ms > MaxIdleMs {
		return 0, failure(fmt.Sprintf("Invalid idleMs: pass milliseconds from 0 to %d.", MaxIdleMs))
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// waitingForInput reports whether a poll should say the program may be
// waiting for input: a running pipe session whose stdin is open, whose
// output ends in an unfinished line (or which printed nothing: bash's
// read -p shows its prompt only on a terminal), quiet for idle (or
// DefaultPromptIdleMs) since, and whose process is blocked reading its
// stdin. The output's shape alone never decides: a line of progress dots
// is not a prompt.
func waitingForInput(s *session.Session, dr *session.Drained, idle time.Duration) bool {
	if s.PTY() || dr.Snap.Ended || !(dr.PartialLine || dr.Snap.TotalChars == 0) {
		return false
	}
	if idle <= 0 {
		idle = DefaultPromptIdleMs * time.Millisecond
	}
	return dr.Quiet >= idle && s.Writable() && s.ReadingInput() == session.ReadingYes
}

// screen answers the screen action: the terminal's current screen as text.
func (sc *Scope) screen(ctx context.Context, s *session.Session, req *ProcessRequest) (*Result, error) {
	idle, bad := idleArg(req.IdleMs)
	if bad != nil {
		return bad, nil
	}
	bound := time.Duration(DefaultIdleTimeoutMs) * time.Millisecond
	if req.Timeout != nil {
		ms := float64(*req.Timeout)
		if ms != ms || ms < 0 || ms > MaxWaitTimeoutMs {
			return failure(fmt.Sprintf("Invalid timeout: pass milliseconds from 0 to %d.", MaxWaitTimeoutMs)), nil
		}
		bound = time.Duration(ms * float64(time.Millisecond))
	}
	// A host's per-call limit bounds the quiet wait too; the screen is
	// shown as it is then.
	asked := bound
	bound, capped := sc.reg.cfg.capWait(bound)
	scr, sn, quiet, ok := s.Screen(ctx, idle, bound, req.Attributes)
	if !ok {
		return failure("Session " + s.ID() + " has no terminal; use poll or log."), nil
	}
	d := Details{
		Status: statusOf(sn.Status), SessionID: s.ID(), Name: s.Name(),
		Cols: scr.Cols, Rows: scr.Rows, CursorRow: scr.CursorRow, CursorCol: scr.CursorCol,
		AlternateScreen: ptr(scr.AlternateScreen), Title: ptr(scr.Title),
	}
	if sn.Ended {
		exitDetails(&d, &sn.Exit)
	}
	text := scr.Text
	if req.Attributes {
		text = scr.Marked
	}
	switch {
	case text != "":
	case s.NothingPrinted():
		text = fmt.Sprintf("(blank screen: no output yet after %d ms)", sn.Runtime.Milliseconds())
	default:
		text = "(blank screen)"
	}
	text += "\n" + cursorLine(&scr)
	if capped && !quiet && !sn.Ended && ctx.Err() == nil {
		// The output had not settled when the cap ended the quiet wait.
		text += "\n\n" + sc.reg.cfg.cappedNote("timeout", asked, "call screen again to keep waiting for quiet.")
	}
	return textResult(text, d), nil
}

// thenScreen wraps an input action: with screen: true it answers with the
// action's confirmation line, then the settled screen, so a step of a
// terminal program is one call. A session without a terminal is refused
// before anything is sent.
func thenScreen(send func(*Scope, context.Context, *session.Session, *ProcessRequest) (*Result, error)) func(*Scope, context.Context, *session.Session, *ProcessRequest) (*Result, error) {
	return func(sc *Scope, ctx context.Context, s *session.Session, req *ProcessRequest) (*Result, error) {
		if !req.Screen {
			return send(sc, ctx, s, req)
		}
		if !s.PTY() {
			return failure("Session " + s.ID() + " has no terminal, so screen: true does not apply; send without it, then poll."), nil
		}
		if _, bad := idleArg(req.IdleMs); bad != nil {
			return bad, nil // refused before anything is sent
		}
		sent, err := send(sc, ctx, s, req)
		if err != nil || sent.IsError {
			return sent, err
		}
		scr, err := sc.screen(ctx, s, req)
		if err != nil || scr.IsError {
			return sent, err
		}
		return textResult(sent.Text()+"\n\n"+scr.Text(), scr.Details), nil
	}
}

// cursorLine is the last line of every screen's text: where the cursor is
// (row and column, 1-based) and whether the alternate screen is on.
func cursorLine(scr *session.Screen) string {
	alt := "off"
	if scr.AlternateScreen {
		alt = "on"
	}
	return fmt.Sprintf("[cursor row %d col %d; alternate screen %s]", scr.CursorRow, scr.CursorCol, alt)
}
