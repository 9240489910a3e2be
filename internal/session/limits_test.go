package session

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTrimKeepsTheTailAndLineNumbers(t *testing.T) {
	o := newOutput(200000, 30000)
	var b strings.Builder
	for i := range 5000 {
		b.WriteString(strings.Repeat("é", 9) + "\n") // 10 code points a line, 19 bytes
		_ = i
	}
	text := b.String()
	o.add(Stdout, []byte(text), 50000)
	before := o.retainedBytes()
	o.trim(100)
	assert.Less(t, o.retainedBytes(), before/100, "the array is replaced by an exact one")
	assert.Equal(t, 100, o.agg.runes)
	assert.Equal(t, text[len(text)-190:], o.agg.String(), "the last 100 code points, whole")
	p := o.page(nil, nil, 200)
	assert.True(t, p.Truncated)
	assert.Equal(t, int64(4990), p.FirstLine, "line numbers still count from the first line printed")
	assert.Equal(t, int64(5000), p.TotalLines)
	got, loss := o.drain()
	assert.Empty(t, got, "pending output went with the trim")
	assert.Equal(t, LostForGood, loss)
	// It keeps working afterwards.
	o.add(Stdout, []byte("more\n"), 5)
	assert.True(t, strings.HasSuffix(o.agg.String(), "é\nmore\n"))
}

func TestMarkOOM(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		name string
		exit Exit
		want Reason
	}{
		{"killed by SIGKILL", Exit{Reason: ReasonSignal, Signal: "SIGKILL"}, ReasonOOM},
		{"the shell reported 137", Exit{Reason: ReasonExit, Code: code(137)}, ReasonOOM},
		{"exited 0 anyway", Exit{Reason: ReasonExit, Code: code(0)}, ReasonExit},
		{"a timeout stays one", Exit{Reason: ReasonTimeout, Signal: "SIGKILL"}, ReasonTimeout},
		{"a kill stays one", Exit{Reason: ReasonKilled, Signal: "SIGTERM"}, ReasonKilled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{MemoryLimit: 64 << 20})
			s.exit = tc.exit
			s.markOOMLocked()
			require.Equal(t, tc.want, s.exit.Reason)
			if tc.want == ReasonOOM {
				assert.Equal(t, int64(64<<20), s.exit.MemoryLimit)
			}
		})
	}
}
