package termtext

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clean runs input through a fresh Cleaner in one Append plus Flush.
func clean(input string) (string, int, Events) {
	var c Cleaner
	out, n, ev := c.Append(nil, []byte(input))
	out, m := c.Flush(out)
	return string(out), n + m, ev
}

// total accumulates events over several Append calls the way a caller
// would: queries add up, the last mode change wins.
func (e *Events) add(o Events) {
	e.CursorQueries += o.CursorQueries
	if o.CursorMode != 0 {
		e.CursorMode = o.CursorMode
	}
}

// cleanChunks feeds input in the given chunks and returns the joined
// output, the total rune count and the accumulated events.
func cleanChunks(chunks [][]byte) ([]byte, int, Events) {
	var (
		c     Cleaner
		out   []byte
		runes int
		total Events
	)
	for _, ch := range chunks {
		var n int
		var ev Events
		out, n, ev = c.Append(out, ch)
		runes += n
		total.add(ev)
	}
	out, n := c.Flush(out)
	return out, runes + n, total
}

func oneByteChunks(p []byte) [][]byte {
	chunks := make([][]byte, len(p))
	for i := range p {
		chunks[i] = p[i : i+1]
	}
	return chunks
}

type cleanCase struct {
	name  string
	input string
	want  string
	ev    Events
}

