package bgexec

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/bgexec/bgexec/internal/session"
)

// joinHeadTail is a head-and-tail text: the head, the marker naming what
// was left out, and the tail. trim removes the outer whitespace, as the
// exec text does.
func joinHeadTail(ht session.HeadTail, trim bool) string {
	head, tail := strings.TrimRight(ht.Head, "\r\n"), strings.TrimRight(strings.TrimLeft(ht.Tail, "\r\n"), "\n")
	if trim {
		head, tail = strings.TrimLeftFunc(head, unicode.IsSpace), strings.TrimRightFunc(tail, unicode.IsSpace)
	}
	parts := make([]string, 0, 3)
	if head != "" {
		parts = append(parts, head)
	}
	parts = append(parts, gapMarker(ht.Gap))
	if tail != "" {
		parts = append(parts, tail)
	}
	return strings.Join(parts, "\n\n")
}

// gapMarker says what a head-and-tail text left out:
// "[... 1200 lines (48213 characters) left out: lines 50-1249. process log offset=50 limit=1200 reads them.]"
func gapMarker(g *session.Gap) string {
	n := g.ToLine - g.FromLine + 1
	what := fmt.Sprintf("[... %d %s (%d characters) left out: %s.", n, plural(n, "line", "lines"), g.Chars, lineRange(g.FromLine, g.ToLine))
	switch {
	case !g.Retained:
		return what + " They were dropped at the retention cap and cannot be recovered.]"
	case !g.LostForGood:
		return what + fmt.Sprintf(" process log offset=%d limit=%d reads them.]", g.FromLine, n)
	case g.LogLine > g.FromLine:
		return what + fmt.Sprintf(" %s dropped at the retention cap and cannot be recovered; process log offset=%d limit=%d reads the rest.]",
			strings.ToUpper(lineRange(g.FromLine, g.LogLine-1)[:1])+lineRange(g.FromLine, g.LogLine-1)[1:]+map[bool]string{true: " was", false: " were"}[g.LogLine-1 == g.FromLine],
			g.LogLine, g.ToLine-g.LogLine+1)
	}
	return what + fmt.Sprintf(" Part of it was dropped at the retention cap and cannot be recovered; process log offset=%d limit=%d reads the rest.]", g.LogLine, g.ToLine-g.LogLine+1)
}

func lineRange(from, to int64) string {
	if from == to {
		return fmt.Sprintf("line %d", from)
	}
	return fmt.Sprintf("lines %d-%d", from, to)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// cutBody is a poll or wait text's output part: with head-and-tail
// truncation and a lossy drain, the drained window's head and tail (or
// the whole window when the retained text still holds it within the
// poll cap); otherwise body with the notice of what the drain lost.
func cutBody(body string, dr *session.Drained) string {
	switch {
	case dr.Cut == nil:
		return withLossNotice(body, dr.Loss)
	case dr.Cut.Gap == nil:
		return strings.TrimRight(dr.Cut.Tail, "\n")
	}
	return joinHeadTail(*dr.Cut, false)
}
