package session

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func addString(o *output, s StreamID, text string) {
	o.add(s, []byte(text), utf8.RuneCountInString(text))
}

func TestPageNumbersLinesFromTheFirstLineEverPrinted(t *testing.T) {
	o := newOutput(1000, 1000)
	for i := range 500 {
		addString(&o, Stdout, fmt.Sprintf("line %03d\n", i)) // 9 chars a line
	}
	// 1000 chars keep the last 111 lines and the newline of line 388.
	p := o.page(nil, nil, 200)
	assert.Equal(t, int64(388), p.FirstLine, "the oldest kept line, partly cut")
	assert.Equal(t, int64(500), p.TotalLines)
	assert.True(t, p.Truncated)
	assert.Equal(t, int64(388), p.First)
	require.Len(t, p.Lines, 112)
	assert.Equal(t, "", p.Lines[0], "only the newline of line 388 is kept")
	assert.Equal(t, "line 389", p.Lines[1])
	assert.Equal(t, "line 499", p.Lines[111])

	p = o.page(ptr64(400), ptr64(3), 200)
	assert.Equal(t, []string{"line 400", "line 401", "line 402"}, p.Lines)
	assert.Equal(t, int64(400), p.First)

	p = o.page(ptr64(0), ptr64(10), 200)
	assert.Empty(t, p.Lines, "lines 0-9 are gone")
	p = o.page(ptr64(380), ptr64(10), 200)
	assert.Equal(t, int64(388), p.First, "a page that starts before the oldest line starts there")
	assert.Len(t, p.Lines, 2)

	p = o.page(nil, ptr64(2), 200)
	assert.Equal(t, []string{"line 498", "line 499"}, p.Lines)
	p = o.page(ptr64(499), nil, 200)
	assert.Equal(t, []string{"line 499"}, p.Lines)
	p = o.page(ptr64(500), nil, 200)
	assert.Empty(t, p.Lines)
	p = o.page(nil, ptr64(0), 200)
	assert.Empty(t, p.Lines)
}

func TestPageMatchesANaiveSplit(t *testing.T) {
	for _, limit := range []int{1000, 1003, 4096} {
		o := newOutput(limit, 1000)
		var all strings.Builder
		for i := range 700 {
			chunk := strings.Repeat("é", i%7) + fmt.Sprintf("%d\r\n", i)
			if i%5 == 0 {
				chunk = "no newline " // joins the next line
			}
			all.WriteString(chunk)
			addString(&o, Stream(i), chunk)
		}
		// Compare with the naive model: split everything, drop what the
		// ring dropped.
		text := all.String()
		kept := o.agg.String()
		require.True(t, strings.HasSuffix(text, kept))
		dropped := text[:len(text)-len(kept)]
		first := int64(strings.Count(dropped, "\n"))
		lines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(kept, "\r\n", "\n"), "\n"), "\n")
		for _, tc := range [][2]int64{{first, 5}, {first + 3, 50}, {first + int64(len(lines)) - 4, 10}} {
			p := o.page(ptr64(tc[0]), ptr64(tc[1]), 200)
			lo := tc[0] - first
			hi := min(lo+tc[1], int64(len(lines)))
			assert.Equal(t, lines[lo:hi], p.Lines, "limit %d, offset %d", limit, tc[0])
			assert.Equal(t, first, p.FirstLine)
			assert.Equal(t, first+int64(len(lines)), p.TotalLines)
		}
		p := o.page(nil, nil, 200)
		assert.Equal(t, lines[max(len(lines)-200, 0):], p.Lines)
	}
}

func Stream(i int) StreamID { return StreamID(i % 2) }

func TestDrainTellsAPollOnlyLossFromALossForGood(t *testing.T) {
	o := newOutput(10000, 1000)
	addString(&o, Stdout, strings.Repeat("a", 1500)) // 500 dropped from pending, all retained
	text, loss := o.drain()
	assert.Len(t, text, 1000)
	assert.Equal(t, LostFromPoll, loss)

	_, loss = o.drain()
	assert.Equal(t, LostNothing, loss)

	o = newOutput(1000, 1000)
	addString(&o, Stdout, strings.Repeat("b", 800))
	addString(&o, Stderr, strings.Repeat("c", 800)) // the aggregate drops 600 of the b's
	addString(&o, Stdout, strings.Repeat("d", 300)) // pending drops 100 b's, which retention lost too
	text, loss = o.drain()
	assert.Equal(t, LostForGood, loss)
	assert.Equal(t, strings.Repeat("b", 700)+strings.Repeat("c", 800)+strings.Repeat("d", 300), text)
}

func TestAggregatedIsSharedUntilNewOutput(t *testing.T) {
	o := newOutput(200000, 30000)
	addString(&o, Stdout, strings.Repeat("x", 200000))
	a, b := o.agg.String(), o.agg.String()
	assert.Equal(t, a, b)
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = o.agg.String() })+1, "no allocation once cached")
	addString(&o, Stdout, "y")
	assert.True(t, strings.HasSuffix(o.agg.String(), "xy"))
}