var cleanCases = []cleanCase{
	// Plain text.
	{"plain ASCII passes through unchanged", "hello, world 123 ~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./", "hello, world 123 ~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./", Events{}},
	{"an empty input gives empty output", "", "", Events{}},
	{"CRLF line endings are kept", "a\r\nb\r\n", "a\r\nb\r\n", Events{}},
	{"tabs, newlines and carriage returns are kept", "a\tb\nc\rd", "a\tb\nc\rd", Events{}},
	{"a long ASCII line crossing the word scanner is kept", strings.Repeat("0123456789abcdef", 9) + "xyz\n", strings.Repeat("0123456789abcdef", 9) + "xyz\n", Events{}},

	// CSI.
	{"an SGR colour sequence is removed whole", "\x1b[1;31mred\x1b[0m plain", "red plain", Events{}},
	{"a CSI with a private marker and intermediates is removed whole", "a\x1b[?25lb\x1b[2 qc\x1b[>4;2md", "abcd", Events{}},
	{"erase-line and cursor moves are removed", "50%\x1b[2K\r\x1b[1A\x1b[10;20H100%", "50%\r100%", Events{}},
	{"a CSI written as C1 U+009B is removed whole", "a\u009b31mb", "ab", Events{}},
	{"a colon sub-parameter SGR is removed whole", "\x1b[38:2:255:0:0mx", "x", Events{}},
	{"a line feed inside a CSI is kept and the CSI goes on", "a\x1b[1\n2mb", "a\nb", Events{}},
	{"a bell inside a CSI is shown and the CSI goes on", "a\x1b[1\a2mb", "a\\x07b", Events{}},
	{"CAN cancels a CSI and the following text is kept", "\x1b[12\x18;5mx", ";5mx", Events{}},
	{"SUB cancels a CSI and the following text is kept", "\x1b[12\x1ahi", "hi", Events{}},
	{"a non-ASCII character abandons a CSI and is kept", "\x1b[12é;m", "é;m", Events{}},
	{"DEL inside a CSI is ignored", "\x1b[1\x7f2mx", "x", Events{}},

	// OSC.
	{"an OSC title ended by BEL is removed whole", "\x1b]0;my title\x07after", "after", Events{}},
	{"an OSC hyperlink ended by ST is removed whole", "\x1b]8;;https://example.com/\x1b\\link\x1b]8;;\x1b\\ done", "link done", Events{}},
	{"an OSC with UTF-8 and controls inside is removed whole", "\x1b]2;日本\n\tx\x07ok", "ok", Events{}},
	{"an OSC written as C1 U+009D and ended by C1 ST is removed whole", "a\u009d0;t\u009cb", "ab", Events{}},
	{"an OSC written as C1 U+009D and ended by BEL is removed whole", "a\u009d0;t\u0007b", "ab", Events{}},
	{"ESC inside an OSC starts a new sequence", "\x1b]0;t\x1b[31mred", "red", Events{}},

	// Strings.
	{"a DCS string is removed whole", "a\x1bP1$r0m\x1b\\b", "ab", Events{}},
	{"a BEL does not end a DCS string", "a\x1bPq#0;2\x07;0;0\x1b\\b", "ab", Events{}},
	{"SOS, PM and APC strings are removed whole", "1\x1bXsos\x1b\\2\x1b^pm\x1b\\3\x1b_apc\x1b\\4", "1234", Events{}},
	{"a DCS written as C1 U+0090 is removed whole", "a\u0090qdata\u009cb", "ab", Events{}},
	{"C1 SOS, PM and APC are removed whole", "1\u0098s\u009c2\u009ep\u009c3\u009fa\u009c4", "1234", Events{}},
	{"CAN cancels an OSC string", "\x1b]0;title\x18text", "text", Events{}},

	// Short escapes.
	{"a charset designation is removed whole", "\x1b(Babc\x1b)0d", "abcd", Events{}},
	{"keypad mode escapes are removed", "a\x1b=b\x1b>c", "abc", Events{}},
	{"save, restore and reset escapes are removed", "a\x1b7b\x1b8c\x1bcd\x1bMe", "abcde", Events{}},
	{"an escape with an intermediate is removed whole", "a\x1b#8b\x1b %Gc", "abc", Events{}},
	{"a lone ST is removed", "a\x1b\\b", "ab", Events{}},
	{"ESC ESC starts over and removes both", "a\x1b\x1b[31mb", "ab", Events{}},
	{"a non-ASCII character after ESC is kept", "a\x1bäb", "aäb", Events{}},
	{"a line feed after ESC is kept and the escape goes on", "a\x1b\n7b", "a\nb", Events{}},

	// Unwanted code points.
	{"C0 controls other than TAB, LF and CR are shown as \\xNN", "a\x00b\x01c\x07d\x08e\x0bf\x0cg\x0eh\x1fi", `a\x00b\x01c\x07d\x08e\x0bf\x0cg\x0eh\x1fi`, Events{}},
	{"CAN and SUB outside a sequence are shown", "a\x18b\x1ac", `a\x18b\x1ac`, Events{}},
	{"DEL is removed", "a\x7fb", "ab", Events{}},
	{"C1 controls are removed", "a\u0080b\u0085c\u008ed\u009ae", "abcde", Events{}},
	{"format characters are removed", "a\u200bb\ufeffc\u202ed\u00ade\u2066f\U000e0041g\u200dh", "abcdefgh", Events{}},
	{"CJK text is kept", "日本語のテキスト 中文 한국어", "日本語のテキスト 中文 한국어", Events{}},
	{"emoji and variation selectors are kept", "ok ✅ 🚀 ❤️ 👍🏽", "ok ✅ 🚀 ❤️ 👍🏽", Events{}},
	{"accented and other scripts are kept", "naïve café Ελληνικά русский עברית العربية", "naïve café Ελληνικά русский עברית العربية", Events{}},
	{"a literal U+FFFD is kept", "a\ufffdb", "a\ufffdb", Events{}},

	// Invalid UTF-8.
	{"a lone continuation byte becomes U+FFFD", "a\x80b", "a\ufffdb", Events{}},
	{"every byte of a broken sequence becomes U+FFFD", "a\xe2\x82b", "a\ufffd\ufffdb", Events{}},
	{"an overlong encoding becomes one U+FFFD per byte", "\xc0\xafx", "\ufffd\ufffdx", Events{}},
	{"an encoded surrogate becomes one U+FFFD per byte", "\xed\xa0\x80x", "\ufffd\ufffd\ufffdx", Events{}},
	{"a byte above F4 becomes U+FFFD", "\xffx\xfe", "\ufffdx\ufffd", Events{}},
	{"an incomplete sequence at the end becomes U+FFFD per byte", "ab\xf0\x9f\x9a", "ab\ufffd\ufffd\ufffd", Events{}},
	{"a raw 8-bit CSI byte is not a CSI", "a\x9b31mb", "a\ufffd31mb", Events{}},

	// Unterminated sequences.
	{"an unterminated CSI at the end is dropped", "text\x1b[12;3", "text", Events{}},
	{"an unterminated OSC at the end is dropped", "text\x1b]0;title", "text", Events{}},
	{"a lone ESC at the end is dropped", "text\x1b", "text", Events{}},
	{"an incomplete UTF-8 sequence inside an OSC is dropped with it", "text\x1b]0;\xe6\x97", "text", Events{}},

	// Events.
	{"a cursor position query is counted and removed", "a\x1b[6nb", "ab", Events{CursorQueries: 1}},
	{"a DEC cursor position query is counted and removed", "a\x1b[?6nb", "ab", Events{CursorQueries: 1}},
	{"several cursor queries are all counted", "\x1b[6n\x1b[6nx\x1b[?6n", "x", Events{CursorQueries: 3}},
	{"a C1 cursor position query is counted", "\u009b6n", "", Events{CursorQueries: 1}},
	{"a device status report is not a cursor query", "\x1b[5n\x1b[n\x1b[6;1n\x1b[>6n\x1b[6 n", "", Events{}},
	{"application cursor mode is detected", "\x1b[?1hx", "x", Events{CursorMode: 1}},
	{"normal cursor mode is detected", "\x1b[?1lx", "x", Events{CursorMode: -1}},
	{"mode 1 first in a combined list is detected", "\x1b[?1;1049h", "", Events{CursorMode: 1}},
	{"mode 1 last in a combined list is detected", "\x1b[?1049;1h", "", Events{CursorMode: 1}},
	{"mode 1 in the middle of a combined reset is detected", "\x1b[?25;1;1049l", "", Events{CursorMode: -1}},
	{"the last cursor mode change wins", "\x1b[?1h a \x1b[?1l b", " a  b", Events{CursorMode: -1}},
	{"other private modes are not cursor mode changes", "\x1b[?1049h\x1b[?12h\x1b[?10l\x1b[?25l", "", Events{}},
	{"ANSI mode 1 without the private marker is not a cursor mode change", "\x1b[1h\x1b[1l", "", Events{}},
	{"a cursor mode change through C1 CSI is detected", "\u009b?1h", "", Events{CursorMode: 1}},
	{"a zero-padded mode 1 is detected", "\x1b[?01h", "", Events{CursorMode: 1}},
	{"a private marker after a parameter is not a cursor mode change", "\x1b[0?1h\x1b[1?1h\x1b[?1?h", "", Events{}},
	{"a query with a marker after the parameter is not counted", "\x1b[6?n", "", Events{}},
	{"an empty first parameter still finds mode 1", "\x1b[?;1h", "", Events{CursorMode: 1}},
	{"a cursor mode change with an intermediate is not counted", "\x1b[?1$h", "", Events{}},
	{"ESC inside an OSC ends it, so a following query is counted", "\x1b]0;\x1b[6n", "", Events{CursorQueries: 1}},
	{"queries and mode changes together are both reported", "\x1b[?1h\x1b[6nprompt$ ", "prompt$ ", Events{CursorQueries: 1, CursorMode: 1}},
}

