package session

import (
	"bytes"
	"strings"
)

// StreamID names a session's output stream.
type StreamID uint8

// The output streams. A PTY session has only Stdout.
const (
	Stdout StreamID = iota
	Stderr
)

type streamID = StreamID

// maxPartialLine bounds the unfinished last line kept for pattern waiters.
const maxPartialLine = 64 << 10

// Loss says what a drain lost since the previous one.
type Loss uint8

// Losses reported by a drain.
const (
	LostNothing Loss = iota
	// LostFromPoll: output was dropped from the pending buffer at its cap,
	// but all of it is still retained (log shows it).
	LostFromPoll
	// LostForGood: some of the dropped output is no longer retained either.
	LostForGood
)

// output is a session's captured output: the retained text (the
// aggregate) and the pending buffers of what the next drain returns. The
// session's mutex guards it.
type output struct {
	agg        runeRing
	pending    pendingBuf
	totalChars int64
	// linePrefix is the unfinished last line at the latest drain, so a
	// pattern waiter sees lines split around a poll whole; prefixAt is the
	// output count it was taken at.
	linePrefix []byte
	prefixAt   int64

	// head is the first part of the output (head-and-tail texts; its
	// limit is 0 without them); split, when set, keeps each stream's own
	// retained text. drainedFrom and drainedTo are the window the latest
	// drain returned (code point positions).
	head                   headBuf
	split                  *[2]runeRing
	drainedFrom, drainedTo int64
}

func newOutput(maxChars, pendingChars int) output {
	return newOutputWith(maxChars, pendingChars, 0, false)
}

// newOutputWith makes the buffers; headChars of maxChars go to the head
// buffer, and split keeps each stream's text apart too.
func newOutputWith(maxChars, pendingChars, headChars int, split bool) output {
	headChars = min(max(headChars, 0), maxChars/2)
	o := output{
		agg:     runeRing{limit: maxChars - headChars},
		pending: pendingBuf{limit: pendingChars},
		head:    headBuf{limit: headChars},
	}
	if split {
		o.split = &[2]runeRing{{limit: maxChars}, {limit: maxChars}}
	}
	return o
}

// add appends cleaned text (valid UTF-8 of n code points) from stream s.
func (o *output) add(s streamID, text []byte, n int) {
	o.addLines(s, text, n, bytes.Count(text, nl))
}

// addLines is add for text whose LFs the caller has counted.
func (o *output) addLines(s streamID, text []byte, n, newlines int) {
	if n == 0 {
		return
	}
	at := o.totalChars
	o.totalChars += int64(n)
	o.agg.appendLines(text, n, newlines)
	o.pending.append(s, text, n, at)
	o.head.append(text, n)
	if o.split != nil {
		o.split[s].appendLines(text, n, newlines)
	}
}

// drain returns the pending output, what was lost from it, and remembers
// the unfinished line.
func (o *output) drain() (string, Loss) {
	if o.prefixAt != o.totalChars {
		o.linePrefix = o.agg.lastLine(o.linePrefix[:0], maxPartialLine)
		o.prefixAt = o.totalChars
	}
	text, lostAt := o.pending.drain()
	o.drainedFrom, o.drainedTo = o.drainedTo, o.totalChars
	switch {
	case lostAt < 0:
		return text, LostNothing
	case lostAt < o.agg.dropped:
		return text, LostForGood
	default:
		return text, LostFromPoll
	}
}

func (o *output) truncated() bool { return o.agg.dropped > 0 }

// Page is a range of log lines. Line numbers count from the first line the
// session ever printed, so they stay valid while older lines are dropped.
type Page struct {
	Lines      []string // the lines, without line endings
	First      int64    // the number of Lines[0] (or where they would start)
	FirstLine  int64    // the oldest line still retained
	TotalLines int64    // lines ever printed (an unfinished last line counts)
	// RetainedChars is the retained text's length in code points.
	RetainedChars int64
	Truncated     bool // output was dropped at the retention cap
}

// lineCount is the number of live lines: an unfinished last line counts,
// a trailing empty one does not.
func (r *runeRing) lineCount() int {
	n := r.newlines
	if r.size > 0 && r.byteAt(r.size-1) != '\n' {
		n++
	}
	return n
}

// lineStart returns the byte offset of live line i (0 <= i <= lineCount).
func (r *runeRing) lineStart(i int) int {
	count := r.lineCount()
	if i >= count {
		return r.size
	}
	if i <= count/2 {
		off := 0
		for ; i > 0; i-- {
			off = r.indexNewline(off) + 1
		}
		return off
	}
	// Nearer the end: count back from the last line.
	end := r.size
	if end > 0 && r.byteAt(end-1) == '\n' {
		end--
	}
	for back := count - i; back > 0; back-- {
		end = r.lastNewline(end)
		if end < 0 {
			return 0
		}
	}
	return end + 1
}

// page returns live lines [from, to), CRLF endings removed.
func (r *runeRing) page(from, to int) []string {
	if from >= to {
		return nil
	}
	start, end := r.lineStart(from), r.lineStart(to)
	text := r.slice(start, end)
	text = strings.TrimSuffix(text, "\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// page selects log lines. offset is an absolute line number (nil: the last
// limit lines, or the last def lines without limit); limit is a line count
// (nil: to the end). Negative values are treated as zero.
func (o *output) page(offset, limit *int64, def int64) Page {
	r := &o.agg
	p := Page{
		FirstLine:     r.droppedNewlines,
		RetainedChars: int64(r.runes),
		Truncated:     r.dropped > 0,
	}
	live := int64(r.lineCount())
	p.TotalLines = p.FirstLine + live
	if live == 0 && r.size == 0 {
		// Nothing retained; an empty ring after a cut starts a new line.
		p.TotalLines = r.droppedNewlines
	}
	var from, to int64 // absolute
	switch {
	case offset == nil:
		n := def
		if limit != nil {
			n = max(*limit, 0)
		}
		to = p.TotalLines
		from = max(to-n, p.FirstLine)
	default:
		from = max(*offset, 0)
		to = p.TotalLines
		if limit != nil {
			to = min(from+max(*limit, 0), to)
		}
	}
	p.First = from
	lo, hi := max(from, p.FirstLine)-p.FirstLine, to-p.FirstLine
	if lo < hi {
		p.First = lo + p.FirstLine
		p.Lines = r.page(int(lo), int(hi))
	}
	return p
}
