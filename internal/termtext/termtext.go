// Package termtext turns the raw bytes a child process writes to its stdout,
// stderr or PTY master into clean, model-facing text.
//
// A [Cleaner] is a streaming decoder with a small, fixed amount of state. Feed
// it every chunk read from one stream, in order, with [Cleaner.Append], and
// call [Cleaner.Flush] once the stream has ended. It
//
//   - decodes UTF-8, joining a multi-byte sequence that was split across two
//     reads and replacing every invalid byte with U+FFFD (one replacement per
//     byte, exactly as a Go for-range loop or utf8.DecodeRune would do, also
//     for an incomplete sequence at the end of the stream). A raw byte 0x80–
//     0x9F is invalid UTF-8, not a C1 control: it becomes U+FFFD;
//   - removes ANSI/ECMA-48 escape sequences whole, parameters included: CSI,
//     OSC (ended by BEL or ST), DCS/SOS/PM/APC strings (ended by ST), and
//     two-character or intermediate escapes such as ESC ( B, ESC =, ESC 7 or
//     ESC # 8, whether they are introduced by ESC or by the equivalent C1
//     code point (U+009B for CSI, U+009D for OSC, U+0090 for DCS, …);
//   - shows the remaining C0 controls other than TAB, LF and CR (and the
//     ESC that starts a sequence) as the four characters \xNN, lower-case
//     hex, so a NUL, a BEL or a backspace in the output stays visible as
//     what it is; each counts as four code points;
//   - removes DEL, the C1
//     range U+0080–U+009F, Unicode format characters (category Cf, such as
//     U+200B, U+FEFF, U+202E, U+00AD or the tag characters U+E0000–U+E007F)
//     and surrogate code points. This includes the zero-width joiner U+200D,
//     so an emoji ZWJ sequence comes out as its separate emoji;
//   - reports, as [Events], the terminal requests that matter to a PTY
//     bridge: cursor-position queries (ESC[6n, ESC[?6n) and changes of the
//     cursor-key mode (DEC private mode 1, ESC[?1h / ESC[?1l). A query must
//     have exactly the one parameter 6; a mode change must carry the '?'
//     marker and may list mode 1 among others (ESC[?1;1049h). Sequences with
//     intermediate bytes, sub-parameters (':') or a misplaced marker are
//     removed but not reported.
//
// Parsing follows the DEC VT500-series state machine that xterm-compatible
// terminals implement, so the text left over is what a terminal would have
// shown as characters:
//
//   - A C0 control that arrives inside an escape or CSI sequence is acted on
//     as it would be by a terminal, that is, it is text (TAB, LF and CR are
//     kept, the others shown as \xNN) and the sequence continues.
//   - CAN (0x18) and SUB (0x1A) cancel any sequence in progress, and are
//     removed with it; outside a sequence they are shown as \xNN. ESC always
//     starts a new sequence, abandoning the one in progress (which is how
//     ESC \ ends a string); a C1 code point likewise ends the sequence in
//     progress and, if it is an introducer, starts its own (U+009C is ST).
//   - A BEL ends an OSC (as xterm allows) but not a DCS, SOS, PM or APC
//     string, which only ST ends.
//   - Inside OSC and the other strings every control other than the
//     terminators is swallowed together with the string.
//   - A printable non-ASCII code point where an escape or CSI sequence
//     expects an ASCII byte abandons the sequence; that code point is kept as
//     text.
//   - A sequence that reaches [MaxSequenceBytes] bytes without being
//     terminated is abandoned: its bytes so far are dropped and what follows
//     is treated as ordinary text. This keeps a stray ESC ] or ESC P from
//     swallowing the rest of a stream.
//
// The cleaner never buffers sequence bytes, so its memory is constant (a few
// dozen bytes) whatever it is fed. The common case, printable ASCII with TAB,
// LF and CR, is checked 32 bytes per step with word-wide bit arithmetic and
// copied in bulk; only escape sequences, other controls and non-ASCII text
// go through the per-code-point state machine.
//
// For terminal output, a [LineEnds] after the Cleaner turns the CRLF and
// lone CR line endings into LF.
package termtext

import (
	"encoding/binary"
	"math/bits"
	"unicode"
	"unicode/utf8"
)