func TestCleanerTable(t *testing.T) {
	for _, tc := range cleanCases {
		t.Run(tc.name, func(t *testing.T) {
			got, n, ev := clean(tc.input)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, utf8.RuneCountInString(tc.want), n, "rune count")
			assert.Equal(t, tc.ev, ev)
		})
	}
}

func TestCleanerSplits(t *testing.T) {
	inputs := []string{
		"\x1b[1;31mred\x1b[0m plain\r\n",
		"a\x1b]8;;https://example.com/\x1b\\link\x1b]8;;\x1b\\ 日本語 ✅ 🚀 done",
		"\x1b[?1;1049h\x1b[6n\x1b[?1049;1l\x1b[?6nx",
		"\x1bP1$r0m\x1b\\\u009d0;t\u009c\u009b6n\u009b?1h",
		"a\xe2\x82b\xf0\x9f\x9a\xff\xc0\xafz\xf0\x9f\x9a",
		"\x1b(B\x1b#8\x1b=\x1b>\x1b7\x1bc\x1b\x1b[\n31m\x18x\x1a\x1b]t\x07",
		"text\x1b]0;\xe6\x97",
		"é\x1b[12é;m\x1bäb\u200b\ufeff\u202e\u00ad\x7f\x00",
		strings.Repeat("0123456789abcdef", 3) + "\x1b[0m" + strings.Repeat("xy", 11) + "\n",
	}
	for _, input := range inputs {
		p := []byte(input)
		want, wantRunes, wantEv := clean(input)
		t.Run(fmt.Sprintf("splitting %q anywhere gives the same result", input), func(t *testing.T) {
			for k := 0; k <= len(p); k++ {
				got, n, ev := cleanChunks([][]byte{p[:k], p[k:]})
				require.Equal(t, want, string(got), "split at %d", k)
				require.Equal(t, wantRunes, n, "runes, split at %d", k)
				require.Equal(t, wantEv, ev, "events, split at %d", k)
			}
		})
		t.Run(fmt.Sprintf("feeding %q byte by byte gives the same result", input), func(t *testing.T) {
			got, n, ev := cleanChunks(oneByteChunks(p))
			assert.Equal(t, want, string(got))
			assert.Equal(t, wantRunes, n)
			assert.Equal(t, wantEv, ev)
		})
	}
}

