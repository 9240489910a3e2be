package kube

import (
	"bytes"
	"testing"
)

// TestStreamFilter feeds the filter a stream in every split: the report
// and the trailer go out of it, a byte that only looks like a trailer's
// start stays, and an unfinished trailer is handed on at the end.
func TestStreamFilter(t *testing.T) {
	const tag = "0123456789abcdef"
	cases := []struct{ in, out, rest string }{
		{"\x1fbgexec1 42 42 0 /w\nout\x1fx\n\x1fbgexec-end " + tag + " 3 0\r\n", "out\x1fx\n", "3 0"},
		{"\x1fbgexec1 42 42 0 /w\nab\x1fbgexec-end ffff 1 0\n", "ab\x1fbgexec-end ffff 1 0\n", ""},
		{"\x1fbgexec1 42 42 0 /w\npartial\x1fbgexec-end " + tag, "partial\x1fbgexec-end " + tag, ""},
	}
	for _, c := range cases {
		for step := 1; step <= len(c.in); step++ {
			var out bytes.Buffer
			got := make(chan string, 1)
			rest := ""
			f := &streamFilter{w: &out, got: got, trailer: []byte(trailerHeader + tag + " "), end: func(r string) { rest = r }}
			for i := 0; i < len(c.in); i += step {
				if _, err := f.Write([]byte(c.in[i:min(i+step, len(c.in))])); err != nil {
					t.Fatal(err)
				}
			}
			f.flush()
			if rep := <-got; rep != "\x1fbgexec1 42 42 0 /w" {
				t.Fatalf("step %d: report %q", step, rep)
			}
			if out.String() != c.out || rest != c.rest {
				t.Fatalf("step %d of %q: output %q, trailer %q; want %q, %q", step, c.in, out.String(), rest, c.out, c.rest)
			}
		}
	}
}
