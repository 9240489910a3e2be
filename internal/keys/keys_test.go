package keys

import (
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpecExampleSendsSixteenBytes(t *testing.T) {
	in := Input{
		Literal: "你好😀",
		Hex:     []string{"c3", "a9", "00", "ff"},
		Keys:    []string{"C-c", "Enter"},
	}
	for _, mode := range []CursorMode{CursorUnknown, CursorNormal, CursorApplication} {
		t.Run("the example encodes the same in "+mode.String()+" mode", func(t *testing.T) {
			data, warnings, err := Encode(in, mode)
			require.NoError(t, err)
			assert.Empty(t, warnings)
			assert.Equal(t, "e4bda0e5a5bdf09f9880c3a900ff030d", hex.EncodeToString(data))
			assert.Len(t, data, 16)
		})
	}
}

// keyCase is one key token and its bytes in normal and application mode.
// app is empty when the bytes are the same in both modes.
type keyCase struct {
	name   string
	tok    string
	normal string
	app    string
	warn   string // substring expected in the only warning; "" means none
}

const esc = "\x1b"

var keyCases = []keyCase{
	// The key table, every alias.
	{name: "Enter sends CR", tok: "Enter", normal: "\r"},
	{name: "Return is an alias of Enter", tok: "Return", normal: "\r"},
	{name: "Tab sends HT", tok: "Tab", normal: "\t"},
	{name: "Escape sends ESC", tok: "Escape", normal: esc},
	{name: "Esc is an alias of Escape", tok: "Esc", normal: esc},
	{name: "Space sends a space", tok: "Space", normal: " "},
	{name: "BSpace sends DEL", tok: "BSpace", normal: "\x7f"},
	{name: "Backspace is an alias of BSpace", tok: "Backspace", normal: "\x7f"},
	{name: "Up depends on the cursor mode", tok: "Up", normal: esc + "[A", app: esc + "OA"},
	{name: "Down depends on the cursor mode", tok: "Down", normal: esc + "[B", app: esc + "OB"},
	{name: "Right depends on the cursor mode", tok: "Right", normal: esc + "[C", app: esc + "OC"},
	{name: "Left depends on the cursor mode", tok: "Left", normal: esc + "[D", app: esc + "OD"},
	{name: "Home depends on the cursor mode", tok: "Home", normal: esc + "[1~", app: esc + "OH"},
	{name: "End depends on the cursor mode", tok: "End", normal: esc + "[4~", app: esc + "OF"},
	{name: "PageUp sends CSI 5 tilde", tok: "PageUp", normal: esc + "[5~"},
	{name: "PgUp is an alias of PageUp", tok: "PgUp", normal: esc + "[5~"},
	{name: "PPage is an alias of PageUp", tok: "PPage", normal: esc + "[5~"},
	{name: "PageDown sends CSI 6 tilde", tok: "PageDown", normal: esc + "[6~"},
	{name: "PgDn is an alias of PageDown", tok: "PgDn", normal: esc + "[6~"},
	{name: "NPage is an alias of PageDown", tok: "NPage", normal: esc + "[6~"},
	{name: "Insert sends CSI 2 tilde", tok: "Insert", normal: esc + "[2~"},
	{name: "IC is an alias of Insert", tok: "IC", normal: esc + "[2~"},
	{name: "Delete sends CSI 3 tilde", tok: "Delete", normal: esc + "[3~"},
	{name: "Del is an alias of Delete", tok: "Del", normal: esc + "[3~"},
	{name: "DC is an alias of Delete", tok: "DC", normal: esc + "[3~"},
	{name: "F1 sends SS3 P", tok: "F1", normal: esc + "OP"},
	{name: "F2 sends SS3 Q", tok: "F2", normal: esc + "OQ"},
	{name: "F3 sends SS3 R", tok: "F3", normal: esc + "OR"},
	{name: "F4 sends SS3 S", tok: "F4", normal: esc + "OS"},
	{name: "F5 sends CSI 15 tilde", tok: "F5", normal: esc + "[15~"},
	{name: "F6 sends CSI 17 tilde", tok: "F6", normal: esc + "[17~"},
	{name: "F7 sends CSI 18 tilde", tok: "F7", normal: esc + "[18~"},
	{name: "F8 sends CSI 19 tilde", tok: "F8", normal: esc + "[19~"},
	{name: "F9 sends CSI 20 tilde", tok: "F9", normal: esc + "[20~"},
	{name: "F10 sends CSI 21 tilde", tok: "F10", normal: esc + "[21~"},
	{name: "F11 sends CSI 23 tilde", tok: "F11", normal: esc + "[23~"},
	{name: "F12 sends CSI 24 tilde", tok: "F12", normal: esc + "[24~"},
	{name: "KP slash sends SS3 o", tok: "KP/", normal: esc + "Oo"},
	{name: "KP star sends SS3 j", tok: "KP*", normal: esc + "Oj"},
	{name: "KP minus sends SS3 m", tok: "KP-", normal: esc + "Om"},
	{name: "KP plus sends SS3 k", tok: "KP+", normal: esc + "Ok"},
	{name: "KPEnter sends SS3 M", tok: "KPEnter", normal: esc + "OM"},
	{name: "KP0 sends SS3 p", tok: "KP0", normal: esc + "Op"},
	{name: "KP1 sends SS3 q", tok: "KP1", normal: esc + "Oq"},
	{name: "KP2 sends SS3 r", tok: "KP2", normal: esc + "Or"},
	{name: "KP3 sends SS3 s", tok: "KP3", normal: esc + "Os"},
	{name: "KP4 sends SS3 t", tok: "KP4", normal: esc + "Ot"},
	{name: "KP5 sends SS3 u", tok: "KP5", normal: esc + "Ou"},
	{name: "KP6 sends SS3 v", tok: "KP6", normal: esc + "Ov"},
	{name: "KP7 sends SS3 w", tok: "KP7", normal: esc + "Ow"},
	{name: "KP8 sends SS3 x", tok: "KP8", normal: esc + "Ox"},
	{name: "KP9 sends SS3 y", tok: "KP9", normal: esc + "Oy"},
	{name: "KP dot sends SS3 n", tok: "KP.", normal: esc + "On"},

	// Case-insensitive names, surrounding space.
	{name: "names are case-insensitive", tok: "eNtEr", normal: "\r"},
	{name: "upper-case arrow names work", tok: "UP", normal: esc + "[A", app: esc + "OA"},
	{name: "lower-case keypad names work", tok: "kpenter", normal: esc + "OM"},
	{name: "surrounding whitespace is trimmed", tok: "  Tab\t", normal: "\t"},

	// Back-tab.
	{name: "S-Tab sends CSI Z", tok: "S-Tab", normal: esc + "[Z"},
	{name: "BTab sends CSI Z", tok: "BTab", normal: esc + "[Z"},
	{name: "lower-case s-tab sends CSI Z", tok: "s-tab", normal: esc + "[Z"},
	{name: "S-BTab is still CSI Z", tok: "S-BTab", normal: esc + "[Z"},
	{name: "M-S-Tab prefixes ESC to CSI Z", tok: "M-S-Tab", normal: esc + esc + "[Z"},
	{name: "C-S-Tab ignores ctrl with a warning", tok: "C-S-Tab", normal: esc + "[Z", warn: "C-"},

	// Modified cursor and tilde keys use the xterm parameter in every mode.
	{name: "M-up sends CSI 1;3 A", tok: "M-up", normal: esc + "[1;3A"},
	{name: "C-right sends CSI 1;5 C", tok: "C-right", normal: esc + "[1;5C"},
	{name: "S-Left sends CSI 1;2 D", tok: "S-Left", normal: esc + "[1;2D"},
	{name: "C-M-Down sends CSI 1;7 B", tok: "C-M-Down", normal: esc + "[1;7B"},
	{name: "S-M-C-Up sends CSI 1;8 A", tok: "S-M-C-Up", normal: esc + "[1;8A"},
	{name: "S-Home sends CSI 1;2 H", tok: "S-Home", normal: esc + "[1;2H"},
	{name: "C-End sends CSI 1;5 F", tok: "C-End", normal: esc + "[1;5F"},
	{name: "S-M-C-PgDn sends CSI 6;8 tilde", tok: "S-M-C-PgDn", normal: esc + "[6;8~"},
	{name: "C-PageUp sends CSI 5;5 tilde", tok: "C-PageUp", normal: esc + "[5;5~"},
	{name: "M-Insert sends CSI 2;3 tilde", tok: "M-Insert", normal: esc + "[2;3~"},
	{name: "S-Del sends CSI 3;2 tilde", tok: "S-Del", normal: esc + "[3;2~"},
	{name: "repeated prefixes count once", tok: "C-C-M-M-Left", normal: esc + "[1;7D"},
	{name: "mixed-case prefixes on an arrow work", tok: "c-M-s-right", normal: esc + "[1;8C"},

	// Single characters.
	{name: "a single character is sent as is", tok: "a", normal: "a"},
	{name: "a single upper-case character keeps its case", tok: "A", normal: "A"},
	{name: "C-c sends ETX", tok: "C-c", normal: "\x03"},
	{name: "C-C sends ETX", tok: "C-C", normal: "\x03"},
	{name: "c-d with a lower-case prefix sends EOT", tok: "c-d", normal: "\x04"},
	{name: "C-@ sends NUL", tok: "C-@", normal: "\x00"},
	{name: "C-[ sends ESC", tok: "C-[", normal: esc},
	{name: "C-backslash sends FS", tok: `C-\`, normal: "\x1c"},
	{name: "C-] sends GS", tok: "C-]", normal: "\x1d"},
	{name: "C-^ sends RS", tok: "C-^", normal: "\x1e"},
	{name: "C-_ sends US", tok: "C-_", normal: "\x1f"},
	{name: "C-? sends DEL", tok: "C-?", normal: "\x7f"},
	{name: "M-x prefixes ESC", tok: "M-x", normal: esc + "x"},
	{name: "M-X keeps the case", tok: "M-X", normal: esc + "X"},
	{name: "S-a upper-cases", tok: "S-a", normal: "A"},
	{name: "S-A stays upper-case", tok: "S-A", normal: "A"},
	{name: "M-S-b sends ESC B", tok: "M-S-b", normal: esc + "B"},
	{name: "C-M-x sends ESC CAN", tok: "C-M-x", normal: esc + "\x18"},
	{name: "c-M-X in mixed case sends ESC CAN", tok: "c-M-X", normal: esc + "\x18"},
	{name: "M-C-M-C-x with repeats sends ESC CAN", tok: "M-C-M-C-x", normal: esc + "\x18"},
	{name: "M-- sends ESC minus", tok: "M--", normal: esc + "-"},
	{name: "a single non-ASCII character is its UTF-8", tok: "é", normal: "é"},
	{name: "M-é prefixes ESC", tok: "M-é", normal: esc + "é"},
	{name: "C-é sends the character with a warning", tok: "C-é", normal: "é", warn: "C-"},
	{name: "C-1 sends the digit with a warning", tok: "C-1", normal: "1", warn: "C-"},
	{name: "S-1 sends the digit with a warning", tok: "S-1", normal: "1", warn: "S-"},
	{name: "a single caret is a character", tok: "^", normal: "^"},
	{name: "a single minus is a character", tok: "-", normal: "-"},

	// ^X forms.
	{name: "^C sends ETX", tok: "^C", normal: "\x03"},
	{name: "^c in lower case sends ETX", tok: "^c", normal: "\x03"},
	{name: "^? sends DEL", tok: "^?", normal: "\x7f"},
	{name: "^@ sends NUL", tok: "^@", normal: "\x00"},
	{name: "^[ sends ESC", tok: "^[", normal: esc},
	{name: "^^ sends RS", tok: "^^", normal: "\x1e"},
	{name: "M-^d sends ESC EOT", tok: "M-^d", normal: esc + "\x04"},
	{name: "^1 has no control form and is sent literally", tok: "^1", normal: "^1"},

	// Modifiers on named keys without a modified form.
	{name: "M-Enter prefixes ESC", tok: "M-Enter", normal: esc + "\r"},
	{name: "M-Escape prefixes ESC", tok: "M-Escape", normal: esc + esc},
	{name: "M-BSpace prefixes ESC", tok: "M-BSpace", normal: esc + "\x7f"},
	{name: "M-F5 prefixes ESC", tok: "M-F5", normal: esc + esc + "[15~"},
	{name: "M-KP5 prefixes ESC", tok: "M-KP5", normal: esc + esc + "Ou"},
	{name: "C-Space sends NUL", tok: "C-Space", normal: "\x00"},
	{name: "C-M-Space sends ESC NUL", tok: "C-M-Space", normal: esc + "\x00"},
	{name: "S-Space ignores shift with a warning", tok: "S-Space", normal: " ", warn: "S-"},
	{name: "C-Enter ignores ctrl with a warning", tok: "C-Enter", normal: "\r", warn: "C-"},
	{name: "C-Tab ignores ctrl with a warning", tok: "C-Tab", normal: "\t", warn: "C-"},
	{name: "S-F1 ignores shift with a warning", tok: "S-F1", normal: esc + "OP", warn: "S-"},
	{name: "C-S-M-F12 keeps alt and warns about the rest", tok: "C-S-M-F12", normal: esc + esc + "[24~", warn: "C- and S-"},
	{name: "C-KPEnter ignores ctrl with a warning", tok: "C-KPEnter", normal: esc + "OM", warn: "C-"},

	// Unknown tokens.
	{name: "an unknown word is sent literally without a warning", tok: "hello", normal: "hello"},
	{name: "an unknown word keeps its case", tok: "HeLLo", normal: "HeLLo"},
	{name: "an unknown word with modifiers is sent literally with a warning", tok: "C-foo", normal: "C-foo", warn: `Unknown key "C-foo"`},
	{name: "a bare prefix is an unknown token", tok: "C-", normal: "C-"},
	{name: "a multi-rune emoji is sent literally", tok: "👍🏽", normal: "👍🏽"},
	{name: "F13 is unknown and sent literally", tok: "F13", normal: "F13"},
}

func TestEncodeKeys(t *testing.T) {
	for _, tc := range keyCases {
		for _, mode := range []CursorMode{CursorNormal, CursorApplication} {
			want := tc.normal
			if mode == CursorApplication && tc.app != "" {
				want = tc.app
			}
			t.Run(tc.name+" in "+mode.String()+" mode", func(t *testing.T) {
				data, warnings, err := Encode(Input{Keys: []string{tc.tok}}, mode)
				require.NoError(t, err)
				assert.Equal(t, []byte(want), data, "token %q", tc.tok)
				if tc.warn == "" {
					assert.Empty(t, warnings)
				} else {
					require.Len(t, warnings, 1)
					assert.Contains(t, warnings[0], tc.warn)
				}
			})
		}
	}
}

func TestEncodeUnknownCursorMode(t *testing.T) {
	for _, tok := range []string{"Up", "down", "RIGHT", "Left", "Home", "End"} {
		t.Run("unmodified "+tok+" fails while the mode is unknown", func(t *testing.T) {
			data, warnings, err := Encode(Input{Literal: "x", Keys: []string{"a", tok}}, CursorUnknown)
			require.ErrorIs(t, err, ErrCursorModeUnknown)
			assert.Nil(t, data)
			assert.Nil(t, warnings)
		})
	}
	t.Run("an out-of-range mode is treated as unknown", func(t *testing.T) {
		_, _, err := Encode(Input{Keys: []string{"Up"}}, CursorMode(42))
		require.ErrorIs(t, err, ErrCursorModeUnknown)
	})
	for _, tc := range keyCases {
		if tc.app != "" {
			continue
		}
		t.Run(tc.name+" also while the mode is unknown", func(t *testing.T) {
			data, _, err := Encode(Input{Keys: []string{tc.tok}}, CursorUnknown)
			require.NoError(t, err)
			assert.Equal(t, []byte(tc.normal), data)
		})
	}
}

func TestEncodeHex(t *testing.T) {
	tests := []struct {
		name  string
		hex   []string
		want  []byte
		warns []string
	}{
		{name: "two digits give one byte", hex: []string{"1b"}, want: []byte{0x1b}},
		{name: "ff is the raw byte, not UTF-8", hex: []string{"ff"}, want: []byte{0xff}},
		{name: "upper-case digits work", hex: []string{"AB"}, want: []byte{0xab}},
		{name: "one digit gives one byte", hex: []string{"7"}, want: []byte{0x07}},
		{name: "a 0x prefix is accepted", hex: []string{"0x0d"}, want: []byte{0x0d}},
		{name: "a 0X prefix with one digit is accepted", hex: []string{"0Xa"}, want: []byte{0x0a}},
		{name: "0 alone is a zero byte", hex: []string{"0"}, want: []byte{0x00}},
		{name: "surrounding whitespace is trimmed", hex: []string{" 41\t"}, want: []byte{0x41}},
		{name: "several entries keep their order", hex: []string{"68", "0x69", "a"}, want: []byte("hi\n")},
		{name: "non-hex digits are skipped with a warning", hex: []string{"zz"}, warns: []string{"Invalid hex byte: zz"}},
		{name: "three digits are skipped with a warning", hex: []string{"100"}, warns: []string{"Invalid hex byte: 100"}},
		{name: "a bare prefix is skipped with a warning", hex: []string{"0x"}, warns: []string{"Invalid hex byte: 0x"}},
		{name: "an empty entry is skipped with a warning", hex: []string{""}, warns: []string{"Invalid hex byte: "}},
		{name: "a sign is skipped with a warning", hex: []string{"+1"}, warns: []string{"Invalid hex byte: +1"}},
		{name: "the warning quotes the raw entry", hex: []string{" g1 "}, warns: []string{"Invalid hex byte:  g1 "}},
		{
			name:  "valid entries around an invalid one are kept",
			hex:   []string{"41", "0xzz", "42"},
			want:  []byte("AB"),
			warns: []string{"Invalid hex byte: 0xzz"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, warnings, err := Encode(Input{Hex: tc.hex}, CursorUnknown)
			require.NoError(t, err)
			assert.Equal(t, tc.want, data)
			assert.Equal(t, tc.warns, warnings)
		})
	}
}

func TestEncodeOrderAndEmptyInput(t *testing.T) {
	t.Run("literal then hex then keys are concatenated in that order", func(t *testing.T) {
		data, warnings, err := Encode(Input{Literal: "ls", Hex: []string{"20"}, Keys: []string{"-", "Enter"}}, CursorNormal)
		require.NoError(t, err)
		assert.Empty(t, warnings)
		assert.Equal(t, []byte("ls -\r"), data)
	})
	t.Run("an empty input sends nothing", func(t *testing.T) {
		data, warnings, err := Encode(Input{}, CursorUnknown)
		require.NoError(t, err)
		assert.Empty(t, data)
		assert.Empty(t, warnings)
	})
	t.Run("empty and blank tokens are ignored", func(t *testing.T) {
		data, warnings, err := Encode(Input{Keys: []string{"", "  ", "\t"}}, CursorUnknown)
		require.NoError(t, err)
		assert.Empty(t, data)
		assert.Empty(t, warnings)
	})
	t.Run("a literal is sent byte for byte, even when invalid UTF-8", func(t *testing.T) {
		data, _, err := Encode(Input{Literal: "a\xffb\x00"}, CursorUnknown)
		require.NoError(t, err)
		assert.Equal(t, []byte("a\xffb\x00"), data)
	})
	t.Run("warnings follow the order of the input", func(t *testing.T) {
		_, warnings, err := Encode(Input{Hex: []string{"x"}, Keys: []string{"C-Enter", "M-foo"}}, CursorNormal)
		require.NoError(t, err)
		require.Len(t, warnings, 3)
		assert.Equal(t, "Invalid hex byte: x", warnings[0])
		assert.Contains(t, warnings[1], `"C-Enter"`)
		assert.Equal(t, `Unknown key "M-foo" sent literally.`, warnings[2])
	})
}

func TestCursorModeString(t *testing.T) {
	assert.Equal(t, "unknown", CursorUnknown.String())
	assert.Equal(t, "normal", CursorNormal.String())
	assert.Equal(t, "application", CursorApplication.String())
	assert.Equal(t, "CursorMode(9)", CursorMode(9).String())
}

// FuzzEncode splits keys and hex on newlines so that one fuzz input carries
// several tokens.
func FuzzEncode(f *testing.F) {
	f.Add("你好😀", "c3\na9\n00\nff", "C-c\nEnter", 0)
	f.Add("", "", "Up\nM-up\nS-M-C-PgDn\n^?\nc-M-X", 1)
	f.Add("", "0x1b\nzz\n", "S-Tab\nBTab\nKP.\nC-é\nC-foo\n^", 2)
	f.Add("x", "", "C-\nM--\n \n\xff\nS-\xc3", 0)
	f.Add("plain", "", "", 3)
	f.Fuzz(func(t *testing.T, literal, hexLines, keyLines string, modeN int) {
		in := Input{Literal: literal}
		if hexLines != "" {
			in.Hex = strings.Split(hexLines, "\n")
		}
		if keyLines != "" {
			in.Keys = strings.Split(keyLines, "\n")
		}
		mode := CursorMode(modeN % 4)

		data, warnings, err := Encode(in, mode)
		normal, _, normalErr := Encode(in, CursorNormal)
		require.NoError(t, normalErr, "normal mode never fails")
		switch {
		case err != nil:
			require.ErrorIs(t, err, ErrCursorModeUnknown)
			require.NotEqual(t, CursorApplication, mode)
			require.Nil(t, data)
			require.Nil(t, warnings)
		case mode != CursorApplication:
			require.Equal(t, normal, data, "a successful unknown-mode call matches normal mode")
		}

		// The output is the concatenation of each part on its own.
		var want []byte
		want = append(want, literal...)
		for _, h := range in.Hex {
			b, _, err := Encode(Input{Hex: []string{h}}, CursorNormal)
			require.NoError(t, err)
			require.LessOrEqual(t, len(b), 1, "one hex entry gives at most one byte")
			want = append(want, b...)
		}
		for _, tok := range in.Keys {
			b, w, err := Encode(Input{Keys: []string{tok}}, CursorNormal)
			require.NoError(t, err)
			if strings.TrimSpace(tok) != "" {
				require.True(t, len(b) > 0 || len(w) > 0, "token %q has no effect", tok)
			} else {
				require.Empty(t, b)
				require.Empty(t, w)
			}
			for _, s := range w {
				require.True(t, utf8.ValidString(s), "warning is valid UTF-8")
			}
			want = append(want, b...)
		}
		require.Equal(t, want, normal)

		lit, w, err := Encode(Input{Literal: literal}, mode)
		require.NoError(t, err)
		require.Empty(t, w)
		require.Equal(t, literal, string(lit), "a literal-only input is sent as is")
	})
}
