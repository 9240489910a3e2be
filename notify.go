package bgexec

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/bgexec/bgexec/internal/session"
)

// Notifier receives exit notifications of backgrounded sessions.
// The registry calls it from one goroutine of its own, never under a lock and
// never from a session's goroutines, so a slow Notifier delays only later
// notifications. Implementations must be safe for concurrent use with
// whatever else the runtime does with them.
//
// [Registry.Close] waits for a call in progress only until its context
// ends. A call that still blocks then is not waited for: its goroutine is
// left to finish on its own, and makes no Notifier call after it. Every
// other goroutine of the registry is waited for.
type Notifier interface {
	// SystemEvent enqueues a system event for that agent's next turn.
	SystemEvent(scopeKey, text string)
	// Heartbeat asks the runtime to wake that agent now.
	Heartbeat(scopeKey, reason string)
}

// Retractor is an optional interface of a Notifier: when a poll, wait or
// kill reports an exit whose event was already delivered, the registry
// calls Retract so a queue can drop the event if the agent has not seen it
// yet. Retract is called on the goroutine of the reporting call, before
// that call returns, so it must be safe for concurrent use and should not
// block.
type Retractor interface {
	// Retract withdraws the event with this text from the scope's queue,
	// if it is still there.
	Retract(scopeKey, text string)
}

const (
	snippetSource = 400
	snippetMax    = 180
)

// exitEventText is the system-event text of a session's end. It names the
// whole session id, which can be passed back to process as it is.
func exitEventText(id string, e *session.Exit, output string) string {
	label := "completed"
	if e.Status() != session.Completed {
		label = "failed"
	}
	var how string
	switch {
	case e.Reason == session.ReasonTimeout:
		how = "timeout"
	case e.Reason == session.ReasonOOM:
		how = "out of memory"
	case e.Signal != "":
		how = "signal " + e.Signal
	case e.Code != nil:
		how = fmt.Sprintf("code %d", *e.Code)
	default:
		how = string(e.Reason)
	}
	text := fmt.Sprintf("Exec %s (%s, %s)", label, id, how)
	if e.Reason == session.ReasonLost {
		text += ": " + e.Note
	}
	if snip := exitSnippet(output); snip != "" {
		text += " :: " + snip
	}
	if e.Reason == session.ReasonTimeout {
		text += "\n\n" + timeoutGuidance
	}
	return text
}

// exitSnippet is the last 400 characters of output with whitespace runs
// collapsed, trimmed, and cut to 179 characters plus "…" when longer than 180.
func exitSnippet(output string) string {
	r := []rune(output)
	if len(r) > snippetSource {
		r = r[len(r)-snippetSource:]
	}
	s := strings.Join(strings.FieldsFunc(string(r), unicode.IsSpace), " ")
	if r := []rune(s); len(r) > snippetMax {
		s = string(r[:snippetMax-1]) + "…"
	}
	return s
}

// heartbeatReason is the reason of the wake request for a session's exit.
func heartbeatReason(id string) string { return "exec:" + id + ":exit" }

// enqueueNote hands a session whose exit event may be due to the
// notification goroutine. Whether it is due is the session's decision,
// made when it ended; a poll may still take it over until it is sent.
func (r *Registry) enqueueNote(s *session.Session) {
	r.mu.Lock()
	if !r.closed {
		r.notes = append(r.notes, s)
	}
	r.mu.Unlock()
	kick(r.noteKick)
}

// deliverNotes is the registry's notification goroutine. On Close it drops
// what is queued, and once Close stopped waiting for it (abandoned), it
// makes no call at all.
func (r *Registry) deliverNotes() {
	for {
		var stopping bool
		select {
		case <-r.stop:
			stopping = true
		case <-r.noteKick:
		}
		for {
			r.mu.Lock()
			if len(r.notes) == 0 || r.notesAbandoned {
				r.mu.Unlock()
				break
			}
			s := r.notes[0]
			r.notes[0] = nil // the array must not keep the session reachable
			r.notes = r.notes[1:]
			stopping = stopping || r.closed
			r.noteCalling = !stopping
			r.mu.Unlock()
			if !stopping {
				r.deliver(s)
				r.mu.Lock()
				r.noteCalling = false
				r.mu.Unlock()
			}
		}
		if stopping {
			return
		}
	}
}

// deliver sends the exit event of s unless a call reported the end first.
func (r *Registry) deliver(s *session.Session) {
	if r.cfg.notifier == nil {
		return // exit notices in results only: the end stays due for them
	}
	sn, due := s.BeginEvent()
	if !due {
		return
	}
	text := exitEventText(s.ID(), &sn.Exit, sn.Tail)
	n := r.cfg.notifier
	n.SystemEvent(s.Scope(), text)
	if !r.isClosed() { // no wake-up for a closing registry
		n.Heartbeat(s.Scope(), heartbeatReason(s.ID()))
	}
	if s.EventSent(text) {
		// A poll reported the end while the event was being sent, and
		// could not wait: the retraction is made here.
		r.retract(s.Scope(), text)
	}
}

// retract withdraws a delivered event whose end a call reported; the call
// returns only after it, so a runtime that drains right after the call
// never sees the event.
func (r *Registry) retract(scope, text string) {
	if text == "" {
		return
	}
	if rt, ok := r.cfg.notifier.(Retractor); ok {
		rt.Retract(scope, text)
	}
}
