package session

import (
	"context"
	"time"
)

// waitQuietLocked waits, with s.mu held, until no output has arrived for
// idle (counted from from at the earliest), the session ends, until passes or ctx ends, and reports whether the
// output went quiet. It sleeps until the moment the output would be quiet
// and looks again only then, so a busy child costs it no wakeups. A caller
// that will report the end (reports) counts as a waiter meanwhile, so that
// end is never also sent as an event.
func (s *Session) waitQuietLocked(ctx context.Context, from, until time.Time, idle time.Duration, reports bool) bool {
	if reports {
		s.waiters++
		defer func() { s.waiters-- }()
	}
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		now := time.Now()
		quietAt := later(s.lastOutput, from).Add(idle)
		switch {
		case !now.Before(quietAt):
			return true
		case s.ended || !now.Before(until):
			return false
		}
		wake := min(quietAt.Sub(now), until.Sub(now))
		if t == nil {
			t = time.NewTimer(wake)
		} else {
			t.Reset(wake)
		}
		s.mu.Unlock()
		select {
		case <-t.C:
		case <-s.done:
		case <-ctx.Done():
			s.mu.Lock()
			return false
		}
		s.mu.Lock()
	}
}

// quietLocked is how long no output has arrived.
func (s *Session) quietLocked() time.Duration { return time.Since(s.lastOutput) }

// partialLineLocked reports whether the output ends in an unfinished line.
func (s *Session) partialLineLocked() bool {
	r := &s.out.agg
	return r.size > 0 && r.byteAt(r.size-1) != '\n'
}
