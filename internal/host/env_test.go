package host

import (
	"strings"
	"testing"
)

func TestMiddleTruncate(t *testing.T) {
	// want is the rune-slice definition the function must match.
	want := func(s string, n int) string {
		r := []rune(s)
		if len(r) <= n {
			return s
		}
		side := (n - 3) / 2
		return string(r[:side]) + "..." + string(r[len(r)-side:])
	}
	inputs := []string{"", "a", "abcdefghij", "héllo wörld, ünïcode ☃☃☃ and more", strings.Repeat("日本", 40), strings.Repeat(`"`, 1<<20)}
	for _, s := range inputs {
		for _, n := range []int{3, 4, 5, 9, 10, 11, 24, 40} {
			if got := MiddleTruncate(s, n); got != want(s, n) {
				t.Errorf("MiddleTruncate(%.20q, %d) = %.40q, want %.40q", s, n, got, want(s, n))
			}
		}
	}
}