// MaxSequenceBytes is the longest escape sequence or control string, in
// input bytes including its introducer, that the cleaner follows. A
// sequence still unterminated at this length is dropped and the cleaner
// returns to plain text.
const MaxSequenceBytes = 4096

// Events reports the terminal control sequences seen in one Append call.
// The sequences themselves are always removed from the text.
type Events struct {
	// CursorQueries is the number of cursor-position queries (ESC[6n or
	// ESC[?6n) seen. A PTY bridge answers each one with ESC[1;1R.
	CursorQueries int
	// CursorMode is the last change of the cursor-key mode seen: 0 when
	// there was none, +1 when it was ESC[?1h (application mode), -1 when it
	// was ESC[?1l (normal mode). Mode 1 counts also inside a parameter list
	// such as ESC[?1;1049h.
	CursorMode int
}

// Cleaner is the decoding and cleaning state of one output stream. The zero
// value is ready to use; use one Cleaner per stream (stdout, stderr, PTY).
// It keeps at most three carried UTF-8 bytes and a few counters, so its
// memory stays constant whatever is written. A Cleaner is not safe for
// concurrent use.
type Cleaner struct {
	st     state
	carry  [utf8.UTFMax - 1]byte // incomplete UTF-8 prefix from the last call
	ncarry uint8
	seqLen int // input bytes of the sequence in progress

	// CSI parameter parsing, enough to recognise ESC[6n and ESC[?1h/l.
	marker   byte  // private marker ('<', '=', '>', '?') or 0
	csiAny   bool  // parameter or intermediate bytes seen
	csiBad   bool  // parameters not understood (sub-parameters, misplaced marker…)
	csiInter bool  // intermediate bytes seen
	nparams  uint8 // completed parameters (saturating)
	cur      int   // value of the parameter being read (saturating)
	first    int   // value of the first parameter
	hasOne   bool  // some parameter equals 1
}

type state uint8

const (
	stGround   state = iota // plain text
	stEsc                   // after ESC
	stEscInter              // after ESC and intermediate bytes (0x20–0x2F)
	stCSI                   // inside a control sequence
	stOSC                   // inside an operating system command string
	stString                // inside a DCS, SOS, PM or APC string
)

const (
	maxParam  = 1 << 16
	lsb       = 0x0101010101010101
	msb       = 0x8080808080808080
	lo7       = 0x7f7f7f7f7f7f7f7f
	runeError = utf8.RuneError
)

// plain marks the bytes that pass through unchanged in plain text: printable
// ASCII, TAB, LF and CR.
var plain = func() (t [256]bool) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = true
	}
	t['\t'], t['\n'], t['\r'] = true, true, true
	return t
}()

// Append decodes p, continuing any UTF-8 or escape sequence left unfinished
// by the previous call, removes escape sequences and unwanted controls,
// appends the cleaned UTF-8 text to dst and returns the extended slice.
// runes is the number of code points appended and ev the terminal events
// seen in p. Append allocates only when dst has to grow.
func (c *Cleaner) Append(dst []byte, p []byte) (out []byte, runes int, ev Events) {
	var n int
	if c.ncarry > 0 {
		dst, p, runes = c.finishCarry(dst, p, &ev)
	}
	i := 0
	for i < len(p) {
		inSeq := c.st != stGround
		switch c.st {
		case stGround:
			// Copy a run of bytes that are kept as they are in one go.
			start := i
			var count int
			i, count = keptRun(p, i)
			dst = append(dst, p[start:i]...)
			runes += count
		case stCSI:
			i = c.csiRun(p, i, &ev)
		case stOSC, stString:
			i = c.stringRun(p, i)
		}
		if i >= len(p) {
			break
		}
		if inSeq && c.st == stGround {
			continue // the sequence ended: back to the plain-text loop
		}
		b := p[i]
		if b == 0x1b && i+1 < len(p) && p[i+1] == '[' {
			// ESC [ is by far the most common sequence; step would reach
			// the same state in two calls.
			c.seqLen = 2
			c.startCSI()
			i += 2
			continue
		}
		if b < utf8.RuneSelf {
			dst, n = c.step(dst, rune(b), 1, &ev)
			runes += n
			i++
			continue
		}
		if !utf8.FullRune(p[i:]) {
			c.ncarry = uint8(copy(c.carry[:], p[i:]))
			break
		}
		r, size := utf8.DecodeRune(p[i:])
		dst, n = c.step(dst, r, size, &ev)
		runes += n
		i += size
	}
	return dst, runes, ev
}

