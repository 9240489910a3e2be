package bgexec

import "bytes"

// discardNotice starts exec/poll/log texts when output was dropped at a cap.
const discardNotice = "[earlier output was discarded at the retention cap and cannot be recovered]"

// tailChars is the size of the tail shown in running results and list.
const tailChars = 2000

type streamID uint8

const (
	streamStdout streamID = iota
	streamStderr
)

// runeRing keeps the last limit code points of the valid UTF-8 text appended
// to it. It counts what it dropped. Not safe for concurrent use.
type runeRing struct {
	buf     []byte // live text is buf[start:]
	start   int
	runes   int
	limit   int
	dropped int64 // code points dropped at the cap
}

// runeStart is the index in p at which rune k (0-based) starts, for valid
// UTF-8 p; len(p) when p has k runes or fewer.
func runeStart(p []byte, k int) int {
	if k <= 0 {
		return 0
	}
	for i, b := range p {
		if b&0xC0 != 0x80 {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return len(p)
}

func (r *runeRing) append(p []byte, n int) {
	if n == 0 {
		return
	}
	if n >= r.limit {
		// The chunk alone fills the ring: keep only its tail.
		skip := n - r.limit
		r.dropped += int64(r.runes + skip)
		p = p[runeStart(p, skip):]
		r.buf = append(r.buf[:0], p...)
		r.start, r.runes = 0, r.limit
		return
	}
	r.buf = append(r.buf, p...)
	r.runes += n
	if over := r.runes - r.limit; over > 0 {
		r.start += runeStart(r.buf[r.start:], over)
		r.runes = r.limit
		r.dropped += int64(over)
	}
	// Compact once the dead prefix dominates, so memory stays near the live size.
	if r.start > 4096 && r.start > len(r.buf)/2 {
		n := copy(r.buf, r.buf[r.start:])
		r.buf = r.buf[:n]
		r.start = 0
	}
}

func (r *runeRing) bytes() []byte { return r.buf[r.start:] }

// tail returns a copy of the last n code points.
func (r *runeRing) tail(n int) string {
	b := r.bytes()
	if r.runes > n {
		b = b[runeStart(b, r.runes-n):]
	}
	return string(b)
}

func (r *runeRing) String() string { return string(r.bytes()) }

// pendingChunk is output of one stream not yet returned by poll.
type pendingChunk struct {
	stream streamID
	text   []byte
	runes  int
}

// pendingBuf holds what the next poll has not returned yet, in arrival
// order, capped per stream at limit code points (oldest dropped first).
type pendingBuf struct {
	chunks  []pendingChunk
	runes   [2]int
	limit   int
	dropped bool // something was dropped since the last drain
}

func (q *pendingBuf) append(s streamID, p []byte, n int) {
	if n == 0 {
		return
	}
	if n > q.limit {
		p = p[runeStart(p, n-q.limit):]
		n = q.limit
		q.dropped = true
	}
	if last := len(q.chunks) - 1; last >= 0 && q.chunks[last].stream == s {
		q.chunks[last].text = append(q.chunks[last].text, p...)
		q.chunks[last].runes += n
	} else {
		q.chunks = append(q.chunks, pendingChunk{stream: s, text: append([]byte(nil), p...), runes: n})
	}
	q.runes[s] += n
	for over := q.runes[s] - q.limit; over > 0; {
		q.dropped = true
		i := 0
		for q.chunks[i].stream != s {
			i++
		}
		c := &q.chunks[i]
		if c.runes <= over {
			over -= c.runes
			q.runes[s] -= c.runes
			q.chunks = append(q.chunks[:i], q.chunks[i+1:]...)
			continue
		}
		c.text = c.text[runeStart(c.text, over):]
		c.runes -= over
		q.runes[s] -= over
		over = 0
	}
}

// drain returns everything pending in arrival order and empties the buffer.
func (q *pendingBuf) drain() (text string, dropped bool) {
	size := 0
	for _, c := range q.chunks {
		size += len(c.text)
	}
	b := make([]byte, 0, size)
	for _, c := range q.chunks {
		b = append(b, c.text...)
	}
	dropped = q.dropped
	q.chunks, q.runes, q.dropped = nil, [2]int{}, false
	return string(b), dropped
}

func (q *pendingBuf) empty() bool { return len(q.chunks) == 0 }

// outputBuf is a session's captured output: the aggregate tail and the
// pending buffers. The session's mutex guards it.
type outputBuf struct {
	agg        runeRing
	pending    pendingBuf
	totalChars int64
	// linePrefix is the unfinished last line at the latest drain, so a
	// pattern waiter sees lines split around a poll whole.
	linePrefix []byte
}

func newOutputBuf(maxChars, pendingChars int) outputBuf {
	return outputBuf{
		agg:     runeRing{limit: maxChars},
		pending: pendingBuf{limit: pendingChars},
	}
}

// add appends cleaned text (valid UTF-8 of n code points) from stream s.
func (o *outputBuf) add(s streamID, text []byte, n int) {
	if n == 0 {
		return
	}
	o.totalChars += int64(n)
	o.agg.append(text, n)
	o.pending.append(s, text, n)
}

// drainPending returns the pending output and remembers the unfinished line.
func (o *outputBuf) drainPending() (string, bool) {
	agg := o.agg.bytes()
	if i := bytes.LastIndexByte(agg, '\n'); i >= 0 {
		agg = agg[i+1:]
	}
	o.linePrefix = append(o.linePrefix[:0], agg[max(0, len(agg)-maxPartialLine):]...)
	return o.pending.drain()
}

func (o *outputBuf) truncated() bool { return o.agg.dropped > 0 }

// withNotice prefixes text with the discard notice when dropped is true.
func withNotice(text string, dropped bool) string {
	if !dropped {
		return text
	}
	return discardNotice + "\n\n" + text
}
