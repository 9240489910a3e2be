package session

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ptr64(v int64) *int64 { return &v }

func TestPageLines(t *testing.T) {
	o := newOutput(1<<20, 1000)
	for i := range 250 {
		addString(&o, Stdout, strconv.Itoa(i)+"\n")
	}
	cases := []struct {
		name          string
		offset, limit *int64
		first, last   string
		n             int
	}{
		{"both omitted gives the last 200 and a hint", nil, nil, "50", "249", 200},
		{"only limit gives the last limit lines", nil, ptr64(3), "247", "249", 3},
		{"only offset runs to the end", ptr64(10), nil, "10", "249", 240},
		{"both give a window", ptr64(5), ptr64(2), "5", "6", 2},
		{"a window past the end is clipped", ptr64(248), ptr64(10), "248", "249", 2},
		{"an offset past the end is empty", ptr64(1000), nil, "", "", 0},
		{"a huge limit returns everything", nil, ptr64(1 << 50), "0", "249", 250},
		{"a negative offset is 0", ptr64(-3), ptr64(2), "0", "1", 2},
		{"a negative offset without limit runs to the end", ptr64(-1), nil, "0", "249", 250},
		{"a zero limit is empty", nil, ptr64(0), "", "", 0},
		{"a negative limit is empty", ptr64(5), ptr64(-1), "", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page := o.page(c.offset, c.limit, 200).Lines
			require.Len(t, page, c.n)
			if c.n > 0 {
				assert.Equal(t, c.first, page[0])
				assert.Equal(t, c.last, page[len(page)-1])
			}
		})
	}
}

func TestRuneRing(t *testing.T) {
	r := runeRing{limit: 5}
	r.append([]byte("héllo"), 5)
	assert.Equal(t, "héllo", r.String())
	assert.Zero(t, r.dropped)
	r.append([]byte("wö"), 2)
	assert.Equal(t, "llowö", r.String())
	assert.Equal(t, int64(2), r.dropped)
	r.append([]byte("0123456789"), 10)
	assert.Equal(t, "56789", r.String())
	assert.Equal(t, "789", r.tail(3))
}

func TestPendingBufKeepsArrivalOrderAndPerStreamCaps(t *testing.T) {
	q := pendingBuf{limit: 4}
	q.append(Stdout, []byte("ab"), 2, 0)
	q.append(Stderr, []byte("XY"), 2, 0)
	q.append(Stdout, []byte("cd"), 2, 0)
	text, lostAt := q.drain()
	assert.Equal(t, "abXYcd", text)
	assert.Equal(t, int64(-1), lostAt)

	q.append(Stdout, []byte("abc"), 3, 0)
	q.append(Stderr, []byte("X"), 1, 0)
	q.append(Stdout, []byte("def"), 3, 0) // stdout over by 2: "ab" goes
	text, lostAt = q.drain()
	assert.Equal(t, "cXdef", text)
	assert.Equal(t, int64(0), lostAt)
	assert.True(t, q.empty())
}

// FuzzOutputBuf checks the ring buffer and pending buffers against a naive model.
func FuzzOutputBuf(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), []byte{0, 1, 0, 2}, uint8(3))
	f.Add([]byte("héllo wörld 你好 😀"), []byte{1, 1, 1}, uint8(1))
	f.Add([]byte("a\n\nb\nc\n\n\nd\ne\nfg\n\nh\n\n\n\ni\n"), []byte{24, 0, 4, 20, 8, 1, 12, 16, 0, 24}, uint8(9))
	f.Fuzz(func(t *testing.T, data []byte, ops []byte, capSeed uint8) {
		limit := int(capSeed%16) + 1
		text := []rune(strings.ToValidUTF8(string(data), "?"))
		o := newOutput(limit, limit)
		var model []rune
		var views [][2]string     // each view and a copy taken at once
		var pendModel [][2][]rune // chunks by stream
		_ = pendModel
		pend := [2][]rune{}
		var order []int // stream of each pending rune, in arrival order
		var orderRunes []rune
		var lfs int64 // LFs ever added
		for i := 0; len(text) > 0 && i < len(ops); i++ {
			op := ops[i]
			if op%4 == 3 {
				got, _ := o.pending.drain()
				assert.Equal(t, string(orderRunes), got)
				order, orderRunes, pend = nil, nil, [2][]rune{}
				continue
			}
			s := StreamID(op % 2)
			n := min(int(op/4)%7+1, len(text))
			chunk := text[:n]
			text = text[n:]
			o.add(s, []byte(string(chunk)), n)
			model = append(model, chunk...)
			if len(model) > limit {
				model = model[len(model)-limit:]
			}
			lfs += int64(strings.Count(string(chunk), "\n"))
			live := strings.Count(string(model), "\n")
			require.Equal(t, live, o.agg.newlines, "LFs retained")
			require.Equal(t, lfs-int64(live), o.agg.droppedNewlines, "LFs dropped")
			pend[s] = append(pend[s], chunk...)
			for _, r := range chunk {
				order = append(order, int(s))
				orderRunes = append(orderRunes, r)
			}
			// Drop the oldest runes of stream s beyond the cap.
			for over := len(pend[s]) - limit; over > 0; over-- {
				for j := range order {
					if order[j] == int(s) {
						order = append(order[:j], order[j+1:]...)
						orderRunes = append(orderRunes[:j], orderRunes[j+1:]...)
						break
					}
				}
				pend[s] = pend[s][1:]
			}
			view := o.agg.String()
			require.Equal(t, string(model), view)
			require.True(t, utf8.ValidString(view))
			// Views handed out earlier never change: the ring moves to a
			// new array rather than write over them.
			views = append(views, [2]string{view, strings.Clone(view)})
			for _, v := range views {
				require.Equal(t, v[1], v[0], "a view handed out earlier was overwritten")
			}
			require.LessOrEqual(t, o.agg.runes, limit)
		}
		got, _ := o.pending.drain()
		assert.Equal(t, string(orderRunes), got)
	})
}

