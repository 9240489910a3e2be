// Package keys turns the arguments of the send-keys action into the exact
// bytes to write to a pseudo-terminal.
//
// The contract is section 7 of the bgexec spec ("Key tokens"): literal text is
// sent as its UTF-8 bytes, hex entries as raw bytes, and key tokens such as
// "Enter", "C-c", "^D", "M-Up" or "S-M-C-PgDn" as the sequences an xterm-style
// terminal would produce for those keys. Cursor keys depend on the terminal's
// cursor-key mode, which the caller tracks from the program's output and passes
// in as a [CursorMode].
//
// Choices the spec leaves open:
//   - "^X" means the same as "C-X" and combines with other prefixes ("M-^c").
//   - Ctrl on the named key Space sends NUL (as xterm and tmux do).
//   - Shift on Tab, and the name BTab, send ESC[Z; Ctrl on them is ignored.
//   - Ctrl and Shift on other named keys without a modified form (Enter,
//     Escape, BSpace, F-keys, keypad) are ignored with a warning; Alt still
//     prefixes ESC.
//   - Shift on a single character other than a letter, and Ctrl on a single
//     character with no control code, are ignored with a warning.
//   - A token made only of a prefix ("C-", "M-") has no modifier: it is an
//     unknown two-character token and is sent literally.
//   - An unknown multi-character token is sent as given, prefixes included
//     ("C-foo" sends the five bytes "C-foo"), with a warning if it had any.
package keys

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CursorMode is the terminal's cursor-key mode (DECCKM) as tracked from the
// program's output.
type CursorMode int

const (
	// CursorUnknown is the mode of a PTY session that has printed nothing yet.
	// Unmodified arrow, Home and End keys cannot be encoded in this mode.
	CursorUnknown CursorMode = iota
	// CursorNormal is the default mode, also set by ESC[?1l.
	CursorNormal
	// CursorApplication is set by ESC[?1h; cursor keys are sent as ESC O x.
	CursorApplication
)

// String returns "unknown", "normal" or "application".
func (m CursorMode) String() string {
	switch m {
	case CursorUnknown:
		return "unknown"
	case CursorNormal:
		return "normal"
	case CursorApplication:
		return "application"
	}
	return "CursorMode(" + strconv.Itoa(int(m)) + ")"
}

// ErrCursorModeUnknown is returned by [Encode] when an unmodified Up, Down,
// Left, Right, Home or End key is sent while the cursor-key mode is not known,
// because the right bytes depend on that mode.
var ErrCursorModeUnknown = errors.New("keys: cursor key mode is not known yet")

// Input is one send-keys call. Its fields are sent in the order literal, hex,
// keys.
type Input struct {
	// Literal is text sent as its UTF-8 bytes, unchanged.
	Literal string
	// Hex holds one byte per entry: one or two hex digits with an optional
	// 0x or 0X prefix, surrounding whitespace ignored ("1b", "0x0d", "7").
	Hex []string
	// Keys holds key tokens as described in the package documentation.
	Keys []string
}

// Encode returns the bytes of in.Literal, then of in.Hex, then of in.Keys,
// concatenated, as they are to be written to the terminal in one write.
//
// Invalid hex entries are skipped and reported in warnings; ignored modifiers
// and unknown tokens sent literally are reported too. Warnings are
// human-readable sentences such as "Invalid hex byte: zz".
//
// The error is non-nil only when an unmodified Up, Down, Left, Right, Home or
// End token is sent while mode is not [CursorNormal] or [CursorApplication];
// it is then [ErrCursorModeUnknown] and data and warnings are nil.
//
// Encode is a pure function: it keeps no state and is safe for concurrent use.
func Encode(in Input, mode CursorMode) (data []byte, warnings []string, err error) {
	data = append(data, in.Literal...)
	for _, raw := range in.Hex {
		b, ok := parseHexByte(raw)
		if !ok {
			warnings = append(warnings, "Invalid hex byte: "+raw)
			continue
		}
		data = append(data, b)
	}
	for _, tok := range in.Keys {
		var warn string
		data, warn, err = appendKey(data, tok, mode)
		if err != nil {
			return nil, nil, err
		}
		if warn != "" {
			warnings = append(warnings, warn)
		}
	}
	return data, warnings, nil
}

