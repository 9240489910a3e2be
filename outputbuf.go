package bgexec

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
)

// discardNotice starts exec/poll/log texts when output was dropped at a cap.
const discardNotice = "[earlier output was discarded at the retention cap and cannot be recovered]"

// tailChars is the size of the tail shown in running results and list.
const tailChars = 2000

type streamID uint8

const (
	streamStdout streamID = iota
	streamStderr
)

// The buffers below sit on the ingest path of every read from a child, so
// they avoid work per byte: text that is all ASCII (byte count equal to
// code point count, known in O(1)) needs no scan to find a code point
// boundary, other text is scanned a word at a time, and in steady state
// (a child printing more than the caps while nobody polls) nothing is
// allocated: the ring wraps around and pending chunks reuse their memory.

const (
	wordMSB = 0x8080808080808080
)

// nthStart returns the index in p of the k-th (0-based) byte that starts a
// UTF-8 sequence, that is, is not a continuation byte 10xxxxxx. If p holds
// k or fewer such bytes it returns len(p) and how many it holds.
func nthStart(p []byte, k int) (idx, seen int) {
	i := 0
	for ; len(p)-i >= 8; i += 8 {
		w := binary.LittleEndian.Uint64(p[i:])
		// A continuation byte has bit 7 set and bit 6 clear; w<<1 moves each
		// byte's bit 6 to its bit 7.
		cont := w &^ (w << 1) & wordMSB
		starts := 8 - bits.OnesCount64(cont)
		if k < seen+starts {
			break
		}
		seen += starts
	}
	for ; i < len(p); i++ {
		if p[i]&0xC0 != 0x80 {
			if seen == k {
				return i, seen
			}
			seen++
		}
	}
	return len(p), seen
}

// runeStart is the index in p at which code point k (0-based) starts, for
// valid UTF-8 p holding n code points; len(p) when k >= n.
func runeStart(p []byte, n, k int) int {
	switch {
	case k <= 0:
		return 0
	case k >= n:
		return len(p)
	case n == len(p): // all ASCII
		return k
	}
	i, _ := nthStart(p, k)
	return i
}

// runeRing keeps the last limit code points of the valid UTF-8 text appended
// to it, in a circular buffer that grows only as far as the live text needs
// (at most twice its size). It counts what it dropped. The zero value with
// limit set is ready to use. Not safe for concurrent use.
type runeRing struct {
	buf     []byte // circular: the live text is size bytes from head, wrapping
	head    int
	size    int
	runes   int
	limit   int
	dropped int64 // code points dropped at the cap
}

// segments returns the live text as at most two pieces, in order.
func (r *runeRing) segments() (a, b []byte) {
	if end := r.head + r.size; end <= len(r.buf) {
		return r.buf[r.head:end], nil
	}
	return r.buf[r.head:], r.buf[:r.head+r.size-len(r.buf)]
}

// offsetOf returns the byte offset, from head, at which live code point k starts.
func (r *runeRing) offsetOf(k int) int {
	switch {
	case k <= 0:
		return 0
	case k >= r.runes:
		return r.size
	case r.size == r.runes: // all ASCII
		return k
	}
	a, b := r.segments()
	i, seen := nthStart(a, k)
	if i < len(a) {
		return i
	}
	// A code point may straddle the wrap: b then starts with its
	// continuation bytes, which nthStart skips.
	j, _ := nthStart(b, k-seen)
	return len(a) + j
}

func (r *runeRing) append(p []byte, n int) {
	if n == 0 {
		return
	}
	if n >= r.limit {
		// The chunk alone fills the ring: keep only its tail.
		skip := n - r.limit
		r.dropped += int64(r.runes + skip)
		p = p[runeStart(p, n, skip):]
		r.head, r.size, r.runes = 0, 0, 0
		r.reserve(len(p))
		r.size = copy(r.buf, p)
		r.runes = r.limit
		return
	}
	if over := r.runes + n - r.limit; over > 0 {
		off := r.offsetOf(over)
		r.head = (r.head + off) % max(len(r.buf), 1)
		r.size -= off
		r.runes -= over
		r.dropped += int64(over)
	}
	r.reserve(r.size + len(p))
	tail := (r.head + r.size) % len(r.buf)
	k := copy(r.buf[tail:], p)
	copy(r.buf, p[k:])
	r.size += len(p)
	r.runes += n
}

// reserve makes room for need live bytes, moving the live text to the
// start of a larger buffer when it has to grow.
func (r *runeRing) reserve(need int) {
	if need <= len(r.buf) {
		return
	}
	nb := make([]byte, max(need, 2*len(r.buf), 512))
	a, b := r.segments()
	copy(nb[copy(nb, a):], b)
	r.buf, r.head = nb, 0
}

// bytes returns the live text as one slice, valid until the next append.
func (r *runeRing) bytes() []byte {
	a, b := r.segments()
	if len(b) == 0 {
		return a
	}
	nb := make([]byte, len(r.buf))
	copy(nb[copy(nb, a):], b)
	r.buf, r.head = nb, 0
	return r.buf[:r.size]
}

