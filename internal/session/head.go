package session

import (
	"bytes"
	"unicode/utf8"
)

// HeadLines bounds the head buffer in lines: it stops after this many.
const HeadLines = 50

// headBuf keeps the first part of a session's output (at most limit code
// points and HeadLines lines), so that output cut at the retention cap
// can still be shown with its beginning. Its limit is taken out of the
// retention cap: the aggregate keeps MaxChars minus it.
type headBuf struct {
	text  []byte
	runes int
	lines int
	limit int
	full  bool
}

func (h *headBuf) append(p []byte, n int) {
	if h.full || h.limit == 0 {
		return
	}
	k := min(n, h.limit-h.runes)
	cut := runeStart(p, n, k)
	if i := nthNewline(p[:cut], HeadLines-h.lines); i >= 0 {
		cut, k = i+1, utf8.RuneCount(p[:i+1])
	}
	h.lines += bytes.Count(p[:cut], nl)
	h.text = append(h.text, p[:cut]...)
	h.runes += k
	h.full = h.runes >= h.limit || h.lines >= HeadLines || k < n
}

// nthNewline returns the index of the n-th (1-based) '\n' in p, or -1.
func nthNewline(p []byte, n int) int {
	off := 0
	for ; n > 0; n-- {
		i := bytes.IndexByte(p[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off - 1
}

// Gap describes output a head-and-tail text left out, between its head
// and its tail: code points [From, To) of the whole output, on lines
// FromLine … ToLine (absolute log line numbers). Those from LogLine on are
// still retained (log offset=LogLine reads them); those before were
// dropped at the retention cap.
type Gap struct {
	From, To         int64
	FromLine, ToLine int64
	Chars            int64
	LostForGood      bool  // some of it is no longer retained
	Retained         bool  // some of it is still retained
	LogLine          int64 // the first retained line of the gap
}

// HeadTail is a text cut to its first and last parts.
type HeadTail struct {
	Head, Tail string
	Gap        *Gap // nil: nothing was left out, Tail is the whole text
}

// lineAt returns the log line number of position p (absolute code point),
// when p is retained in the ring or held by the head buffer.
func (o *output) lineAt(p int64) int64 {
	r := &o.agg
	if p >= r.dropped {
		off := r.offsetOf(int(p - r.dropped))
		return r.droppedNewlines + int64(r.countNewlines(0, off))
	}
	if p <= int64(o.head.runes) {
		i := runeStart(o.head.text, o.head.runes, int(p))
		return int64(bytes.Count(o.head.text[:i], nl))
	}
	return r.droppedNewlines
}

// headTail returns the output from position from on, cut to a head and a
// tail of together at most budget code points when it is longer. The head
// is the first part of that window (at most the head buffer's size and
// HeadLines lines), read from the ring, or from the head buffer when the
// ring no longer has it; the tail is the window's end. Without a head
// buffer (head-and-tail off) it returns the tail only.
func (o *output) headTail(from int64, budget int) HeadTail {
	r := &o.agg
	total := o.totalChars
	from = min(max(from, 0), total)
	if from >= r.dropped && total-from <= int64(budget) {
		return HeadTail{Tail: r.stringFrom(r.offsetOf(int(from - r.dropped)))}
	}
	var head string
	var headRunes int
	switch {
	case o.head.limit == 0:
	case from >= r.dropped:
		// The window is retained: its head comes from the ring.
		k := int(from - r.dropped)
		end := min(r.runes, k+o.head.limit)
		h := headBuf{limit: o.head.limit}
		h.append([]byte(r.slice(r.offsetOf(k), r.offsetOf(end))), end-k)
		head, headRunes = string(h.text), h.runes
	case from < int64(o.head.runes):
		i := runeStart(o.head.text, o.head.runes, int(from))
		head, headRunes = string(o.head.text[i:]), o.head.runes-int(from)
	}
	tailRunes := min(max(budget-headRunes, 0), r.runes)
	gs, ge := from+int64(headRunes), total-int64(tailRunes)
	if ge <= gs {
		return HeadTail{Tail: r.stringFrom(r.offsetOf(int(from - r.dropped)))}
	}
	g := &Gap{From: gs, To: ge, Chars: ge - gs, LostForGood: gs < r.dropped, Retained: ge > r.dropped}
	g.FromLine, g.ToLine = o.lineAt(gs), o.lineAt(ge)
	if ge < total && g.ToLine > g.FromLine && o.lineStartsAt(ge) {
		g.ToLine-- // the tail starts a line: that one is shown
	}
	g.LogLine = o.lineAt(max(gs, r.dropped))
	return HeadTail{Head: head, Tail: r.tail(tailRunes), Gap: g}
}

// lineStartsAt reports whether the retained position p starts a line.
func (o *output) lineStartsAt(p int64) bool {
	r := &o.agg
	if p < r.dropped {
		return false
	}
	// The ring's start is taken for a line start: the tail then shows
	// its first line, whole or in part.
	off := r.offsetOf(int(p - r.dropped))
	return off == 0 || r.byteAt(off-1) == '\n'
}

// HeadTail returns the retained output cut to its head and tail within
// budget code points (see the head buffer; Options.HeadChars).
func (s *Session) HeadTail(budget int) (HeadTail, Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.headTail(0, budget), s.snapshotLocked()
}

// cutLocked is a lossy drain's window as head and tail, when there is a
// head buffer.
func (o *output) cutLocked(loss Loss) *HeadTail {
	if loss == LostNothing || o.head.limit == 0 {
		return nil
	}
	ht := o.headTail(o.drainedFrom, o.pending.limit)
	return &ht
}

// HeadChars is the head buffer's size (Options.HeadChars, bounded).
func (s *Session) HeadChars() int { return s.out.head.limit }