func TestCleanerEventsPerAppend(t *testing.T) {
	t.Run("a query split across two appends is reported by the second", func(t *testing.T) {
		var c Cleaner
		out, _, ev := c.Append(nil, []byte("a\x1b[6"))
		assert.Equal(t, Events{}, ev)
		out, _, ev = c.Append(out, []byte("nb"))
		assert.Equal(t, Events{CursorQueries: 1}, ev)
		assert.Equal(t, "ab", string(out))
	})
	t.Run("a write without mode changes reports zero even after an earlier change", func(t *testing.T) {
		var c Cleaner
		_, _, ev := c.Append(nil, []byte("\x1b[?1h"))
		assert.Equal(t, 1, ev.CursorMode)
		_, _, ev = c.Append(nil, []byte("plain"))
		assert.Equal(t, 0, ev.CursorMode)
	})
	t.Run("a split between ESC and the bracket still removes the sequence", func(t *testing.T) {
		var c Cleaner
		out, n1, _ := c.Append(nil, []byte("x\x1b"))
		out, n2, ev := c.Append(out, []byte("[?1lY"))
		assert.Equal(t, "xY", string(out))
		assert.Equal(t, 2, n1+n2)
		assert.Equal(t, -1, ev.CursorMode)
	})
}

func TestCleanerLimits(t *testing.T) {
	t.Run("an unterminated OSC is abandoned after MaxSequenceBytes", func(t *testing.T) {
		payload := strings.Repeat("p", MaxSequenceBytes-2) // ESC ] + payload = limit
		got, _, _ := clean("a\x1b]" + payload + "after\x07")
		assert.Equal(t, `aafter\x07`, got, "the BEL after the abandoned OSC is text")
	})
	t.Run("an OSC just within MaxSequenceBytes is removed whole", func(t *testing.T) {
		payload := strings.Repeat("p", MaxSequenceBytes-3) // with BEL = limit
		got, _, _ := clean("a\x1b]" + payload + "\x07after")
		assert.Equal(t, "aafter", got)
	})
	t.Run("an endless CSI is abandoned and text flows again", func(t *testing.T) {
		got, _, _ := clean("\x1b[" + strings.Repeat("1;", 5000) + "m")
		assert.NotEmpty(t, got)
		assert.Less(t, len(got), 10000-MaxSequenceBytes+10)
		assert.Equal(t, "", strings.Trim(got, "1;m"))
	})
	t.Run("a huge parameter value does not overflow", func(t *testing.T) {
		got, _, ev := clean("\x1b[?" + strings.Repeat("9", 100) + ";1h\x1b[" + strings.Repeat("9", 100) + "6nz")
		assert.Equal(t, "z", got)
		assert.Equal(t, Events{CursorMode: 1}, ev)
	})
	t.Run("appending into a large enough buffer does not allocate", func(t *testing.T) {
		input := []byte(strings.Repeat("log line \x1b[32mok\x1b[0m 日本 ✅\r\n\x1b]0;t\x07", 100) + "\xe6")
		dst := make([]byte, 0, 2*len(input))
		var c Cleaner
		allocs := testing.AllocsPerRun(100, func() {
			dst, _, _ = c.Append(dst[:0], input)
			dst, _ = c.Flush(dst)
		})
		assert.Zero(t, allocs)
	})
	t.Run("gigabytes of unterminated string keep the state constant", func(t *testing.T) {
		var c Cleaner
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		out, _, _ := c.Append(nil, []byte("\x1bP"))
		for range 100 {
			out, _, _ = c.Append(out[:0], chunk)
		}
		// Abandoned after the limit, the string's tail is plain text again.
		assert.Len(t, out, len(chunk))
	})
	t.Run("Flush resets the cleaner for a new stream", func(t *testing.T) {
		var c Cleaner
		out, _, _ := c.Append(nil, []byte("a\x1b]0;title"))
		out, _ = c.Flush(out)
		out, _, _ = c.Append(out, []byte("b\xe2"))
		out, n := c.Flush(out)
		assert.Equal(t, "ab\ufffd", string(out))
		assert.Equal(t, 1, n)
		assert.Equal(t, Cleaner{}, c)
	})
}

