package session

// skipper routes a PTY's raw output to the emulator, holding back and
// dropping the middle of long runs of plain text that cannot change what the
// screen shows.
//
// Emulating a line feed at the bottom row moves the whole screen, so a
// flood of lines costs the emulator a hundred times what reading it costs.
// Yet once the cursor is on the bottom row, every line feed scrolls one row
// off the top: rows+1 line feeds of plain text later, nothing written before
// them is still on the screen. So within a run of plain text (printable
// characters, CR, LF, TAB, valid UTF-8 and SGR colour sequences, which
// change styles but not text):
//
//   - the first rows+1 CR LF pairs of the run are fed, which leaves the
//     cursor on the bottom row at column 0, whatever came before;
//   - what follows is held back from there on, and of it only the text after
//     the last rows+1 line feeds is kept; a cut is made only just after a
//     CR LF, where the real terminal's cursor is at column 0 of the bottom
//     row, blank after the scroll, as is the emulator's at the start of the
//     held-back text;
//   - anything else (another escape sequence, a control character, invalid
//     UTF-8), a screen read or a resize first feeds what is held back.
//
// A scroll region (DECSTBM, or left and right margins) breaks the premise,
// so once one may be set nothing is held back until it is reset. What the
// screen shows is then the same as if every byte had been fed, except for
// the colours of dropped text, which the screen text does not show, and the
// character a later REP (CSI b) repeats after a run without text.
type skipper struct {
	rows      int
	st        scanState
	seq       []byte // the escape sequence being read, for its classification
	utf8Left  int    // continuation bytes still expected
	margins   bool   // a scroll region may be set: hold nothing back
	noSkip    bool   // left/right margin mode was enabled: never hold back
	prevCR    bool   // the last plain character was CR
	head      int    // CR LF pairs fed since the last break
	deferring bool
	pend      []byte   // held back, starting just after a CR LF on the bottom row
	marks     []lfMark // the line feeds in pend
}

// lfMark is a line feed in the held-back text: the offset just after it,
// and whether CR came right before it.
type lfMark struct {
	off  int
	crlf bool
}

type scanState uint8

const (
	scanGround scanState = iota
	scanEsc              // after ESC (held in seq)
	scanEscInt           // in an ESC sequence with intermediates
	scanCSI              // in a CSI sequence (held in seq)
	scanCSIBrk           // in a CSI sequence already fed
	scanStr              // in an OSC, DCS, APC, PM or SOS string
	scanStrEsc           // after ESC in a string
)

const (
	// maxSeq bounds a CSI sequence held for classification.
	maxSeq = 64
	// maxPend bounds the held-back text; past it (a very long line) it is fed.
	maxPend = 256 << 10
)

// route appends to out the bytes of p to feed now, in order. Whenever held
// back text must go first, route feeds out and then that text through feed
// itself, so everything reaches the emulator in the order it was written.
func (k *skipper) route(out, p []byte, feed func([]byte)) []byte {
	for i := 0; i < len(p); i++ {
		b := p[i]
		if k.st == scanGround && k.utf8Left == 0 && b >= 0x20 && b < 0x7f {
			// The common case, a run of printable ASCII, in one copy: what
			// plain does byte by byte (no line feed among them).
			var j int
			out, j = k.printable(out, p, i, feed)
			i = j - 1
			continue
		}
		if k.utf8Left > 0 && b&0xC0 != 0x80 {
			// A truncated UTF-8 sequence: let the emulator see it as it is.
			k.utf8Left = 0
			out = k.brk(out, nil, feed)
		}
		switch k.st {
		case scanGround:
			out = k.ground(out, b, feed)
		case scanEsc:
			out = k.afterEsc(out, b, feed)
		case scanEscInt:
			out = k.escInt(out, b, feed)
		case scanCSI:
			out = k.inCSI(out, b, feed)
		case scanCSIBrk:
			out = k.csiBrk(out, b, feed)
		case scanStr:
			out = k.inStr(out, b, feed)
		case scanStrEsc:
			out = k.strEsc(out, b, feed)
		}
	}
	return out
}

// printable takes the run of printable ASCII from p[i] on: held back
// while deferring, else appended to out. It returns out and the run's end.
func (k *skipper) printable(out, p []byte, i int, feed func([]byte)) ([]byte, int) {
	j := i + 1
	for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
		j++
	}
	k.prevCR = false
	if k.deferring {
		k.pend = append(k.pend, p[i:j]...)
		if len(k.pend) > maxPend {
			k.flush(feed)
		}
	} else {
		out = append(out, p[i:j]...)
	}
	return out, j
}

