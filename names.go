package bgexec

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bgexec/bgexec/internal/host"
)

// splitCommand splits a command line on whitespace, keeping single- or
// double-quoted groups together. Quotes are removed only where a pair of
// them wraps a whole token ("two words" gives two words, but a"b c" stays
// a"b c"), and empty tokens are dropped, as the reference does.
func splitCommand(cmd string) []string {
	return splitCommandUntil(cmd, nil)
}

// splitCommandUntil is splitCommand that stops reading cmd as soon as enough
// reports that the tokens so far are enough; a nil enough reads it all.
func splitCommandUntil(cmd string, enough func(toks []string) bool) []string {
	// A token is the run of cmd between two spaces outside quotes, so it is
	// a substring of cmd: nothing is copied.
	var (
		toks  []string
		quote rune
		start = -1 // where the current token began; -1 between tokens
	)
	flush := func(end int) {
		if start >= 0 {
			t := cmd[start:end]
			if !utf8.ValidString(t) {
				t = string([]rune(t)) // each invalid byte becomes U+FFFD, as range reads it
			}
			if t = unwrapQuotes(t); t != "" {
				toks = append(toks, t)
			}
		}
		start = -1
	}
	for i, r := range cmd {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case unicode.IsSpace(r):
			flush(i)
			if enough != nil && enough(toks) {
				return toks
			}
			continue
		case r == '"' || r == '\'':
			quote = r
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(cmd))
	return toks
}

// unwrapQuotes removes the quotes around t when it starts and ends with the
// same quote character.
func unwrapQuotes(t string) string {
	if len(t) >= 2 && (t[0] == '"' || t[0] == '\'') && t[len(t)-1] == t[0] {
		return t[1 : len(t)-1]
	}
	return t
}

const maxNameTarget = 48

// deriveName is the list name of a command: its verb and its target (the
// first later token not starting with "-", else the second token), the target
// middle-truncated when longer than 48 characters. It reads cmd only up to
// that target, so the name of a command of megabytes costs no more than a
// short one's.
func deriveName(cmd string) string {
	toks := splitCommandUntil(cmd, func(toks []string) bool {
		return len(toks) >= 2 && !strings.HasPrefix(toks[len(toks)-1], "-")
	})
	return nameOf(toks)
}

// nameOf is deriveName given the command's tokens.
func nameOf(toks []string) string {
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
	return toks[0] + " " + host.MiddleTruncate(target, maxNameTarget)
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