// parseHexByte parses one hex entry: 1–2 hex digits, optional 0x prefix.
func parseHexByte(raw string) (byte, bool) {
	s := strings.TrimSpace(raw)
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
	}
	if len(s) < 1 || len(s) > 2 {
		return 0, false
	}
	var b byte
	for i := 0; i < len(s); i++ {
		d, ok := hexDigit(s[i])
		if !ok {
			return 0, false
		}
		b = b<<4 | d
	}
	return b, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// mods is a set of modifiers.
type mods uint8

const (
	shift mods = 1 << iota
	alt
	ctrl
)

// xterm returns the xterm modifier parameter 1 + shift·1 + alt·2 + ctrl·4;
// the bit values of mods are chosen so that this is m+1.
func (m mods) xterm() int { return int(m) + 1 }

// String lists the prefixes of m, such as "C- and S-".
func (m mods) String() string {
	var names []string
	for _, p := range [...]struct {
		m    mods
		name string
	}{{ctrl, "C-"}, {alt, "M-"}, {shift, "S-"}} {
		if m&p.m != 0 {
			names = append(names, p.name)
		}
	}
	return strings.Join(names, " and ")
}

// namedKey describes one named key. Exactly one of the shapes applies:
//   - cursor != 0: a cursor key, seq in normal mode, ESC O cursor in
//     application mode, ESC[1;m cursor when modified;
//   - tilde != "": seq unmodified, ESC[tilde;m~ when modified;
//   - otherwise a plain key: seq, ESC-prefixed for Alt; shiftSeq and ctrlSeq,
//     when set, are what Shift or Ctrl produce instead of being ignored.
type namedKey struct {
	seq      string
	cursor   byte
	tilde    string
	shiftSeq string
	ctrlSeq  string
}

// namedKeys maps lower-case key names to keys.
var namedKeys = func() map[string]namedKey {
	const esc = "\x1b"
	table := []struct {
		names string // space-separated aliases
		key   namedKey
	}{
		{"enter return", namedKey{seq: "\r"}},
		{"tab", namedKey{seq: "\t", shiftSeq: esc + "[Z"}},
		{"btab", namedKey{seq: esc + "[Z", shiftSeq: esc + "[Z"}},
		{"escape esc", namedKey{seq: esc}},
		{"space", namedKey{seq: " ", ctrlSeq: "\x00"}},
		{"bspace backspace", namedKey{seq: "\x7f"}},
		{"up", namedKey{seq: esc + "[A", cursor: 'A'}},
		{"down", namedKey{seq: esc + "[B", cursor: 'B'}},
		{"right", namedKey{seq: esc + "[C", cursor: 'C'}},
		{"left", namedKey{seq: esc + "[D", cursor: 'D'}},
		{"home", namedKey{seq: esc + "[1~", cursor: 'H'}},
		{"end", namedKey{seq: esc + "[4~", cursor: 'F'}},
		{"insert ic", namedKey{seq: esc + "[2~", tilde: "2"}},
		{"delete del dc", namedKey{seq: esc + "[3~", tilde: "3"}},
		{"pageup pgup ppage", namedKey{seq: esc + "[5~", tilde: "5"}},
		{"pagedown pgdn npage", namedKey{seq: esc + "[6~", tilde: "6"}},
		{"f1", namedKey{seq: esc + "OP"}},
		{"f2", namedKey{seq: esc + "OQ"}},
		{"f3", namedKey{seq: esc + "OR"}},
		{"f4", namedKey{seq: esc + "OS"}},
		{"f5", namedKey{seq: esc + "[15~"}},
		{"f6", namedKey{seq: esc + "[17~"}},
		{"f7", namedKey{seq: esc + "[18~"}},
		{"f8", namedKey{seq: esc + "[19~"}},
		{"f9", namedKey{seq: esc + "[20~"}},
		{"f10", namedKey{seq: esc + "[21~"}},
		{"f11", namedKey{seq: esc + "[23~"}},
		{"f12", namedKey{seq: esc + "[24~"}},
		{"kp/", namedKey{seq: esc + "Oo"}},
		{"kp*", namedKey{seq: esc + "Oj"}},
		{"kp-", namedKey{seq: esc + "Om"}},
		{"kp+", namedKey{seq: esc + "Ok"}},
		{"kpenter", namedKey{seq: esc + "OM"}},
		{"kp.", namedKey{seq: esc + "On"}},
	}
	m := make(map[string]namedKey, 64)
	for _, row := range table {
		for _, name := range strings.Fields(row.names) {
			m[name] = row.key
		}
	}
	for d := byte(0); d <= 9; d++ {
		m["kp"+string('0'+d)] = namedKey{seq: esc + "O" + string('p'+d)}
	}
	return m
}()

