package termtext

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLineEnds(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"text without CR is kept", "a\nb\n\nc", "a\nb\n\nc"},
		{"CRLF becomes LF", "a\r\nb\r\n", "a\nb\n"},
		{"a lone CR becomes LF", "a\rb", "a\nb"},
		{"a progress bar becomes one line per step", "\r50%\r100%\n", "50%\n100%\n"},
		{"a terminal's CR CR LF is one line end", "a\r\r\nb", "a\nb"},
		{"LF CR is one line end", "a\n\rb", "a\nb"},
		{"blank lines stay", "a\r\n\r\nb\n\n", "a\n\nb\n\n"},
		{"a CR at the start of the stream moves nothing", "\r\nx", "\nx"},
		{"the task's example", "a\r\nb\rc\n", "a\nb\nc\n"},
		{"the same through a terminal", "a\r\r\nb\rc\r\n", "a\nb\nc\n"},
		{"a CR at the end is written at once", "a\r", "a\n"},
		{"an empty chunk", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l LineEnds
			got, removed := l.Apply([]byte(tt.in))
			assert.Equal(t, tt.want, string(got))
			assert.Equal(t, len(tt.in)-len(tt.want), removed)
		})
	}
}

func TestLineEndsAcrossChunks(t *testing.T) {
	inputs := []string{
		"a\r\nb\rc\n", "x\r\r\ny\n\rz", "\r\r\n\n\r\n", "ab\r\ncd\r\nef", "é\rü\r\n",
	}
	for _, in := range inputs {
		var whole LineEnds
		want, _ := whole.Apply([]byte(in))
		// Every split into two and three chunks gives the same text.
		for i := 0; i <= len(in); i++ {
			for j := i; j <= len(in); j++ {
				var l LineEnds
				var b strings.Builder
				for _, part := range []string{in[:i], in[i:j], in[j:]} {
					out, removed := l.Apply([]byte(part))
					assert.Equal(t, len(part)-len(out), removed)
					b.Write(out)
				}
				assert.Equal(t, string(want), b.String(), "%q split at %d, %d", in, i, j)
			}
		}
	}
}

func TestLineEndsSplitCRLF(t *testing.T) {
	var l LineEnds
	first, _ := l.Apply([]byte("x\r"))
	assert.Equal(t, "x\n", string(first), "the CR ends the line at once")
	second, removed := l.Apply([]byte("\ny\n"))
	assert.Equal(t, "y\n", string(second), "the LF of the split CRLF is dropped")
	assert.Equal(t, 1, removed)
}

func FuzzLineEnds(f *testing.F) {
	f.Add([]byte("a\r\nb\rc\n"), uint8(3))
	f.Add([]byte("\r\r\n\n\r"), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, cut uint8) {
		whole := append([]byte(nil), in...)
		var lw LineEnds
		want, _ := lw.Apply(whole)
		if strings.Contains(string(want), "\r") {
			t.Fatalf("a CR is left in %q", want)
		}
		if strings.Contains(string(want), "\n\n") {
			// Only a CR after text ends a line, so two line ends in a row
			// need two LFs in the input, at most with CRs between them.
			assert.Contains(t, strings.ReplaceAll(string(in), "\r", ""), "\n\n", "%q gave %q", in, want)
		}
		k := int(cut) % (len(in) + 1)
		var l LineEnds
		a, _ := l.Apply(append([]byte(nil), in[:k]...))
		b, _ := l.Apply(append([]byte(nil), in[k:]...))
		assert.Equal(t, string(want), string(a)+string(b), "split at %d", k)
	})
}
