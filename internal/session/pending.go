package session

import "strings"

// pendingChunk is output of one stream not yet returned by poll.
type pendingChunk struct {
	stream streamID
	text   []byte // the pending text: a window of mem
	runes  int
	start  int64  // position of text's first code point in the whole output
	mem    []byte // text's backing array from its start, for reuse
}

// appendText appends p to the chunk's text, moving the text back to the
// start of its memory before growing it.
func (c *pendingChunk) appendText(p []byte) {
	switch {
	case len(c.text)+len(p) <= cap(c.text):
	case len(c.text)+len(p) <= cap(c.mem):
		c.text = c.mem[:copy(c.mem, c.text)]
	default:
		nm := make([]byte, len(c.text), grown(len(c.text)+len(p)))
		copy(nm, c.text)
		c.mem, c.text = nm[:cap(nm)], nm
	}
	c.text = append(c.text, p...)
}

// pendingBuf holds what the next poll has not returned yet, in arrival
// order, capped per stream at limit code points (oldest dropped first).
// The zero value with limit set is ready to use.
type pendingBuf struct {
	chunks  []pendingChunk
	runes   [2]int
	limit   int
	dropped bool   // something was dropped since the last drain
	lostAt  int64  // the earliest position dropped since the last drain
	spare   []byte // memory of a dropped chunk, for the next new one
}

// lose records that text from position at on was dropped.
func (q *pendingBuf) lose(at int64) {
	if !q.dropped || at < q.lostAt {
		q.lostAt = at
	}
	q.dropped = true
}

// append adds text of n code points from stream s that starts at position
// at of the whole output.
func (q *pendingBuf) append(s streamID, p []byte, n int, at int64) {
	if n == 0 {
		return
	}
	if n >= q.limit {
		// The chunk alone fills the stream's share: everything older of
		// the stream goes, and only the chunk's tail is kept.
		if n > q.limit {
			q.lose(at)
			p = p[runeStart(p, n, n-q.limit):]
			at += int64(n - q.limit)
			n = q.limit
		}
		if q.runes[s] > 0 {
			q.chunks = q.removeStream(s)
			q.runes[s] = 0
		}
	}
	if last := len(q.chunks) - 1; last >= 0 && q.chunks[last].stream == s {
		q.chunks[last].appendText(p)
		q.chunks[last].runes += n
	} else {
		c := pendingChunk{stream: s, runes: n, start: at}
		if cap(q.spare) >= len(p) {
			c.mem, q.spare = q.spare[:cap(q.spare)], nil
		} else {
			c.mem = make([]byte, max(len(p), 512))
		}
		c.text = append(c.mem[:0], p...)
		q.chunks = append(q.chunks, c)
	}
	q.runes[s] += n
	q.trim(s)
}

// unshift puts text of n code points back in front of everything pending,
// as output of stream 0 that started at position at: a drain that never
// reached the agent. The stream's cap still holds: what does not fit is
// dropped from the oldest end, and reported as lost like any other drop.
func (q *pendingBuf) unshift(p []byte, n int, at int64, lost bool) {
	if lost {
		q.lose(at)
	}
	if n == 0 {
		return
	}
	mem := append(make([]byte, 0, max(len(p), 512)), p...)
	c := pendingChunk{stream: 0, text: mem, runes: n, start: at, mem: mem[:cap(mem)]}
	q.chunks = append([]pendingChunk{c}, q.chunks...)
	q.runes[0] += n
	q.trim(0)
}

// trim drops the oldest text of stream s past the cap.
func (q *pendingBuf) trim(s streamID) {
	for over := q.runes[s] - q.limit; over > 0; {
		i := 0
		for q.chunks[i].stream != s {
			i++
		}
		c := &q.chunks[i]
		q.lose(c.start)
		if c.runes <= over {
			over -= c.runes
			q.runes[s] -= c.runes
			q.keepSpare(c.mem)
			q.chunks = append(q.chunks[:i], q.chunks[i+1:]...)
			continue
		}
		c.text = c.text[runeStart(c.text, c.runes, over):]
		c.start += int64(over)
		c.runes -= over
		q.runes[s] -= over
		over = 0
	}
}

// removeStream drops every chunk of stream s, keeping one's memory as spare.
func (q *pendingBuf) removeStream(s streamID) []pendingChunk {
	out := q.chunks[:0]
	for _, c := range q.chunks {
		if c.stream == s {
			q.lose(c.start)
			q.keepSpare(c.mem)
		} else {
			out = append(out, c)
		}
	}
	clear(q.chunks[len(out):])
	return out
}

func (q *pendingBuf) keepSpare(mem []byte) {
	if cap(mem) > cap(q.spare) {
		q.spare = mem
	}
}

// drain returns everything pending in arrival order and empties the buffer,
// releasing its memory (an idle session holds none). lostAt is the earliest
// position dropped since the last drain, or -1.
func (q *pendingBuf) drain() (text string, lostAt int64) {
	size := 0
	for _, c := range q.chunks {
		size += len(c.text)
	}
	var sb strings.Builder
	sb.Grow(size)
	for _, c := range q.chunks {
		sb.Write(c.text)
	}
	lostAt = -1
	if q.dropped {
		lostAt = q.lostAt
	}
	q.chunks, q.runes, q.dropped, q.spare = nil, [2]int{}, false, nil
	return sb.String(), lostAt
}

func (q *pendingBuf) empty() bool { return len(q.chunks) == 0 }
