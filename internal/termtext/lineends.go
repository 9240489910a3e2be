package termtext

import "bytes"

// LineEnds turns the line endings of terminal output into LF, for text
// that has been through a [Cleaner]. A terminal's line discipline writes
// each LF as CRLF, and programs redraw a line by returning to its start
// with a lone CR (progress bars: "\r50%\r100%"). LineEnds follows what the
// cursor does rather than the bytes:
//
//   - a CR in the middle of a line ends the line: it becomes LF;
//   - an LF right after such a CR (CRLF) is the same line end and is
//     dropped, also when the CR came at the end of the previous chunk;
//   - a CR at the start of a line (at the start of the stream, after a line
//     end, or after another CR) moves nothing and is dropped, so the CR CR
//     LF a terminal makes of a program's own CRLF is one line end too;
//   - every other byte, LF included, is kept.
//
// A CR is never held back waiting for the next chunk: it is written as LF
// at once, and the state remembers it, so an LF that arrives later can be
// dropped. It only removes ASCII bytes, so the code points of a chunk
// shrink by exactly the bytes removed. The zero value is ready to use, at
// the start of a stream; use one per stream. Not safe for concurrent use.
type LineEnds struct {
	st lineState
}

type lineState uint8

const (
	lineStart lineState = iota // at the start of a line
	afterCR                    // a CR ended the line: an LF next is part of it
	midLine                    // after text
)

// Apply rewrites p in place and returns the rewritten text, a prefix of p,
// and the number of bytes removed.
func (l *LineEnds) Apply(p []byte) (out []byte, removed int) {
	w := 0 // write position; p[:w] is done
	for r := 0; r < len(p); {
		switch p[r] {
		case '\r':
			if l.st == midLine {
				p[w] = '\n'
				w++
				l.st = afterCR
			}
			r++
			continue
		case '\n':
			if l.st != afterCR {
				p[w] = '\n'
				w++
			}
			l.st = lineStart
			r++
			continue
		}
		// A run of text up to the next CR. It starts with a byte that is
		// neither CR nor LF, so its LFs are kept as they are.
		end := len(p)
		if i := bytes.IndexByte(p[r:], '\r'); i >= 0 {
			end = r + i
		}
		if w != r {
			copy(p[w:], p[r:end])
		}
		w += end - r
		l.st = midLine
		if p[w-1] == '\n' {
			l.st = lineStart
		}
		r = end
	}
	return p[:w], len(p) - w
}