func TestIsFormatMatchesUnicodeTables(t *testing.T) {
	t.Run("the fast Cf check agrees with unicode.Cf for every code point", func(t *testing.T) {
		for r := rune(0); r <= unicode.MaxRune; r++ {
			if isFormat(r) != unicode.Is(unicode.Cf, r) {
				require.Failf(t, "mismatch", "U+%04X", r)
			}
		}
	})
}

func TestScanPlain(t *testing.T) {
	isPlain := func(b byte) bool { return b >= 0x20 && b < 0x7f || b == '\t' || b == '\n' || b == '\r' }
	reference := func(p []byte, i int) int {
		for i < len(p) && isPlain(p[i]) {
			i++
		}
		return i
	}
	t.Run("the plain table matches the definition", func(t *testing.T) {
		for b := 0; b < 256; b++ {
			require.Equal(t, isPlain(byte(b)), plain[b], "byte %#x", b)
		}
	})
	t.Run("the word scanner stops at the same byte as a byte loop", func(t *testing.T) {
		base := []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz012345", 3))
		for b := 0; b < 256; b++ {
			for pos := 0; pos < len(base); pos++ {
				p := append([]byte(nil), base...)
				p[pos] = byte(b)
				for start := 0; start <= pos; start += 5 {
					require.Equal(t, reference(p, start), scanPlain(p, start), "byte %#x at %d from %d", b, pos, start)
				}
			}
		}
	})
	t.Run("carries from one bad byte do not hide or fake another", func(t *testing.T) {
		second := []byte{0x00, 0x08, 0x09, 0x0a, 0x0b, 0x0d, 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0x9f, 0xa0, 0xfe, 0xff}
		for a := 0; a < 256; a++ {
			for _, b := range second {
				for pa := 0; pa < 10; pa++ {
					for pb := 0; pb < 10; pb++ {
						p := []byte("abcdefghijklmnopqrstuvwxyz0123456789ABCDEF")
						p[pa], p[pb] = byte(a), b
						require.Equal(t, reference(p, 0), scanPlain(p, 0), "%q", p)
					}
				}
			}
		}
	})
}

// checkInvariants asserts the properties every cleaned output has.
func checkInvariants(t *testing.T, out []byte, runes int) {
	t.Helper()
	require.True(t, utf8.Valid(out), "output is valid UTF-8: %q", out)
	require.Equal(t, utf8.RuneCount(out), runes, "rune count")
	for _, r := range string(out) {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
		case r < 0x20:
			require.Failf(t, "C0 control in output", "U+%04X in %q", r, out)
		case r >= 0x7f && r <= 0x9f:
			require.Failf(t, "DEL or C1 control in output", "U+%04X in %q", r, out)
		case unicode.Is(unicode.Cf, r):
			require.Failf(t, "format character in output", "U+%04X in %q", r, out)
		case r >= 0xd800 && r <= 0xdfff:
			require.Failf(t, "surrogate in output", "U+%04X in %q", r, out)
		}
	}
}