// keptRun finds the run of bytes from p[i] on that the cleaner keeps as
// they are in the ground state (plain text and complete UTF-8 sequences
// of kept code points): it returns where the run ends and how many code
// points it holds.
func keptRun(p []byte, i int) (end, count int) {
	for {
		if i < len(p) && p[i] < utf8.RuneSelf {
			j := scanPlain(p, i)
			count += j - i
			i = j
		}
		if i >= len(p) || p[i] < utf8.RuneSelf {
			return i, count
		}
		r, size := utf8.DecodeRune(p[i:])
		if size == 1 || !keepRune(r) {
			return i, count // invalid, incomplete, C1 or format: slow path
		}
		i += size
		count++
	}
}

// finishCarry decodes the UTF-8 prefix carried over from the previous call
// together with the first bytes of p. It returns the rest of p.
func (c *Cleaner) finishCarry(dst, p []byte, ev *Events) ([]byte, []byte, int) {
	runes := 0
	for c.ncarry > 0 && len(p) > 0 {
		var buf [utf8.UTFMax]byte
		k := copy(buf[:], c.carry[:c.ncarry])
		m := copy(buf[k:], p)
		if !utf8.FullRune(buf[:k+m]) {
			// Still incomplete, which means p was shorter than needed.
			c.ncarry = uint8(copy(c.carry[:], buf[:k+m]))
			return dst, p[m:], runes
		}
		r, size := utf8.DecodeRune(buf[:k+m])
		var n int
		dst, n = c.step(dst, r, size, ev)
		runes += n
		if size >= k {
			p = p[size-k:]
			c.ncarry = 0
		} else {
			c.ncarry = uint8(copy(c.carry[:], c.carry[size:k]))
		}
	}
	return dst, p, runes
}

// Flush ends the stream. Each byte of an incomplete trailing UTF-8 sequence
// becomes U+FFFD (unless it falls inside an escape sequence); an unterminated
// escape sequence is dropped. Flush appends the remaining text to dst and
// returns it with the number of code points appended, and resets c to its
// zero value, ready for a new stream.
func (c *Cleaner) Flush(dst []byte) (out []byte, runes int) {
	var ev Events
	for k := 0; k < int(c.ncarry); k++ {
		var n int
		dst, n = c.step(dst, runeError, 1, &ev)
		runes += n
	}
	*c = Cleaner{}
	return dst, runes
}

// step feeds one decoded code point, which took size input bytes, through
// the state machine. It returns dst and the number of code points appended.
func (c *Cleaner) step(dst []byte, r rune, size int, ev *Events) ([]byte, int) {
	// Transitions that apply in every state.
	switch {
	case r == 0x1b: // ESC
		c.st, c.seqLen = stEsc, size
		return dst, 0
	case (r == 0x18 || r == 0x1a) && c.st != stGround: // CAN, SUB
		c.st = stGround
		return dst, 0
	case r >= 0x80 && r <= 0x9f: // C1
		switch r {
		case 0x9b: // CSI
			c.seqLen = size
			c.startCSI()
		case 0x9d: // OSC
			c.st, c.seqLen = stOSC, size
		case 0x90, 0x98, 0x9e, 0x9f: // DCS, SOS, PM, APC
			c.st, c.seqLen = stString, size
		default: // ST and the rest end whatever was in progress
			c.st = stGround
		}
		return dst, 0
	}
	if c.st == stGround {
		return emit(dst, r)
	}
	c.seqLen += size
	dst, n := c.inSequence(dst, r, ev)
	if c.st != stGround && c.seqLen >= MaxSequenceBytes {
		c.st = stGround // too long: abandon it
	}
	return dst, n
}