// ground routes byte b in the ground state: plain text, or the ESC that starts a sequence.
func (k *skipper) ground(out []byte, b byte, feed func([]byte)) []byte {
	switch {
	case b == 0x1b:
		out = k.startSeq(out, b)
	case b == '\n':
		out = k.plain(out, b, feed)
	case b == '\r' || b == '\t' || (b >= 0x20 && b < 0x7f):
		out = k.plain(out, b, feed)
	case b >= 0x80 && k.utf8Left > 0:
		k.utf8Left--
		out = k.plain(out, b, feed)
	case b >= 0xC2 && b <= 0xDF:
		k.utf8Left = 1
		out = k.plain(out, b, feed)
	case b >= 0xE0 && b <= 0xEF:
		k.utf8Left = 2
		out = k.plain(out, b, feed)
	case b >= 0xF0 && b <= 0xF4:
		k.utf8Left = 3
		out = k.plain(out, b, feed)
	default:
		out = k.brk(out, []byte{b}, feed)
	}
	return out
}

// afterEsc routes byte b after an ESC.
func (k *skipper) afterEsc(out []byte, b byte, feed func([]byte)) []byte {
	switch {
	case b == '[':
		k.st = scanCSI
		k.seq = append(k.seq, b)
		out = k.emit(out, b)
	case b == 0x1b:
		out = k.brk(out, nil, feed) // a lone ESC; b starts anew
		out = k.startSeq(out, b)
	case b == ']' || b == 'P' || b == '_' || b == '^' || b == 'X':
		k.st = scanStr
		out = k.brk(out, []byte{b}, feed)
	case b >= 0x20 && b <= 0x2f:
		k.st = scanEscInt
		out = k.brk(out, []byte{b}, feed)
	case b < 0x20:
		out = k.brk(out, []byte{b}, feed) // executed inside the sequence
	default:
		if b == 'c' { // RIS: a full reset
			k.margins, k.noSkip = false, false
		}
		k.st = scanGround
		out = k.brk(out, []byte{b}, feed)
	}
	return out
}

// escInt routes byte b in an ESC sequence's intermediate bytes.
func (k *skipper) escInt(out []byte, b byte, feed func([]byte)) []byte {
	switch {
	case b == 0x1b:
		out = k.brk(out, nil, feed)
		out = k.startSeq(out, b)
	case b >= 0x20 && b <= 0x2f:
		out = k.brk(out, []byte{b}, feed)
	default:
		k.st = scanGround
		out = k.brk(out, []byte{b}, feed)
	}
	return out
}

// inCSI routes byte b in a CSI sequence held for classification.
func (k *skipper) inCSI(out []byte, b byte, feed func([]byte)) []byte {
	switch {
	case b == 0x1b:
		out = k.brk(out, nil, feed)
		out = k.startSeq(out, b)
	case b < 0x20:
		k.st = scanCSIBrk
		out = k.brk(out, []byte{b}, feed)
	case b >= 0x40 && b <= 0x7e:
		k.seq = append(k.seq, b)
		k.st = scanGround
		out = k.csi(out, feed)
	case len(k.seq) >= maxSeq:
		k.st = scanCSIBrk
		out = k.brk(out, []byte{b}, feed)
	default:
		k.seq = append(k.seq, b)
		out = k.emit(out, b)
	}
	return out
}

// csiBrk routes byte b in a CSI sequence that is fed as it is.
func (k *skipper) csiBrk(out []byte, b byte, feed func([]byte)) []byte {
	switch {
	case b == 0x1b:
		out = k.brk(out, nil, feed)
		out = k.startSeq(out, b)
	case b >= 0x40 && b <= 0x7e:
		k.st = scanGround
		out = k.brk(out, []byte{b}, feed)
	default:
		out = k.brk(out, []byte{b}, feed)
	}
	return out
}

// inStr routes byte b in a string (OSC, DCS, APC, PM, SOS).
func (k *skipper) inStr(out []byte, b byte, feed func([]byte)) []byte {
	switch b {
	case 0x07:
		k.st = scanGround
	case 0x1b:
		k.st = scanStrEsc
	}
	out = k.brk(out, []byte{b}, feed)
	return out
}

// strEsc routes byte b after an ESC in a string.
func (k *skipper) strEsc(out []byte, b byte, feed func([]byte)) []byte {
	switch {
	case b == '[':
		k.st = scanCSIBrk
	case b >= 0x20 && b <= 0x2f:
		k.st = scanEscInt
	case b == 0x1b:
		k.st = scanStrEsc
	default: // ST ("\\") or another sequence's final byte
		k.st = scanGround
	}
	out = k.brk(out, []byte{b}, feed)
	return out
}

