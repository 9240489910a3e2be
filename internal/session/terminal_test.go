package session

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startTerminal returns a terminal whose replies are collected, and a stop
// function that ends its reply goroutine.
func startTerminal(t testing.TB, cols, rows int) (*terminal, func() []byte) {
	term := newTerminal(cols, rows)
	var mu sync.Mutex
	var got []byte
	done := make(chan struct{})
	src := term.replySource()
	go func() {
		defer close(done)
		replies(src, func(p []byte) {
			mu.Lock()
			got = append(got, p...)
			mu.Unlock()
		})
	}()
	stopped := false
	stop := func() []byte {
		if !stopped {
			stopped = true
			term.close()
			<-done
		}
		mu.Lock()
		defer mu.Unlock()
		return bytes.Clone(got)
	}
	t.Cleanup(func() { stop() })
	return term, stop
}

// plainScreen feeds every byte of p to a bare emulator and renders it the
// way terminal.screen does: the reference the skipper must match.
func plainScreen(t testing.TB, cols, rows int, chunks [][]byte) Screen {
	ref, stop := startTerminal(t, cols, rows)
	defer stop()
	for _, c := range chunks {
		ref.mu.Lock()
		ref.feed(c)
		ref.mu.Unlock()
	}
	return ref.screen(false)
}

func TestTerminalScreen(t *testing.T) {
	t.Parallel()
	t.Run("rows are trimmed, trailing empty rows dropped, the cursor 1-based", func(t *testing.T) {
		t.Parallel()
		term, _ := startTerminal(t, 20, 5)
		term.write([]byte("hello   \r\n\r\n  world\x1b[3;4H"))
		sc := term.screen(false)
		assert.Equal(t, "hello\n\n  world", sc.Text)
		assert.Equal(t, 3, sc.CursorRow)
		assert.Equal(t, 4, sc.CursorCol)
		assert.Equal(t, 20, sc.Cols)
		assert.Equal(t, 5, sc.Rows)
		assert.False(t, sc.AlternateScreen)
	})
	t.Run("the alternate screen, the title and a wide character", func(t *testing.T) {
		t.Parallel()
		term, _ := startTerminal(t, 20, 5)
		term.write([]byte("main\x1b]0;my title\x07\x1b[?1049h\x1b[H你好x"))
		sc := term.screen(false)
		assert.True(t, sc.AlternateScreen)
		assert.Equal(t, "my title", sc.Title)
		assert.Equal(t, "你好x", sc.Text)
		term.write([]byte("\x1b[?1049l"))
		sc = term.screen(false)
		assert.False(t, sc.AlternateScreen)
		assert.Equal(t, "main", sc.Text)
	})
	t.Run("a cursor position query is answered with the real cursor", func(t *testing.T) {
		t.Parallel()
		term, stop := startTerminal(t, 20, 5)
		assert.Equal(t, "\x1b[2;5R", string(term.write([]byte("ab\r\ncdef\x1b[6n"))))
		assert.Equal(t, "\x1b[?1;2R", string(term.write([]byte("\x1b[Hx\x1b[?6n"))))
		term.write([]byte("\x1b[c")) // device attributes: through the reply pipe
		assert.Contains(t, string(stop()), "\x1b[?62;")
	})
	t.Run("resize changes the size the screen reports", func(t *testing.T) {
		t.Parallel()
		term, _ := startTerminal(t, 20, 5)
		term.resize(40, 10)
		sc := term.screen(false)
		assert.Equal(t, 40, sc.Cols)
		assert.Equal(t, 10, sc.Rows)
	})
}