// stringFrom returns a copy of the live text from byte offset off.
func (r *runeRing) stringFrom(off int) string {
	a, b := r.segments()
	if off >= len(a) {
		return string(b[off-len(a):])
	}
	if len(b) == 0 {
		return string(a[off:])
	}
	var sb strings.Builder
	sb.Grow(r.size - off)
	sb.Write(a[off:])
	sb.Write(b)
	return sb.String()
}

// tail returns a copy of the last n code points.
func (r *runeRing) tail(n int) string { return r.stringFrom(r.offsetOf(r.runes - n)) }

func (r *runeRing) String() string { return r.stringFrom(0) }

// lastLine appends to dst the text after the last newline, at most max bytes
// of it (its end), and returns dst.
func (r *runeRing) lastLine(dst []byte, limit int) []byte {
	a, b := r.segments()
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
		a = nil
	} else if i := bytes.LastIndexByte(a, '\n'); i >= 0 {
		a = a[i+1:]
	}
	if over := len(a) + len(b) - limit; over > 0 {
		if over >= len(a) {
			b, a = b[over-len(a):], nil
		} else {
			a = a[over:]
		}
	}
	return append(append(dst, a...), b...)
}

// pendingChunk is output of one stream not yet returned by poll.
type pendingChunk struct {
	stream streamID
	text   []byte // the pending text: a window of mem
	runes  int
	mem    []byte // text's backing array from its start, for reuse
}

// appendText appends p to the chunk's text, moving the text back to the
// start of its memory before growing it.
func (c *pendingChunk) appendText(p []byte) {
	switch {
	case len(c.text)+len(p) <= cap(c.text):
	case len(c.text)+len(p) <= cap(c.mem):
		c.text = c.mem[:copy(c.mem, c.text)]
	default:
		nm := make([]byte, len(c.text), max(2*cap(c.mem), len(c.text)+len(p)))
		copy(nm, c.text)
		c.mem, c.text = nm[:cap(nm)], nm
	}
	c.text = append(c.text, p...)
}

// pendingBuf holds what the next poll has not returned yet, in arrival
// order, capped per stream at limit code points (oldest dropped first).
// The zero value with limit set is ready to use.
type pendingBuf struct {
	chunks  []pendingChunk
	runes   [2]int
	limit   int
	dropped bool   // something was dropped since the last drain
	spare   []byte // memory of a dropped chunk, for the next new one
}

func (q *pendingBuf) append(s streamID, p []byte, n int) {
	if n == 0 {
		return
	}
	if n >= q.limit {
		// The chunk alone fills the stream's share: everything older of
		// the stream goes, and only the chunk's tail is kept.
		if n > q.limit {
			p = p[runeStart(p, n, n-q.limit):]
			n = q.limit
			q.dropped = true
		}
		if q.runes[s] > 0 {
			q.dropped = true
			q.chunks = q.removeStream(s)
			q.runes[s] = 0
		}
	}
	if last := len(q.chunks) - 1; last >= 0 && q.chunks[last].stream == s {
		q.chunks[last].appendText(p)
		q.chunks[last].runes += n
	} else {
		c := pendingChunk{stream: s, runes: n}
		if cap(q.spare) >= len(p) {
			c.mem, q.spare = q.spare[:cap(q.spare)], nil
		} else {
			c.mem = make([]byte, max(len(p), 512))
		}
		c.text = append(c.mem[:0], p...)
		q.chunks = append(q.chunks, c)
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
			q.keepSpare(c.mem)
			q.chunks = append(q.chunks[:i], q.chunks[i+1:]...)
			continue
		}
		c.text = c.text[runeStart(c.text, c.runes, over):]
		c.runes -= over
		q.runes[s] -= over
		over = 0
	}
}

// removeStream drops every chunk of stream s, keeping one's memory as spare.
func (q *pendingBuf) removeStream(s streamID) []pendingChunk {
	out := q.chunks[:0]
	for _, c := range q.chunks {
		if c.stream == s {
			q.keepSpare(c.mem)
		} else {
			out = append(out, c)
		}
	}
	clear(q.chunks[len(out):])
	return out
}

func (q *pendingBuf) keepSpare(mem []byte) {
	if cap(mem) > cap(q.spare) {
		q.spare = mem
	}
}

// drain returns everything pending in arrival order and empties the buffer,
// releasing its memory (an idle session holds none).
func (q *pendingBuf) drain() (text string, dropped bool) {
	size := 0
	for _, c := range q.chunks {
		size += len(c.text)
	}
	var sb strings.Builder
	sb.Grow(size)
	for _, c := range q.chunks {
		sb.Write(c.text)
	}
	dropped = q.dropped
	q.chunks, q.runes, q.dropped, q.spare = nil, [2]int{}, false, nil
	return sb.String(), dropped
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
	o.linePrefix = o.agg.lastLine(o.linePrefix[:0], maxPartialLine)
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