// inSequence handles a code point that is not an ESC, CAN, SUB or C1
// control while a sequence is in progress.
func (c *Cleaner) inSequence(dst []byte, r rune, ev *Events) ([]byte, int) {
	switch c.st {
	case stOSC:
		if r == 0x07 { // BEL
			c.st = stGround
		}
		return dst, 0
	case stString:
		return dst, 0
	}
	// stEsc, stEscInter, stCSI
	if r < 0x20 {
		return emit(dst, r) // executed as in plain text, sequence goes on
	}
	if r == 0x7f {
		return dst, 0 // ignored
	}
	if r >= utf8.RuneSelf {
		c.st = stGround // abandon the sequence, keep the character
		return emit(dst, r)
	}
	switch c.st {
	case stEsc:
		switch {
		case r == '[':
			c.startCSI()
		case r == ']':
			c.st = stOSC
		case r == 'P' || r == 'X' || r == '^' || r == '_':
			c.st = stString
		case r < 0x30:
			c.st = stEscInter
		default:
			c.st = stGround // final byte
		}
	case stEscInter:
		if r >= 0x30 {
			c.st = stGround // final byte
		}
	case stCSI:
		c.csiByte(byte(r), ev)
	}
	return dst, 0
}

// csiRun consumes the printable ASCII bytes of a CSI sequence starting at
// p[i] and returns the index of the first byte it did not consume: the end
// of p, a byte that is not printable ASCII, or the byte after the final.
// It does what step does for those bytes, only faster.
func (c *Cleaner) csiRun(p []byte, i int, ev *Events) int {
	for i < len(p) {
		b := p[i]
		if b < 0x20 || b > 0x7e {
			return i
		}
		i++
		c.seqLen++
		if b >= '0' && b <= '9' && !c.csiInter {
			c.csiAny = true
			if c.cur < maxParam {
				c.cur = c.cur*10 + int(b-'0')
			}
		} else {
			c.csiByte(b, ev)
			if c.st != stCSI {
				return i
			}
		}
		if c.seqLen >= MaxSequenceBytes {
			c.st = stGround
			return i
		}
	}
	return i
}

// stringRun consumes the bytes of an OSC or other string starting at p[i]
// that can neither end nor abandon it (printable ASCII and DEL) and returns
// the index of the first byte it did not consume.
func (c *Cleaner) stringRun(p []byte, i int) int {
	for i < len(p) {
		b := p[i]
		if b < 0x20 || b >= utf8.RuneSelf {
			return i
		}
		i++
		c.seqLen++
		if c.seqLen >= MaxSequenceBytes {
			c.st = stGround
			return i
		}
	}
	return i
}

// emit appends r if it belongs in plain text; a C0 control other than
// TAB, LF and CR as \xNN.
func emit(dst []byte, r rune) ([]byte, int) {
	if r < 0x20 {
		if r == '\t' || r == '\n' || r == '\r' {
			return append(dst, byte(r)), 1
		}
		const hex = "0123456789abcdef"
		return append(dst, '\\', 'x', hex[r>>4], hex[r&0xf]), 4
	}
	if r < 0x7f {
		return append(dst, byte(r)), 1
	}
	if !keepRune(r) {
		return dst, 0
	}
	return utf8.AppendRune(dst, r), 1
}

// startCSI enters the CSI state; the caller has set seqLen.
func (c *Cleaner) startCSI() {
	c.st = stCSI
	c.marker, c.csiAny, c.csiBad, c.csiInter = 0, false, false, false
	c.nparams, c.cur, c.first, c.hasOne = 0, 0, 0, false
}

// csiByte handles one byte 0x20–0x7E inside a CSI sequence.
func (c *Cleaner) csiByte(b byte, ev *Events) {
	started := c.csiAny
	c.csiAny = true
	switch {
	case b >= '0' && b <= '9':
		if c.csiInter {
			c.csiBad = true
		}
		if c.cur < maxParam {
			c.cur = c.cur*10 + int(b-'0')
		}
	case b == ';':
		if c.csiInter {
			c.csiBad = true
		}
		c.endParam()
	case b >= 0x3c && b <= 0x3f: // private marker
		if started {
			c.csiBad = true // only valid as the first byte
		}
		c.marker = b
	case b == ':': // sub-parameters: not one of ours
		c.csiBad = true
	case b < 0x30: // intermediate
		c.csiInter = true
	default: // final byte 0x40–0x7E
		c.endParam()
		c.st = stGround
		if c.csiBad || c.csiInter {
			return
		}
		switch b {
		case 'n':
			if c.nparams == 1 && c.first == 6 && (c.marker == 0 || c.marker == '?') {
				ev.CursorQueries++
			}
		case 'h', 'l':
			if c.marker == '?' && c.hasOne {
				if b == 'h' {
					ev.CursorMode = 1
				} else {
					ev.CursorMode = -1
				}
			}
		}
	}
}