func TestSkipperMatchesFullEmulation(t *testing.T) {
	t.Parallel()
	const cols, rows = 30, 6
	line := func(i int) string { return fmt.Sprintf("line %d %s", i, strings.Repeat("x", i%40)) }
	var flood strings.Builder
	for i := range 500 {
		flood.WriteString(line(i) + "\r\n")
	}
	var colored strings.Builder
	for i := range 500 {
		fmt.Fprintf(&colored, "\x1b[3%dm%s\x1b[0m\r\n", i%8, line(i))
	}
	var region strings.Builder
	region.WriteString("\x1b[2;4r\x1b[4;1H")
	for i := range 300 {
		region.WriteString(line(i) + "\r\n")
	}
	cases := map[string]string{
		"a flood of lines":                         flood.String(),
		"a flood ending in a partial line":         flood.String() + "partial",
		"a flood of colored lines":                 colored.String(),
		"a flood inside a scroll region":           region.String(),
		"bare line feeds":                          strings.Repeat("ab\n", 400) + "end",
		"a flood then a cursor move and overwrite": flood.String() + "\x1b[2;3HXY\x1b[K",
		"UTF-8 lines":                              strings.Repeat("héllo wörld ✓ 你好\r\n", 300),
		"a title inside the flood":                 flood.String()[:5000] + "\x1b]0;t\r\n\r\nx\x07" + flood.String()[5000:],
		"long lines that wrap":                     strings.Repeat(strings.Repeat("w", 75)+"\r\n", 300),
	}
	for name, stream := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, chunk := range []int{1, 7, 4095, len(stream)} {
				var chunks [][]byte
				for i := 0; i < len(stream); i += chunk {
					chunks = append(chunks, []byte(stream[i:min(i+chunk, len(stream))]))
				}
				term, _ := startTerminal(t, cols, rows)
				for _, c := range chunks {
					term.write(c)
				}
				want := plainScreen(t, cols, rows, chunks)
				got := term.screen(false)
				want.Title, got.Title = "", "" // set by callback in both; compared below
				require.Equal(t, want, got, "chunk size %d", chunk)
			}
		})
	}
	t.Run("random streams", func(t *testing.T) {
		t.Parallel()
		r := rand.New(rand.NewPCG(1, 2))
		pieces := []string{"abc", "\r\n", "\n", "\r", "\t", "\x1b[31m", "\x1b[0m", "\x1b[H", "\x1b[2J", "\x1b[1;3r", "\x1b[r",
			"\x1b[5;5H", "é", "你", "\x1b]0;x\x07", "\x1b[K", "\x1b7", "\x1b8", "\x1b[?1049h", "\x1b[?1049l", "\x08", "\x1b[2@",
			strings.Repeat("plain text line\r\n", 20)}
		for i := range 200 {
			var b strings.Builder
			for range 60 {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
			s := b.String()
			chunk := 1 + r.IntN(64)
			var chunks [][]byte
			for j := 0; j < len(s); j += chunk {
				chunks = append(chunks, []byte(s[j:min(j+chunk, len(s))]))
			}
			term, _ := startTerminal(t, cols, rows)
			for _, c := range chunks {
				term.write(c)
			}
			require.Equal(t, plainScreen(t, cols, rows, chunks), term.screen(false), "stream %d: %q", i, s)
		}
	})
}

// TestSkipperSkips proves the skipper holds back a flood instead of feeding
// it: the emulator sees far fewer bytes than were written.
func TestSkipperSkips(t *testing.T) {
	t.Parallel()
	var k skipper
	k.rows = 30
	fed := 0
	feed := func(p []byte) { fed += len(p) }
	written := 0
	line := []byte(strings.Repeat("y", 98) + "\r\n")
	for range 10000 {
		out := k.route(nil, line, feed)
		feed(out)
		written += len(line)
	}
	k.flush(feed)
	assert.Less(t, fed, written/20, "fed %d of %d bytes", fed, written)
}

func FuzzSkipper(f *testing.F) {
	f.Add([]byte("a\r\nb\r\n\x1b[31mc\x1b[0m\r\n"), uint8(3))
	f.Add([]byte(strings.Repeat("line\r\n", 50)+"\x1b[2;2Hxy"), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		const cols, rows = 12, 4
		step := int(chunk%32) + 1
		var chunks [][]byte
		for i := 0; i < len(data); i += step {
			chunks = append(chunks, data[i:min(i+step, len(data))])
		}
		term, _ := startTerminal(t, cols, rows)
		for _, c := range chunks {
			term.write(c)
		}
		want := plainScreen(t, cols, rows, chunks)
		got := term.screen(false)
		if want.Text != got.Text || want.CursorRow != got.CursorRow || want.CursorCol != got.CursorCol || want.AlternateScreen != got.AlternateScreen {
			t.Fatalf("skipped screen differs:\n%+v\nwant\n%+v", got, want)
		}
	})
}

func TestTerminalClose(t *testing.T) {
	t.Parallel()
	term, stop := startTerminal(t, 20, 5)
	term.write([]byte("last words\x1b]0;bye\x07"))
	stop()
	sc := term.screen(false)
	assert.Equal(t, "last words", sc.Text, "the last screen is kept")
	assert.Equal(t, "bye", sc.Title)
	term.resize(40, 10) // no-ops once closed
	assert.Nil(t, term.write([]byte("more")))
	assert.Equal(t, sc, term.screen(false))
	term.close() // twice is fine
}
