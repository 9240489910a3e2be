package bgexec

import (
	"fmt"
	"strings"
	"unicode"
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

// Retractor is an optional interface of a Notifier: when a poll reports an
// exit whose event was already delivered, the registry calls Retract so a
// queue can drop the event if the agent has not seen it yet.
type Retractor interface {
	Retract(scopeKey, text string)
}

const (
	snippetSource = 400
	snippetMax    = 180
)

// exitEventText is the system-event text of SPEC §8.
func exitEventText(id string, e *exitInfo, output string) string {
	label := "completed"
	if e.status() != StatusCompleted {
		label = "failed"
	}
	short := id
	if r := []rune(id); len(r) > 8 {
		short = string(r[:8])
	}
	var how string
	switch {
	case e.reason == ExitReasonTimeout:
		how = "timeout"
	case e.signal != "":
		how = "signal " + e.signal
	case e.code != nil:
		how = fmt.Sprintf("code %d", *e.code)
	default:
		how = string(e.reason)
	}
	text := fmt.Sprintf("Exec %s (%s, %s)", label, short, how)
	if snip := exitSnippet(output); snip != "" {
		text += " :: " + snip
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

// shouldNotifyLocked applies the skip rules of SPEC §8. s.mu must be held.
func (s *session) shouldNotifyLocked(st *settings) bool {
	if !st.notifyOnExit || st.notifier == nil || s.removed || s.exitReported || !s.ended {
		return false
	}
	quiet := s.out.totalChars == 0
	ok := s.exit.status() == StatusCompleted && s.exit.code != nil && *s.exit.code == 0
	return !(ok && quiet) || st.notifyEmpty
}

// noteJob is one unit of work for the notification goroutine: deliver the
// exit event of s, or retract an event already delivered. One FIFO keeps a
// retraction behind the delivery it cancels.
type noteJob struct {
	s       *session
	scope   string
	retract string
}

func (r *Registry) enqueueNote(j noteJob) {
	r.mu.Lock()
	if !r.closed {
		r.notes = append(r.notes, j)
	}
	r.mu.Unlock()
	kick(r.noteKick)
}

// deliverNotes is the registry's notification goroutine. On Close it
// still applies queued retractions but drops deliveries, and once Close
// stopped waiting for it (abandoned), it makes no call at all.
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
			j := r.notes[0]
			r.notes[0] = noteJob{} // the array must not keep the session reachable
			r.notes = r.notes[1:]
			stopping = stopping || r.closed
			rt, retracts := r.cfg.notifier.(Retractor)
			calling := (j.s == nil && retracts) || (j.s != nil && !stopping)
			r.noteCalling = calling
			r.mu.Unlock()
			switch {
			case !calling:
			case j.s == nil:
				rt.Retract(j.scope, j.retract)
			default:
				r.deliver(j.s)
			}
			if calling {
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

func (r *Registry) deliver(s *session) {
	s.mu.Lock()
	if !s.shouldNotifyLocked(&r.cfg) {
		s.mu.Unlock()
		return
	}
	text := exitEventText(s.id, &s.exit, s.out.agg.tail(snippetSource))
	s.notifiedText = text
	s.mu.Unlock()
	n := r.cfg.notifier
	n.SystemEvent(s.scope, text)
	if r.isClosed() {
		return // Close began during the event: no wake-up for a closing registry
	}
	n.Heartbeat(s.scope, heartbeatReason(s.id))
}

// retract withdraws a delivered event after a poll reported the same exit.
func (r *Registry) retract(scope, text string) {
	if text == "" {
		return
	}
	if _, ok := r.cfg.notifier.(Retractor); ok {
		r.enqueueNote(noteJob{scope: scope, retract: text})
	}
}