// FuzzPageLines checks the log pager's bounds on a session that kept all
// of n lines.
func FuzzPageLines(f *testing.F) {
	f.Add(250, 0, 0, false, false)
	f.Add(10, 5, 2, true, true)
	f.Add(0, -1, -1, true, true)
	f.Add(3, 1<<40, 1<<40, true, true)
	f.Fuzz(func(t *testing.T, n, offset, limit int, hasOffset, hasLimit bool) {
		n = min(max(n, 0), 5000)
		o := newOutput(1<<20, 1000)
		for i := range n {
			addString(&o, Stdout, strconv.Itoa(i)+"\n")
		}
		var op, lp *int64
		if hasOffset {
			op = ptr64(int64(offset))
		}
		if hasLimit {
			lp = ptr64(int64(limit))
		}
		p := o.page(op, lp, 200) // never refuses a number
		page := p.Lines
		require.Equal(t, int64(n), p.TotalLines)
		require.Zero(t, p.FirstLine)
		require.LessOrEqual(t, len(page), n)
		if lp != nil {
			require.LessOrEqual(t, len(page), max(limit, 0))
		}
		if op == nil && lp == nil {
			require.LessOrEqual(t, len(page), 200)
		}
		if len(page) > 0 {
			first, _ := strconv.Atoi(page[0])
			for i, l := range page {
				require.Equal(t, strconv.Itoa(first+i), l, "pages are contiguous")
			}
			if op != nil {
				require.Equal(t, max(offset, 0), first, "a negative offset is 0")
			} else {
				last, _ := strconv.Atoi(page[len(page)-1])
				require.Equal(t, n-1, last, "tail modes end at the last line")
			}
		}
	})
}

func TestLineWaiterSplitsAcrossReads(t *testing.T) {
	cases := []struct {
		chunks  []string
		pattern string
		want    string
	}{
		{[]string{"ab", "c\n"}, "^abc$", "abc"},
		{[]string{"x\nlisten", "ing\r\n"}, "^listening$", "listening"},
		{[]string{"prompt> "}, "prompt>", "prompt> "},
		{[]string{"one\ntwo\n"}, "^two$", "two"},
	}
	for _, c := range cases {
		w := newLineWaiterForTest(t, c.pattern)
		for _, ch := range c.chunks {
			w.feed([]byte(ch))
		}
		assert.True(t, w.hit, "%q", c.chunks)
		assert.Equal(t, c.want, w.matched)
	}
	w := newLineWaiterForTest(t, "^b$")
	w.feed([]byte("a"))
	w.feed([]byte("b\n"))
	assert.False(t, w.hit, "\"ab\" is one line, not \"b\"")
	w.feed([]byte(strings.Repeat("z", 3*maxPartialLine)))
	assert.LessOrEqual(t, len(w.partial), maxPartialLine, "an endless line stays bounded")
}

func newLineWaiterForTest(t *testing.T, pattern string) *lineWaiter {
	t.Helper()
	re, err := regexp.Compile(pattern)
	require.NoError(t, err)
	return &lineWaiter{re: re}
}
