package session

import (
	"context"
	"time"
)

// A screen, poll or wait that waits for quiet (idleMs) settles after the
// keys: quiet counts from the later of the call's start and the last input,
// and input that no output has followed yet is first given time to be
// answered. Without this a read right after send-keys finds the old screen
// quiet and returns it.

// noteInput records that input is about to be sent to the child: the agent's
// write, keys, submit or paste (the emulator's answers to queries are not
// input).
func (s *Session) noteInput() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inputAt, s.inputRaw, s.inputOpen = time.Now(), s.rawBytes, true
}

// unansweredLocked reports whether input was sent that no output has
// followed yet and no screen, poll or wait has read since.
func (s *Session) unansweredLocked() bool {
	return s.inputOpen && s.rawBytes == s.inputRaw
}

// settleLocked waits, with s.mu held, for the session's output to settle:
// first for output after unanswered input (and, with first, for the first
// output of a session that printed nothing yet), then, with idle > 0, until
// no output has arrived for idle counted from the later of from, the last
// input and the last output. It stops at the end, at until or when ctx
// ends, and reports whether the output settled. The input counts as read
// afterwards.
func (s *Session) settleLocked(ctx context.Context, from, until time.Time, idle time.Duration, first, reports bool) bool {
	defer func() { s.inputOpen = false }()
	if s.unansweredLocked() || (first && s.rawBytes == 0) {
		if !s.waitOutputLocked(ctx, until, reports) {
			return false // nothing came
		}
	}
	if idle <= 0 {
		return true
	}
	return s.waitQuietLocked(ctx, later(from, s.inputAt), until, idle, reports)
}

// waitOutputLocked waits, with s.mu held, until the child prints, the
// session ends, until passes or ctx ends, and reports false when it
// printed nothing and runs. A caller that will report the end (reports)
// counts as a waiter meanwhile.
func (s *Session) waitOutputLocked(ctx context.Context, until time.Time, reports bool) bool {
	if reports {
		s.waiters++
		defer func() { s.waiters-- }()
	}
	raw := s.rawBytes
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	for s.rawBytes == raw && !s.ended {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			s.mu.Lock()
			return false
		case <-ctx.Done():
			s.mu.Lock()
			return false
		}
		s.mu.Lock()
	}
	return true
}

// shownLocked consumes the pending output a screen has just shown: a poll
// or wait afterwards returns only what came after it, not the raw stream of
// what the agent has seen (the log keeps it).
func (s *Session) shownLocked() {
	s.out.drain() // the text is on the screen; what it lost does not matter
}

// totalLinesLocked is the number of log lines printed so far (an unfinished
// last line counts), the offset after the last one.
func (s *Session) totalLinesLocked() int64 {
	none := int64(0)
	return s.out.page(nil, &none, 0).TotalLines
}

// SnapshotLines is Snapshot(tail) with the number of log lines printed so
// far (an unfinished last line counts), read together: the tail's last line
// is log line lines-1, so a text that shows part of it can name the log
// offsets of the rest.
func (s *Session) SnapshotLines(tail int) (sn Snapshot, lines int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn = s.snapshotLocked()
	if tail > 0 {
		sn.Tail = s.out.agg.tail(tail)
	}
	return sn, s.totalLinesLocked()
}

// quietSinceLocked is how long no output has arrived, counted from from at
// the earliest.
func (s *Session) quietSinceLocked(from time.Time) time.Duration {
	return time.Since(later(s.lastOutput, from))
}

// NothingPrinted reports whether the child has printed nothing yet.
func (s *Session) NothingPrinted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rawBytes == 0
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
