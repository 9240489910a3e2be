package host

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SetEnv returns env with each "KEY=VALUE" of extra set: an entry of env
// with the same key is left out, and extra's entries come last.
func SetEnv(env, extra []string) []string {
	out := make([]string, 0, len(env)+len(extra))
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		if !slices.ContainsFunc(extra, func(x string) bool { return strings.HasPrefix(x, k+"=") }) {
			out = append(out, e)
		}
	}
	return append(out, extra...)
}

// PortNames returns ":3000"-style names of the distinct ports of a list
// sorted by port, in order.
func PortNames(ports []Listener) []string {
	var out []string
	for i, l := range ports {
		if i > 0 && ports[i-1].Port == l.Port {
			continue
		}
		out = append(out, ":"+strconv.Itoa(l.Port))
	}
	return out
}

// MiddleTruncate shortens s when it is longer than n characters to
// "abc...xyz", with (n-3)/2 characters on each side. It reads at most
// n+1 characters from the front and (n-3)/2 from the back, so a long s
// (a 10 MB command) costs no more than a short one.
func MiddleTruncate(s string, n int) string {
	head, count := 0, 0 // byte offset after the first side characters
	side := (n - 3) / 2
	for i := range s {
		if count == side {
			head = i
		}
		count++
		if count > n {
			break
		}
	}
	if count <= n {
		return s
	}
	tail := len(s)
	for range side {
		_, size := utf8.DecodeLastRuneInString(s[:tail])
		tail -= size
	}
	return s[:head] + "..." + s[tail:]
}
