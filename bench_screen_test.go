//go:build linux

package bgexec

import (
	"context"
	"strings"
	"testing"
	"time"
)

// BenchmarkScreen times the screen action on a full 120×30 terminal (every
// cell printed), against log returning the same 30 lines of the same
// session through the same tool path. 20 calls per timed call.
// Target: ≤ 100 µs per screen (ns/op).
func BenchmarkScreen(b *testing.B) {
	sc := newBenchRegistry(b, Config{Containment: ContainmentOff}).Scope("bench")
	// 29 full lines and a 30th without its line end, so nothing scrolls.
	cmd := `i=1; while [ $i -lt 30 ]; do printf '%0120d\n' $i; i=$((i+1)); done; printf '%0120d' 30; exec sleep 1000`
	id := benchExec(b, sc, &ExecRequest{Command: cmd, PTY: true, Background: true}, StatusRunning).Details.SessionID
	full := func(r *Result) bool {
		lines := strings.Split(r.Text(), "\n")
		// Every screen's text ends with its cursor line.
		if n := len(lines); n > 0 && strings.HasPrefix(lines[n-1], "[cursor ") {
			lines = lines[:n-1]
		}
		return len(lines) == DefaultPTYRows && len(lines[DefaultPTYRows-1]) == DefaultPTYCols
	}
	screenReq := &ProcessRequest{Action: "screen", SessionID: id}
	// The shell may not have printed yet (a loaded machine can take a
	// second to start it, and a quiet session counts as idle): wait for
	// its 29th line before looking for the full screen.
	if w := benchProcess(b, sc, &ProcessRequest{Action: "wait", SessionID: id, Pattern: "0{100}29", Timeout: ptr(Number(60000))}); w.Details.Condition != "pattern" {
		b.Fatalf("the shell did not print its lines: %s", w.Text())
	}
	for deadline := time.Now().Add(time.Minute); ; {
		r := benchProcess(b, sc, &ProcessRequest{Action: "screen", SessionID: id, IdleMs: ptr(200.0), Timeout: ptr(Number(10000))})
		if full(r) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the screen never filled: %q", r.Text())
		}
	}
	logReq := &ProcessRequest{Action: "log", SessionID: id, Limit: ptr(DefaultPTYRows)}
	if r := benchProcess(b, sc, logReq); strings.Count(r.Text(), "\n") != DefaultPTYRows-1 {
		b.Fatalf("log does not return 30 lines: %q", r.Text())
	}
	p := benchPair{batch: 20}
	calls := func(req *ProcessRequest, check func(*Result) bool) func() {
		return func() {
			for range p.batch {
				r, err := sc.Process(context.Background(), req)
				if err != nil || !check(r) {
					b.Fatalf("%s: %v %q", req.Action, err, r.Text())
				}
			}
		}
	}
	lib := calls(screenReq, full)
	base := calls(logReq, func(r *Result) bool { return r.Details.Status == StatusRunning })
	for i := 0; b.Loop(); i++ {
		p.run(i, base, lib)
	}
	p.reportTime(b)
}
