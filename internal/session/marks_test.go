package session

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMarkedScreen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, plain, marked string }{
		{"plain text has no markers", "hello", "hello", "hello"},
		{"a reverse run", "a \x1b[7msel\x1b[27m b", "a sel b", "a ⟦r⟧sel⟦/r⟧ b"},
		{"bold and underline nest", "\x1b[1;4mtitle\x1b[0m", "title", "⟦b⟧⟦u⟧title⟦/u⟧⟦/b⟧"},
		{"a style change closes innermost first", "\x1b[1mb\x1b[7mbr\x1b[22mr\x1b[0m", "bbrr", "⟦b⟧b⟦/b⟧⟦b⟧⟦r⟧br⟦/r⟧⟦/b⟧⟦r⟧r⟦/r⟧"},
		{"a run ends at its row's end", "\x1b[7mone\r\ntwo\x1b[0m", "one\ntwo", "⟦r⟧one⟦/r⟧\n⟦r⟧two⟦/r⟧"},
		{"styled trailing blanks are dropped", "\x1b[7mbar   \x1b[0m", "bar", "⟦r⟧bar⟦/r⟧"},
		{"a wide character is one cell", "\x1b[7m界\x1b[0mx", "界x", "⟦r⟧界⟦/r⟧x"},
		{"a blank screen", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			term := newTerminal(20, 3)
			term.write([]byte(tc.in))
			sc := term.screen(true)
			assert.Equal(t, tc.plain, sc.Text)
			assert.Equal(t, tc.marked, sc.Marked)
			assert.Empty(t, term.screen(false).Marked, "marked only when asked for")
			term.close()
			assert.Equal(t, tc.marked, term.screen(true).Marked, "the last screen keeps its marks")
		})
	}
}