// startSeq begins an escape sequence with ESC (b).
func (k *skipper) startSeq(out []byte, b byte) []byte {
	k.st = scanEsc
	k.seq = append(k.seq[:0], b)
	return k.emit(out, b)
}

// emit routes a byte of an escape sequence not yet classified: after what
// came before it, held back or not. Nothing is kept from the emulator for
// want of a classification, so a screen read in the middle of a sequence
// sees what a terminal would; if the sequence turns out not to be SGR, brk
// feeds it, held-back text included, before its final byte.
func (k *skipper) emit(out []byte, b byte) []byte {
	if k.deferring {
		k.pend = append(k.pend, b)
		return out
	}
	return append(out, b)
}

// csi classifies the complete CSI sequence in seq, whose bytes but the
// final one are routed already.
func (k *skipper) csi(out []byte, feed func([]byte)) []byte {
	params, final := k.seq[2:len(k.seq)-1], k.seq[len(k.seq)-1]
	simple := true // digits and separators only
	for _, c := range params {
		if (c < '0' || c > '9') && c != ';' && c != ':' {
			simple = false
			break
		}
	}
	switch {
	case final == 'm' && simple:
		// SGR changes the pen only: plain for the screen's text.
		return k.emit(out, final)
	case final == 'r' && simple:
		k.margins = !fullRegion(params, k.rows)
	case final == 'h' && len(params) > 0 && params[0] == '?' && hasParam(params[1:], "69"):
		k.noSkip = true // DECLRMM: left and right margins may follow
	}
	return k.brk(out, []byte{final}, feed)
}

// fullRegion reports whether DECSTBM parameters name the whole screen.
func fullRegion(params []byte, rows int) bool {
	top, bottom, i := 0, 0, 0
	for ; i < len(params) && params[i] != ';'; i++ {
		top = min(top*10+int(params[i]-'0'), 1<<20)
	}
	for i++; i < len(params); i++ {
		if params[i] < '0' || params[i] > '9' {
			return false
		}
		bottom = min(bottom*10+int(params[i]-'0'), 1<<20)
	}
	return top <= 1 && (bottom == 0 || bottom >= rows)
}

// hasParam reports whether the ;-separated params include p.
func hasParam(params []byte, p string) bool {
	for len(params) > 0 {
		i := 0
		for i < len(params) && params[i] != ';' {
			i++
		}
		if string(params[:i]) == p {
			return true
		}
		params = params[min(i+1, len(params)):]
	}
	return false
}

// plain routes one plain byte.
func (k *skipper) plain(out []byte, b byte, feed func([]byte)) []byte {
	crlf := b == '\n' && k.prevCR
	k.prevCR = b == '\r'
	if k.deferring {
		k.pend = append(k.pend, b)
		if b == '\n' {
			k.marks = append(k.marks, lfMark{off: len(k.pend), crlf: crlf})
			k.trim()
		}
		if len(k.pend) > maxPend {
			k.flush(feed)
		}
		return out
	}
	out = append(out, b)
	if crlf {
		k.head++
		if k.head > k.rows && !k.margins && !k.noSkip {
			feed(out)
			out = out[:0]
			k.deferring = true
		}
	}
	return out
}

// trim drops held-back text that rows+1 later line feeds scroll away.
func (k *skipper) trim() {
	keep := k.rows + 1
	if len(k.marks) < 2*keep+8 {
		return // amortise the copy
	}
	j := len(k.marks) - 1 - keep
	for j >= 0 && !k.marks[j].crlf {
		j--
	}
	if j < 0 {
		return
	}
	cut := k.marks[j].off
	n := copy(k.pend, k.pend[cut:])
	k.pend = k.pend[:n]
	m := copy(k.marks, k.marks[j+1:])
	k.marks = k.marks[:m]
	for i := range k.marks {
		k.marks[i].off -= cut
	}
}

// brk routes bytes that must be fed in order, after what is held back.
func (k *skipper) brk(out, b []byte, feed func([]byte)) []byte {
	if k.deferring {
		k.flush(feed) // out is empty while deferring
	}
	k.head = 0
	return append(out, b...)
}

// flush feeds what is held back and starts a new run.
func (k *skipper) flush(feed func([]byte)) {
	if len(k.pend) > 0 {
		feed(k.pend)
	}
	k.pend, k.marks = k.pend[:0], k.marks[:0]
	if cap(k.pend) > maxTermScratch {
		k.pend, k.marks = nil, nil
	}
	k.deferring = false
	k.head = 0
}
