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

func TestLayered(t *testing.T) {
	e := Env{
		Carried:   []string{"A=carried", "GONE", "B=carried"},
		Defaults:  []string{"B=default", "C=default", "TERM=dumb"},
		Overrides: map[string]string{"C": "override", "Z": "z", "D": "d"},
		Forced:    []string{"A=forced"},
		Added:     []string{"TRACEPARENT=t", "D=added"},
	}
	// B is carried, so its default does not apply; A's forced entry
	// replaces the carried one.
	want := []string{"GONE", "B=carried", "TERM=dumb", "C=override", "Z=z", "A=forced", "TRACEPARENT=t", "D=added"}
	got := e.Layered()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Layered() = %q, want %q", got, want)
	}
	if len(e.Carried) != 3 || e.Carried[0] != "A=carried" {
		t.Errorf("Layered changed Carried: %q", e.Carried)
	}
}
