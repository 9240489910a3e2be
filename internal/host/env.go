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

// Layered returns e's layers as KEY=value entries to apply, in order,
// over a base environment the host keeps (a node's login environment, a
// container's): Carried, the Defaults whose keys neither Carried nor
// Overrides has, the Overrides sorted by key, then Forced and Added, each
// of those two replacing the earlier entries of its keys. Carried's bare
// KEY names, which a node unsets, are kept.
func (e Env) Layered() []string {
	out := slices.Clone(e.Carried)
	for _, d := range e.Defaults {
		k, _, _ := strings.Cut(d, "=")
		_, overridden := e.Overrides[k]
		carried := slices.ContainsFunc(e.Carried, func(c string) bool { return c == k || strings.HasPrefix(c, k+"=") })
		if !overridden && !carried {
			out = append(out, d)
		}
	}
	keys := make([]string, 0, len(e.Overrides))
	for k := range e.Overrides {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+e.Overrides[k])
	}
	out = SetEnv(out, e.Forced)
	return SetEnv(out, e.Added)
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