// plainReference is the expected output for input that holds no ESC, DEL
// or C1 code point: the decoded text minus format characters, with C0
// controls other than TAB, LF and CR shown as \xNN.
func plainReference(p []byte) (string, bool) {
	var sb strings.Builder
	for _, r := range string(p) {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
		case r < 0x20 && r != 0x1b:
			fmt.Fprintf(&sb, "\\x%02x", r)
			continue
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			return "", false
		case unicode.Is(unicode.Cf, r):
			continue
		}
		sb.WriteRune(r)
	}
	return sb.String(), true
}

func FuzzCleaner(f *testing.F) {
	for _, tc := range cleanCases {
		f.Add([]byte(tc.input), []byte{1, 3, 7})
	}
	f.Add([]byte("\x1b[?1;1049h\x1b[6n日本\xe2\x82"), []byte{})
	f.Add([]byte(strings.Repeat("plain text line\n", 10)), []byte{0, 16, 5})
	f.Fuzz(func(t *testing.T, data []byte, cuts []byte) {
		whole, wholeRunes, wholeEv := cleanChunks([][]byte{data})
		checkInvariants(t, whole, wholeRunes)

		var chunks [][]byte
		if len(cuts) == 0 {
			chunks = oneByteChunks(data)
		} else {
			rest := data
			for i := 0; len(rest) > 0; i++ {
				n := min(int(cuts[i%len(cuts)]%24), len(rest))
				if n == 0 {
					chunks = append(chunks, rest[:0]) // an empty read
					n = 1
				}
				chunks = append(chunks, rest[:n])
				rest = rest[n:]
			}
		}
		got, runes, ev := cleanChunks(chunks)
		require.Equal(t, string(whole), string(got), "chunked output")
		require.Equal(t, wholeRunes, runes, "chunked rune count")
		require.Equal(t, wholeEv, ev, "chunked events")

		// Each Append on its own also keeps the invariants.
		var c Cleaner
		for _, ch := range chunks {
			out, n, _ := c.Append(nil, ch)
			checkInvariants(t, out, n)
		}
		out, n := c.Flush(nil)
		checkInvariants(t, out, n)

		if want, ok := plainReference(data); ok {
			require.Equal(t, want, string(whole), "plain text is only decoded")
		}
	})
}

const benchChunk = 32 << 10

func asciiChunk() []byte {
	lines := []string{
		"2024-05-01T12:00:00.123Z INFO  worker[42]: processed batch 1234 in 56ms (ok)\n",
		"    at com.example.service.Handler.handle(Handler.java:117)\n",
		"ok  \tgithub.com/example/project/internal/pkg\t0.123s\tcoverage: 81.2% of statements\r\n",
		"Compiling serde v1.0.197\n",
		"\n",
		"[build] src/components/Button.tsx -> dist/components/Button.js (3.2 kB, gzip 1.1 kB)\n",
	}
	return fill(lines)
}

func mixedChunk() []byte {
	lines := []string{
		"\x1b[1;32m   Compiling\x1b[0m serde v1.0.197 (\x1b[4m/home/dev/src\x1b[24m)\n",
		"\x1b[32m✓\x1b[39m should render the greeting \x1b[2m(12 ms)\x1b[22m\n",
		"\x1b[31m✗ échec : la valeur attendue était « 42 »\x1b[0m\r\n",
		"日志：任务已完成，耗时 3.2 秒 🚀\n",
		"\x1b]0;~/project\x07$ npm run build\r\n",
		"progress 57%\x1b[K\r\x1b[2K\x1b[1A\x1b[38;5;208mwarn\x1b[m plain ascii tail of the line here\n",
	}
	return fill(lines)
}

func fill(lines []string) []byte {
	var b []byte
	for i := 0; len(b) < benchChunk; i++ {
		b = append(b, lines[i%len(lines)]...)
	}
	return b[:benchChunk]
}

func benchCleaner(b *testing.B, chunk []byte) {
	var c Cleaner
	dst := make([]byte, 0, 2*len(chunk))
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		dst, _, _ = c.Append(dst[:0], chunk)
	}
}

func BenchmarkAppendASCII(b *testing.B) { benchCleaner(b, asciiChunk()) }

func BenchmarkAppendMixed(b *testing.B) { benchCleaner(b, mixedChunk()) }

func BenchmarkCopyBaseline(b *testing.B) {
	chunk := asciiChunk()
	dst := make([]byte, 0, 2*len(chunk))
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		dst = append(dst[:0], chunk...)
	}
}