// appendKey appends the bytes of one key token to data. It returns at most one
// warning; err is ErrCursorModeUnknown or nil.
func appendKey(data []byte, tok string, mode CursorMode) (_ []byte, warn string, err error) {
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return data, "", nil
	}
	m, base := splitMods(tok)

	if len(base) == 2 && base[0] == '^' {
		if _, ok := ctrlCode(rune(base[1])); ok {
			m |= ctrl
			base = base[1:]
		}
	}
	if utf8.RuneCountInString(base) == 1 {
		return appendChar(data, tok, base, m)
	}

	k, ok := namedKeys[strings.ToLower(base)]
	if !ok {
		if m != 0 {
			warn = fmt.Sprintf("Unknown key %q sent literally.", tok)
		}
		return append(data, tok...), warn, nil
	}

	switch {
	case k.cursor != 0 && m == 0:
		switch mode {
		case CursorNormal:
			return append(data, k.seq...), "", nil
		case CursorApplication:
			return append(data, '\x1b', 'O', k.cursor), "", nil
		}
		return data, "", ErrCursorModeUnknown
	case k.cursor != 0:
		return fmt.Appendf(data, "\x1b[1;%d%c", m.xterm(), k.cursor), "", nil
	case k.tilde != "" && m != 0:
		return fmt.Appendf(data, "\x1b[%s;%d~", k.tilde, m.xterm()), "", nil
	}

	seq, ignored := k.seq, m&^alt
	if ignored&shift != 0 && k.shiftSeq != "" {
		seq, ignored = k.shiftSeq, ignored&^shift
	}
	if ignored&ctrl != 0 && k.ctrlSeq != "" {
		seq, ignored = k.ctrlSeq, ignored&^ctrl
	}
	if m&alt != 0 {
		data = append(data, '\x1b')
	}
	return append(data, seq...), ignoredWarning(tok, ignored), nil
}

// splitMods strips leading C-, M- and S- prefixes (any case, repeated, any
// order) from tok. A prefix is stripped only if something follows it.
func splitMods(tok string) (mods, string) {
	var m mods
	for len(tok) > 2 && tok[1] == '-' {
		switch tok[0] {
		case 'c', 'C':
			m |= ctrl
		case 'm', 'M':
			m |= alt
		case 's', 'S':
			m |= shift
		default:
			return m, tok
		}
		tok = tok[2:]
	}
	return m, tok
}

// appendChar appends a single-character key (base is one rune, or one invalid
// byte) with modifiers m; tok is the whole token, for warnings.
func appendChar(data []byte, tok, base string, m mods) ([]byte, string, error) {
	var ignored mods
	r, _ := utf8.DecodeRuneInString(base)
	out := base
	if m&shift != 0 {
		switch {
		case 'a' <= r && r <= 'z':
			r -= 'a' - 'A'
			out = string(r)
		case 'A' <= r && r <= 'Z':
		default:
			ignored |= shift
		}
	}
	if m&ctrl != 0 {
		if c, ok := ctrlCode(r); ok {
			out = string(rune(c))
		} else {
			ignored |= ctrl
		}
	}
	if m&alt != 0 {
		data = append(data, '\x1b')
	}
	return append(data, out...), ignoredWarning(tok, ignored), nil
}

// ctrlCode returns the control character for r: @ A–Z [ \ ] ^ _ (and a–z)
// map to r&31, ? maps to DEL.
func ctrlCode(r rune) (byte, bool) {
	switch {
	case 'a' <= r && r <= 'z':
		return byte(r) & 31, true
	case '@' <= r && r <= '_':
		return byte(r) & 31, true
	case r == '?':
		return 0x7f, true
	}
	return 0, false
}

func ignoredWarning(tok string, ignored mods) string {
	if ignored == 0 {
		return ""
	}
	return fmt.Sprintf("Modifier %s has no effect on key %q and was ignored.", ignored, tok)
}
