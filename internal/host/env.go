package host

import (
	"slices"
	"strconv"
	"strings"
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
// "abc...xyz", with (n-3)/2 characters on each side.
func MiddleTruncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	side := (n - 3) / 2
	return string(r[:side]) + "..." + string(r[len(r)-side:])
}
