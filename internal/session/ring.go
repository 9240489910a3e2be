package session

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf8"
	"unsafe"
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

	newlines        int   // '\n' bytes in the live text
	droppedNewlines int64 // '\n' bytes dropped at the cap: the first live line's number

	// cache is the live text as a string, valid while cacheOK. It is a
	// view of buf, not a copy: while viewed, appends only write past the
	// end of every view handed out, and move to a new array rather than
	// wrap around over viewed bytes (copy on write). With no view out, the
	// ring wraps as usual, so a flood nobody reads costs no extra copy.
	cache   string
	cacheOK bool
	viewed  bool // some string handed out may view buf
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

// append adds valid UTF-8 text p of n code points.
func (r *runeRing) append(p []byte, n int) { r.appendLines(p, n, bytes.Count(p, nl)) }

// appendLines is append for text whose LFs the caller has counted.
func (r *runeRing) appendLines(p []byte, n, newlines int) {
	if n == 0 {
		return
	}
	r.cacheOK, r.cache = false, ""
	if n >= r.limit {
		// The chunk alone fills the ring: keep only its tail.
		skip := n - r.limit
		r.dropped += int64(r.runes + skip)
		cut := runeStart(p, n, skip)
		p = p[cut:]
		kept := bytes.Count(p, nl)
		r.droppedNewlines += int64(r.newlines + newlines - kept)
		r.head, r.size, r.runes = 0, 0, 0
		if r.viewed || len(p) > len(r.buf) {
			r.buf, r.viewed = make([]byte, grown(len(p))), false
		}
		r.size = copy(r.buf, p)
		r.runes = r.limit
		r.newlines = kept
		return
	}
	if over := r.runes + n - r.limit; over > 0 {
		off := r.offsetOf(over)
		// The LFs dropped, counted in whichever side of the cut is
		// shorter: the live count covers both.
		var gone int
		if off <= r.size-off {
			gone = r.countNewlines(0, off)
		} else {
			gone = r.newlines - r.countNewlines(off, r.size)
		}
		r.newlines -= gone
		r.droppedNewlines += int64(gone)
		r.head = (r.head + off) % max(len(r.buf), 1)
		r.size -= off
		r.runes -= over
		r.dropped += int64(over)
	}
	r.newlines += newlines
	tail := r.head + r.size
	switch {
	case r.viewed && tail+len(p) > len(r.buf):
		// Wrapping would overwrite viewed bytes: move to a new array, with
		// room for the appends until the next view.
		r.relocate(r.size+len(p), 0)
	case r.size+len(p) > len(r.buf):
		// Growing toward the cap: no more than the text will need there,
		// judged by its bytes per code point so far.
		need := r.size + len(p)
		r.relocate(need, int(int64(need)*int64(r.limit)/int64(r.runes+n))+utf8.UTFMax)
	}
	tail = (r.head + r.size) % len(r.buf)
	k := copy(r.buf[tail:], p)
	copy(r.buf, p[k:])
	r.size += len(p)
	r.runes += n
}

// grown is the size of a new array for need live bytes: a quarter more,
// so appends after a relocation have room before the next one.
func grown(need int) int { return max(need+need/4, 64) }

// relocate moves the live text to the start of a new array with room for
// need live bytes, and a quarter more unless bound (when > 0) is smaller.
// Views of the old array stay valid.
func (r *runeRing) relocate(need, bound int) {
	size := grown(need)
	if bound > 0 {
		size = max(need, min(size, bound))
	}
	nb := make([]byte, size)
	a, b := r.segments()
	copy(nb[copy(nb, a):], b)
	r.buf, r.head, r.viewed = nb, 0, false
}

var nl = []byte{'\n'}

// countNewlines counts '\n' in the live bytes [from, to) (offsets from head).
func (r *runeRing) countNewlines(from, to int) int {
	a, b := r.segments()
	n := 0
	if from < len(a) {
		n += bytes.Count(a[from:min(to, len(a))], nl)
	}
	if to > len(a) {
		n += bytes.Count(b[max(from-len(a), 0):to-len(a)], nl)
	}
	return n
}

// byteAt returns the live byte at offset i from head.
func (r *runeRing) byteAt(i int) byte {
	a, b := r.segments()
	if i < len(a) {
		return a[i]
	}
	return b[i-len(a)]
}

// indexNewline returns the offset of the first '\n' at or after from, or -1.
func (r *runeRing) indexNewline(from int) int {
	a, b := r.segments()
	if from < len(a) {
		if i := bytes.IndexByte(a[from:], '\n'); i >= 0 {
			return from + i
		}
		from = len(a)
	}
	if i := bytes.IndexByte(b[from-len(a):], '\n'); i >= 0 {
		return from + i
	}
	return -1
}

// lastNewline returns the offset of the last '\n' before to, or -1.
func (r *runeRing) lastNewline(to int) int {
	a, b := r.segments()
	if to > len(a) {
		if i := bytes.LastIndexByte(b[:to-len(a)], '\n'); i >= 0 {
			return len(a) + i
		}
		to = len(a)
	}
	return bytes.LastIndexByte(a[:to], '\n')
}

// slice returns a copy of the live bytes [from, to).
func (r *runeRing) slice(from, to int) string {
	a, b := r.segments()
	switch {
	case to <= len(a):
		return string(a[from:to])
	case from >= len(a):
		return string(b[from-len(a) : to-len(a)])
	}
	var sb strings.Builder
	sb.Grow(to - from)
	sb.Write(a[from:])
	sb.Write(b[:to-len(a)])
	return sb.String()
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

// String returns the live text without copying it: a view of the array,
// which later appends never overwrite. Only when the text wraps around the
// end of the array is it moved to a new one first.
func (r *runeRing) String() string {
	if r.cacheOK {
		return r.cache
	}
	if r.size == 0 {
		r.cache, r.cacheOK = "", true
		return ""
	}
	if r.head+r.size > len(r.buf) {
		r.relocate(r.size, 0)
	}
	// The bytes [head, head+size) are never written again while viewed
	// (append relocates first), so the string stays immutable.
	r.cache = unsafe.String(&r.buf[r.head], r.size)
	r.cacheOK, r.viewed = true, true
	return r.cache
}

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
