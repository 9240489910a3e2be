package bgexec

import (
	"fmt"
	"strings"
	"time"
	"unicode"
)

// splitCommand splits a command line on whitespace, keeping single- or
// double-quoted groups together and removing the quotes.
func splitCommand(cmd string) []string {
	var (
		toks  []string
		cur   strings.Builder
		quote rune
		in    bool // inside a token (possibly an empty quoted one)
	)
	for _, r := range cmd {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, in = r, true
		case unicode.IsSpace(r):
			if in {
				toks = append(toks, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		toks = append(toks, cur.String())
	}
	return toks
}

const maxNameTarget = 48

// deriveName is the list name of a command: its verb and its target (the
// first later token not starting with "-", else the second token), the target
// middle-truncated to 48 characters.
func deriveName(cmd string) string {
	toks := splitCommand(cmd)
	switch len(toks) {
	case 0:
		return ""
	case 1:
		return toks[0]
	}
	target := toks[1]
	for _, t := range toks[1:] {
		if !strings.HasPrefix(t, "-") {
			target = t
			break
		}
	}
	return toks[0] + " " + middleTruncate(target, maxNameTarget)
}

// middleTruncate shortens s to n characters as "abc...xyz".
func middleTruncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	keep := n - 3
	head := (keep + 1) / 2
	return string(r[:head]) + "..." + string(r[len(r)-(keep-head):])
}

// compactDuration formats d as 850ms, 45s, 2m5s, 1h30m or 2d3h.
func compactDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return joinUnits(s/60, "m", s%60, "s")
	case s < 86400:
		return joinUnits(s/3600, "h", s%3600/60, "m")
	default:
		return joinUnits(s/86400, "d", s%86400/3600, "h")
	}
}

func joinUnits(a int64, ua string, b int64, ub string) string {
	if b == 0 {
		return fmt.Sprintf("%d%s", a, ua)
	}
	return fmt.Sprintf("%d%s%d%s", a, ua, b, ub)
}
