package session

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"time"
)

// lineWaiter matches a pattern against each output line, including lines
// that arrive split across reads and the unfinished last line.
type lineWaiter struct {
	re      *regexp.Regexp
	partial []byte
	matched string
	hit     bool
}

func (w *lineWaiter) feed(text []byte) {
	for len(text) > 0 && !w.hit {
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			w.partial = append(w.partial, text...)
			if over := len(w.partial) - maxPartialLine; over > 0 {
				w.partial = append(w.partial[:0], w.partial[over:]...)
			}
			w.test(w.partial)
			return
		}
		w.partial = append(w.partial, text[:i]...)
		w.test(w.partial)
		w.partial = w.partial[:0]
		text = text[i+1:]
	}
}

func (w *lineWaiter) test(line []byte) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if w.re.Match(line) {
		w.hit, w.matched = true, string(line)
	}
}

// WaitSpec is what Wait waits for. With neither Pattern nor Probe it waits
// for the end.
type WaitSpec struct {
	Pattern *regexp.Regexp
	// Probe reports whether the condition holds; it is called outside the
	// lock, at once and then every ProbeEvery.
	Probe      func(ctx context.Context) bool
	ProbeEvery time.Duration
	Timeout    time.Duration
	// Idle, when positive, also ends the wait once new output has arrived
	// and then none for Idle.
	Idle time.Duration
}

// Conditions a Wait ends on.
const (
	CondPattern = "pattern"
	CondPort    = "port"
	CondExit    = "exit"
	CondIdle    = "idle"
	CondTimeout = "timeout"
)

// Waited is the outcome of a Wait.
type Waited struct {
	Condition string
	Matched   string // the matching line
	// Lines is the number of log lines printed when the output was
	// drained: the log offset just after Text.
	Lines int64
	Drained
}

// Wait blocks until the spec holds, the session ends, the timeout passes
// or ctx ends, then drains the pending output. A pattern sees the output
// the agent has not read yet too, so a line split around an earlier poll
// still matches whole. A wait that returns the end takes over its report.
func (s *Session) Wait(ctx context.Context, spec WaitSpec) Waited {
	deadline := time.NewTimer(spec.Timeout)
	defer deadline.Stop()
	var probe <-chan time.Time
	if spec.Probe != nil {
		t := time.NewTicker(spec.ProbeEvery)
		defer t.Stop()
		probe = t.C
	}
	s.mu.Lock()
	var lw *lineWaiter
	if spec.Pattern != nil {
		lw = s.addLineWaiterLocked(spec.Pattern)
	}
	s.waiters++
	iw := s.newIdleWatchLocked(spec.Idle)
	defer iw.stop()
	cond := ""
	for cond == "" {
		if cond = s.heldLocked(lw, iw); cond != "" {
			break
		}
		ch := s.changed
		s.mu.Unlock()
		if spec.Probe != nil && spec.Probe(ctx) {
			s.mu.Lock()
			cond = CondPort
			break
		}
		select {
		case <-ch:
		case <-probe:
		case <-iw.c:
		case <-deadline.C:
			cond = CondTimeout
		case <-ctx.Done():
			cond = CondTimeout
		}
		s.mu.Lock()
		if cond == CondTimeout && s.ended {
			cond = CondExit
		}
	}
	w := s.endWaitLocked(lw, cond)
	s.mu.Unlock()
	if w.Snap.Ended {
		w.Retract = s.takeReport(ctx)
		w.reported = true
	}
	return w
}

// addLineWaiterLocked registers a waiter for a line matching re, fed the
// text the agent has not read yet (the partial line and the pending
// output), so a line split around an earlier poll still matches whole.
func (s *Session) addLineWaiterLocked(re *regexp.Regexp) *lineWaiter {
	lw := &lineWaiter{re: re}
	lw.feed(s.out.linePrefix)
	for _, c := range s.out.pending.chunks {
		lw.feed(c.text)
	}
	s.lineWaiters = append(s.lineWaiters, lw)
	return lw
}

// heldLocked returns the condition that holds now, in the order a wait
// reports them (a pattern, the end, quiet output), or "".
func (s *Session) heldLocked(lw *lineWaiter, iw *idleWatch) string {
	switch {
	case lw != nil && lw.hit:
		return CondPattern
	case s.ended:
		return CondExit
	case iw.quietLocked(s):
		return CondIdle
	}
	return ""
}

// endWaitLocked ends a wait that saw cond: it unregisters the wait and its
// line waiter and drains the pending output.
func (s *Session) endWaitLocked(lw *lineWaiter, cond string) Waited {
	s.waiters--
	s.inputOpen = false // read
	if lw != nil {
		if i := slices.Index(s.lineWaiters, lw); i >= 0 {
			s.lineWaiters = slices.Delete(s.lineWaiters, i, i+1) // zeroes the freed slot
		}
	}
	w := Waited{Condition: cond, Drained: s.drainLocked(), Lines: s.totalLinesLocked()}
	if lw != nil {
		w.Matched = lw.matched
	}
	return w
}

// idleWatch is a wait's idle condition: its timer is armed for the moment
// the output would be quiet, and rearmed when more arrived meanwhile. The
// zero idle (no idle condition) has no timer and never holds.
type idleWatch struct {
	idle       time.Duration
	timer      *time.Timer
	c          <-chan time.Time // the timer's channel; nil without one
	rawAtStart int64            // the session's raw bytes when the wait began
	start      time.Time
}

// newIdleWatchLocked starts the idle condition of a wait for idle (0:
// none).
func (s *Session) newIdleWatchLocked(idle time.Duration) *idleWatch {
	iw := &idleWatch{idle: idle, rawAtStart: s.rawBytes, start: time.Now()}
	if idle > 0 {
		iw.timer = time.NewTimer(idle)
		iw.c = iw.timer.C
	}
	return iw
}

// stop stops the timer.
func (iw *idleWatch) stop() {
	if iw.timer != nil {
		iw.timer.Stop()
	}
}

// quietLocked reports whether the output has been quiet for the idle
// time; when not yet, it rearms the timer for the rest.
func (iw *idleWatch) quietLocked(s *Session) bool {
	if iw.timer == nil || (s.rawBytes == iw.rawAtStart && s.out.pending.empty()) || s.unansweredLocked() {
		return false // nothing new yet: the next output wakes us
	}
	// Quiet counts from the call's start and the last input too.
	left := iw.idle - s.quietSinceLocked(later(iw.start, s.inputAt))
	if left <= 0 {
		return true
	}
	iw.timer.Reset(left)
	return false
}