func (c *Cleaner) endParam() {
	if c.nparams == 0 {
		c.first = c.cur
	}
	if c.cur == 1 {
		c.hasOne = true
	}
	if c.nparams < 255 {
		c.nparams++
	}
	c.cur = 0
}

// keepRune reports whether a decoded non-ASCII code point stays in the text.
func keepRune(r rune) bool {
	if r < 0xa0 {
		return false // C1 controls (and anything below, never passed here)
	}
	if r >= 0xd800 && r <= 0xdfff {
		return false // surrogates: cannot come out of a decoder, checked anyway
	}
	return !isFormat(r)
}

// isFormat reports whether r is in Unicode category Cf. The ranges checked
// first hold no Cf code point and cover most text (Latin, Greek, Cyrillic,
// symbols, CJK, Hangul); the test checks this against the unicode tables.
func isFormat(r rune) bool {
	switch {
	case r < 0x600:
		return r == 0xad
	case r >= 0x2070 && r < 0xfeff:
		return false
	}
	return unicode.Is(unicode.Cf, r)
}

// scanPlain returns the index of the first byte at or after i that is not
// printable ASCII, TAB, LF or CR, or len(p). It tests 32 bytes per step:
// first whether all of them are printable ASCII (cheap, and true of most
// blocks of long lines), and only if not, exactly.
func scanPlain(p []byte, i int) int {
	for len(p)-i >= 32 {
		q := p[i : i+32 : i+32]
		w0 := binary.LittleEndian.Uint64(q[0:8])
		w1 := binary.LittleEndian.Uint64(q[8:16])
		w2 := binary.LittleEndian.Uint64(q[16:24])
		w3 := binary.LittleEndian.Uint64(q[24:32])
		if (printable(w0)|printable(w1)|printable(w2)|printable(w3))&msb != 0 {
			m0, m1, m2, m3 := special(w0), special(w1), special(w2), special(w3)
			if (m0|m1|m2|m3)&msb != 0 {
				switch {
				case m0&msb != 0:
					return i + bits.TrailingZeros64(m0&msb)/8
				case m1&msb != 0:
					return i + 8 + bits.TrailingZeros64(m1&msb)/8
				case m2&msb != 0:
					return i + 16 + bits.TrailingZeros64(m2&msb)/8
				}
				return i + 24 + bits.TrailingZeros64(m3&msb)/8
			}
		}
		i += 32
	}
	for len(p)-i >= 8 {
		if m := special(binary.LittleEndian.Uint64(p[i:])) & msb; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	for i < len(p) && plain[p[i]] {
		i++
	}
	return i
}

// printable computes, for the eight bytes of w, a word with the high bit
// of some byte set (mask it with msb) unless all eight are printable ASCII
// 0x20–0x7E. Per byte b < 0x80, b + 0x01 has its high bit set iff b is
// DEL, 0x9f - b iff b < 0x20; a byte >= 0x80 is flagged by w itself, and
// carries and borrows start only in such a byte.
func printable(w uint64) uint64 {
	return w | (w + lsb) | (0x9f9f9f9f9f9f9f9f - w)
}

// special computes, for the eight bytes of w read little-endian, a word
// whose high bit is set in the lowest byte that is not printable ASCII, TAB,
// LF or CR, and in no byte below it; mask the result with msb. Bytes above
// the first such byte may be flagged or not: a carry or borrow can only
// start in a byte that is itself flagged (one with its high bit set or an
// ASCII control), and carries only move upwards.
func special(w uint64) uint64 {
	// Per byte b, for b < 0x80 (exact):
	//   b + 0x01 has its high bit set iff b == 0x7f (DEL);
	//   0x9f - b has it set iff b < 0x20 (a control);
	//   (b ^ 0x0a) + 0x7f has it set iff b != '\n';
	//   ((b ^ 0x09) & 0xfb) + 0x7f has it set iff b is neither '\t' nor '\r'.
	// A byte >= 0x80 is flagged by w itself.
	return w | (w + lsb) |
		((0x9f9f9f9f9f9f9f9f - w) &
			((w ^ 0x0a0a0a0a0a0a0a0a) + lo7) &
			(((w ^ 0x0909090909090909) & 0xfbfbfbfbfbfbfbfb) + lo7))
}
