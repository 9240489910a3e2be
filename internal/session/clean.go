package session

import (
	"bytes"
	"encoding/binary"

	"github.com/bgexec/bgexec/internal/termtext"
)

// streamCleaner turns one output stream's reads into the text a session
// keeps: a termtext.Cleaner, and on a terminal a termtext.LineEnds after
// it. The zero value is ready for a pipe.
//
// A pipe flood is mostly plain text: printable ASCII, TAB, LF and CR, which
// the cleaner keeps byte for byte while it is in plain text (no escape
// sequence open, no UTF-8 sequence carried over), and which leave it
// there. Such a read is recorded as read (plain): the same text as the
// cleaner's, found by a test that only answers yes or no, faster than the
// cleaner's scan, and without the cleaner's copy. Every other read goes
// through the cleaner (clean). A terminal's reads always do: LineEnds
// rewrites CRs.
type streamCleaner struct {
	cl  termtext.Cleaner
	le  termtext.LineEnds
	pty bool
	// busy: cl may be inside an escape sequence or string, or carry part
	// of a UTF-8 sequence (it is not at rest, see cleanerAtRest).
	busy bool
}

// plain reports whether p is kept as it is: each byte one code point, no
// terminal events, and the cleaner's state unchanged. It also returns the
// LFs p holds, which the retained text counts.
func (c *streamCleaner) plain(p []byte) (ok bool, newlines int) {
	if c.pty || c.busy {
		return false, 0
	}
	return isPlain(p)
}

// clean appends the cleaned text of p to dst, with its length in code
// points and the terminal events it holds.
func (c *streamCleaner) clean(dst, p []byte) (text []byte, n int, ev termtext.Events) {
	text, n, ev = c.cl.Append(dst, p)
	if c.pty {
		var removed int
		text, removed = c.le.Apply(text)
		n -= removed
		return text, n, ev
	}
	c.busy = !cleanerAtRest(&c.cl)
	return text, n, ev
}

// flush ends the stream (termtext.Cleaner.Flush): U+FFFD at most, no line
// ending to change.
func (c *streamCleaner) flush() ([]byte, int) {
	c.busy = false
	return c.cl.Flush(nil)
}

const (
	lsb8 = 0x0101010101010101
	msb8 = 0x8080808080808080
	lo78 = 0x7f7f7f7f7f7f7f7f
	// ctl8 - b has its high bit set, per byte b < 0x80, iff b < 0x20.
	ctl8 = 0x9f9f9f9f9f9f9f9f
)

// plainByte marks the bytes the cleaner keeps as they are in plain text.
var plainByte = func() (t [256]bool) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = true
	}
	t['\t'], t['\n'], t['\r'] = true, true, true
	return t
}()

// notPlainOrLF flags (in a byte's high bit) every byte of w that is not
// printable ASCII or LF: a byte >= 0x80 by itself, DEL by w+1, a control
// other than LF by ctl8-w where w^LF is not zero. Carries and borrows start
// only in a flagged byte, so a word without a flagged byte is exact.
func notPlainOrLF(w uint64) uint64 {
	return w | (w + lsb8) | ((ctl8 - w) & ((w ^ 0x0a0a0a0a0a0a0a0a) + lo78))
}

// notPlain flags every byte of w that is not printable ASCII, TAB, LF or
// CR (with the same caveat about carries as notPlainOrLF).
func notPlain(w uint64) uint64 {
	return w | (w + lsb8) |
		((ctl8 - w) &
			((w ^ 0x0a0a0a0a0a0a0a0a) + lo78) &
			(((w ^ 0x0909090909090909) & 0xfbfbfbfbfbfbfbfb) + lo78))
}

// isPlain reports whether every byte of p is printable ASCII, TAB, LF or
// CR, and how many LFs p holds when it is. plainPrefix passes over the
// printable ASCII and LF of text lines, counting the LFs (64 bytes a step
// on amd64, a word elsewhere), and stops at a block with anything else,
// which is then checked exactly a word at a time.
func isPlain(p []byte) (ok bool, newlines int) {
	for {
		k, lfs := plainPrefix(p)
		newlines += lfs
		p = p[k:]
		k = min(len(p), 64)
		if !plainExact(p[:k]) {
			return false, 0
		}
		newlines += bytes.Count(p[:k], nl)
		if k == len(p) {
			return true, newlines
		}
		p = p[k:]
	}
}

// plainExact is isPlain a word at a time.
func plainExact(p []byte) bool {
	i := 0
	for ; len(p)-i >= 8; i += 8 {
		if notPlain(binary.LittleEndian.Uint64(p[i:]))&msb8 != 0 {
			return false
		}
	}
	for ; i < len(p); i++ {
		if !plainByte[p[i]] {
			return false
		}
	}
	return true
}

// plainPrefixWords is plainPrefix a word at a time: the length of the
// prefix of p, in whole 8-byte words, whose bytes are all printable ASCII
// or LF.
func plainPrefixWords(p []byte) int {
	i := 0
	for ; len(p)-i >= 32; i += 32 {
		q := p[i : i+32 : i+32]
		f := notPlainOrLF(binary.LittleEndian.Uint64(q[0:])) | notPlainOrLF(binary.LittleEndian.Uint64(q[8:])) |
			notPlainOrLF(binary.LittleEndian.Uint64(q[16:])) | notPlainOrLF(binary.LittleEndian.Uint64(q[24:]))
		if f&msb8 != 0 {
			break
		}
	}
	for ; len(p)-i >= 8; i += 8 {
		if notPlainOrLF(binary.LittleEndian.Uint64(p[i:]))&msb8 != 0 {
			break
		}
	}
	return i
}

// probeByte is what cleanerAtRest feeds a copy of the cleaner.
var probeByte = [1]byte{'a'}

// cleanerAtRest reports whether cl is in plain text with nothing carried
// over, so that it would keep plain bytes unchanged and stay as it is. A
// copy of it is fed one letter: at rest the letter comes out; after an
// ESC, inside a sequence or a string it is swallowed (as a final byte or
// as string content), and after a carried UTF-8 prefix it comes out
// behind a U+FFFD.
func cleanerAtRest(cl *termtext.Cleaner) bool {
	probe := *cl
	var buf [8]byte
	out, n, _ := probe.Append(buf[:0], probeByte[:])
	return n == 1 && len(out) == 1 && out[0] == 'a'
}
