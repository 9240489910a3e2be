//go:build linux

package bgexec

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
)

// BenchmarkBusyHost measures what a poll and a list cost on a host with
// many unrelated processes: BGEXEC_BENCH_HOST_PROCS (default 2,000; 200
// with -short) `sleep` children of the benchmark, started before and
// killed after it. Sessions are contained by their process group
// (ContainmentOff: the mode of a host without a delegated cgroup), whose
// resources once came from a scan of every /proc/<pid>/stat per call.
// The baseline of each figure is a log of 10 lines of the same session,
// which reads no /proc file, in the same run.
//
//   - poll: an empty poll of a running session with three processes,
//     batches of 100. Target: ≤ 50 µs and ≤ 4 KB per poll (ns/op, B/op),
//     at any host process count.
//   - poll-input-wait: an empty poll of a session quiet past the input-wait
//     threshold (1 ms here), so every poll also asks the kernel whether its
//     processes are blocked reading its stdin, which once scanned every
//     /proc/<pid>/stat too. Same target as poll.
//   - list: a list of a scope of 10 running sessions, batches of 10.
//   - read: one fresh resource view of the session (what a poll pays at
//     most once per 250 ms; kill pays it every time), against the scan of
//     every /proc/<pid>/stat that every poll and every listed session paid
//     before (contain.GroupMembers): the old cost, measured in the same run.
func BenchmarkBusyHost(b *testing.B) {
	n := int(benchEnvInt("BGEXEC_BENCH_HOST_PROCS", 2000))
	if testing.Short() {
		n = min(n, 200)
	}
	_, restore := raiseNoFile(b)
	b.Cleanup(restore)
	startHostProcs(b, n)

	reg := newBenchRegistry(b, Config{Containment: ContainmentOff})
	sc := reg.Scope("bench")
	const cmd = "seq 10; sleep 1000 & sleep 1000; wait"
	id := benchExec(b, sc, &ExecRequest{Command: cmd, Background: true}, StatusRunning).Details.SessionID
	awaitLastLine(b, sc, id, "10")
	benchProcess(b, sc, &ProcessRequest{Action: "poll", SessionID: id}) // takes the seq output
	for range 9 {
		benchExec(b, sc, &ExecRequest{Command: cmd, Background: true}, StatusRunning)
	}
	// The session's three processes (its shell and two sleeps) are seen
	// before anything is timed.
	s := sessionOf(reg, id)
	for deadline := time.Now().Add(time.Minute); ; {
		refreshResources(s)
		if r := sessionResources(s); r != nil && r.Tasks == 3 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the session's processes: %+v, want 3 tasks", sessionResources(s))
		}
		time.Sleep(10 * time.Millisecond) // the shell is forking its sleeps
	}
	logs := func(batch int) func() {
		req := &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0), Limit: ptr(10)}
		return func() {
			for range batch {
				r, err := sc.Process(context.Background(), req)
				if err != nil || !strings.HasPrefix(r.Text(), "1\n2\n") {
					b.Fatalf("log: %v %s", err, r.Text())
				}
			}
		}
	}
	b.Run("poll", func(b *testing.B) {
		p := benchPair{batch: 100}
		req := &ProcessRequest{Action: "poll", SessionID: id}
		lib := func() {
			for range p.batch {
				r, err := sc.Process(context.Background(), req)
				if err != nil || r.Details.Status != StatusRunning || !strings.HasPrefix(r.Text(), "(no new output)") ||
					r.Details.Resources == nil || r.Details.Resources.Tasks != 3 {
					b.Fatalf("poll: %v %s %+v", err, r.Text(), r.Details.Resources)
				}
			}
		}
		base := logs(p.batch)
		for i := 0; b.Loop(); i++ {
			p.run(i, base, lib)
		}
		p.reportTime(b)
		b.ReportMetric(float64(n), "host-procs")
	})
	b.Run("poll-input-wait", func(b *testing.B) {
		reg := newBenchRegistry(b, Config{Containment: ContainmentOff, InputWaitIdleMs: 1})
		sc := reg.Scope("bench")
		id := benchExec(b, sc, &ExecRequest{Command: "seq 10; read x", Background: true, Stdin: "pipe"}, StatusRunning).Details.SessionID
		p := benchPair{batch: 100}
		req := &ProcessRequest{Action: "poll", SessionID: id}
		for deadline := time.Now().Add(time.Minute); ; {
			r, err := sc.Process(context.Background(), req)
			if err == nil && r.Details.WaitingForInput != nil && *r.Details.WaitingForInput {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("the session never read its input: %v %s", err, r.Text())
			}
			time.Sleep(10 * time.Millisecond) // the shell is still starting its read
		}
		lib := func() {
			for range p.batch {
				r, err := sc.Process(context.Background(), req)
				if err != nil || r.Details.WaitingForInput == nil || !*r.Details.WaitingForInput {
					b.Fatalf("poll: %v %s", err, r.Text())
				}
			}
		}
		base := func() {
			req := &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0), Limit: ptr(10)}
			for range p.batch {
				if r, err := sc.Process(context.Background(), req); err != nil || !strings.HasPrefix(r.Text(), "1\n2\n") {
					b.Fatalf("log: %v %s", err, r.Text())
				}
			}
		}
		for i := 0; b.Loop(); i++ {
			p.run(i, base, lib)
		}
		p.reportTime(b)
		b.ReportMetric(float64(n), "host-procs")
	})
	b.Run("list", func(b *testing.B) {
		p := benchPair{batch: 10}
		req := &ProcessRequest{Action: "list"}
		lib := func() {
			for range p.batch {
				r, err := sc.Process(context.Background(), req)
				if err != nil || len(r.Details.Sessions) != 10 || r.Details.Sessions[0].Resources == nil {
					b.Fatalf("list: %v %s", err, r.Text())
				}
			}
		}
		base := logs(p.batch)
		for i := 0; b.Loop(); i++ {
			p.run(i, base, lib)
		}
		p.reportTime(b)
		b.ReportMetric(float64(n), "host-procs")
	})
	b.Run("read", func(b *testing.B) {
		leader := s.Pid()
		var p benchPair
		lib := func() { refreshResources(s) }
		base := func() {
			if _, err := contain.GroupMembers(leader); err != nil {
				b.Fatal(err)
			}
		}
		for i := 0; b.Loop(); i++ {
			p.run(i, base, lib)
		}
		p.reportTime(b)
		b.ReportMetric(float64(n), "host-procs")
	})
}

// startHostProcs starts n `sleep` processes unrelated to any session, and
// kills and reaps them when the benchmark ends.
func startHostProcs(b *testing.B, n int) {
	procs := make([]*exec.Cmd, 0, n)
	b.Cleanup(func() {
		for _, c := range procs {
			_ = c.Process.Kill() // Best effort: it is reaped just below either way.
		}
		for _, c := range procs {
			_ = c.Wait() // killed: the error is the signal
		}
	})
	for i := range n {
		c := exec.Command("sleep", "100000")
		if err := c.Start(); err != nil {
			b.Fatalf("host process %d of %d: %v", i+1, n, err)
		}
		procs = append(procs, c)
	}
	b.Logf("%d host processes started", n)
}
