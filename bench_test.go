//go:build linux

package bgexec

// Benchmarks against the physical baselines (BENCHMARKS.md). Every figure is
// paired with the raw way to do the same work, measured in the same run and
// interleaved iteration by iteration, so the ratio holds on a shared, noisy
// machine. They run only with -bench; the full-size runs (1 GiB of pipe
// output, 256 MiB of PTY output, 10,000 idle sessions) need
// BGEXEC_BENCH_LARGE=1, and BGEXEC_BENCH_SESSIONS=n,m picks the idle counts.
//
// Custom units: "raw-…" is the baseline's figure; "ratio" is bgexec's time
// over the baseline's (exec: lower is better, target ≤ 1.10) or bgexec's
// throughput over the baseline's (ingest: higher is better); "p50-ratio"
// the same from per-iteration medians; "cpu-ratio" the same from the CPU
// time of this process and its reaped children, which is steadier than wall
// time on a shared machine. ns/op, B/op and allocs/op are bgexec's side
// alone (allocations are read from runtime/metrics, so per-side figures are
// close, not exact).

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// benchShell is the shell of every benchmark, bgexec and raw alike: dash,
// the cheapest common sh, so the baseline is as fast as it gets.
const benchShell = "/bin/sh"

func benchLarge() bool { return os.Getenv("BGEXEC_BENCH_LARGE") == "1" }

// monoNow is CLOCK_MONOTONIC in ns, the clock the helper children stamp with.
func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// benchContainment runs f once per containment mode: a cgroup per session
// (when this machine allows it) and the process group alone.
func benchContainment(b *testing.B, cfg Config, f func(b *testing.B, reg *Registry)) {
	for _, m := range []struct {
		name string
		mode Containment
	}{{"cgroup", ContainmentAuto}, {"pgroup", ContainmentOff}} {
		b.Run(m.name, func(b *testing.B) {
			c := cfg
			c.Containment = m.mode
			reg := newBenchRegistry(b, c)
			if m.mode == ContainmentAuto && reg.cgroups == nil {
				b.Skip("cgroup v2 containment is not available here")
			}
			f(b, reg)
		})
	}
}

func newBenchRegistry(b *testing.B, cfg Config) *Registry {
	b.Helper()
	if cfg.Shell == "" {
		cfg.Shell = benchShell
	}
	reg, err := NewRegistry(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := reg.Close(ctx); err != nil {
			b.Error(err)
		}
	})
	return reg
}

// allocCounters reads the cumulative heap allocation counters cheaply
// (no stop-the-world, unlike ReadMemStats).
func allocCounters() (objects, bytes uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// heapObjects is the heap occupied by objects, live or not yet swept.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// liveHeap collects and returns the live heap.
func liveHeap() uint64 {
	runtime.GC()
	return heapObjects()
}

// heapPeak samples the heap every 2 ms until stop is called, and returns the
// highest value seen.
func heapPeak() (stop func() uint64) {
	done := make(chan struct{})
	res := make(chan uint64, 1)
	go func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		peak := heapObjects()
		for {
			select {
			case <-done:
				res <- max(peak, heapObjects())
				return
			case <-t.C:
				peak = max(peak, heapObjects())
			}
		}
	}()
	return func() uint64 { close(done); return <-res }
}

func benchPercentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func benchMean(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

func benchMicros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// benchPair times the raw baseline and bgexec for the same work, interleaved.
type benchPair struct {
	raw, lib           []time.Duration
	rawCPU, libCPU     time.Duration // user+system time of this process and its reaped children
	rawObjs, libObjs   uint64
	rawBytes, libBytes uint64
}

// cpuTime is the CPU time used so far by this process and by the children
// it has reaped.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// timeSide runs f and records its duration, CPU time and allocations.
func timeSide(f func(), d *[]time.Duration, cpu *time.Duration, objs, bytes *uint64) {
	o0, b0 := allocCounters()
	c0 := cpuTime()
	t0 := time.Now()
	f()
	el := time.Since(t0)
	*cpu += cpuTime() - c0
	o1, b1 := allocCounters()
	*d = append(*d, el)
	*objs += o1 - o0
	*bytes += b1 - b0
}

// run measures one iteration, alternating which side goes first so neither
// always follows the other's garbage or cache state.
func (p *benchPair) run(i int, raw, lib func()) {
	alternate(i,
		func() { timeSide(raw, &p.raw, &p.rawCPU, &p.rawObjs, &p.rawBytes) },
		func() { timeSide(lib, &p.lib, &p.libCPU, &p.libObjs, &p.libBytes) })
}

// alternate runs raw then lib on even iterations and lib then raw on odd
// ones, so neither side always follows the other.
func alternate(i int, raw, lib func()) {
	if i%2 == 0 {
		raw()
		lib()
	} else {
		lib()
		raw()
	}
}

// reportTime reports per-op time: bgexec as ns/op, the raw side, and the
// cost ratio bgexec/raw (target ≤ 1.10 for exec).
func (p *benchPair) reportTime(b *testing.B) {
	n := uint64(len(p.lib))
	if n == 0 {
		return
	}
	b.ReportMetric(float64(benchMean(p.lib)), "ns/op")
	b.ReportMetric(float64(benchMean(p.raw)), "raw-ns/op")
	b.ReportMetric(float64(benchMean(p.lib))/float64(benchMean(p.raw)), "ratio")
	b.ReportMetric(float64(benchPercentile(p.lib, 0.5))/float64(benchPercentile(p.raw, 0.5)), "p50-ratio")
	b.ReportAllocs() // shows allocs/op and B/op: bgexec's alone, set here
	b.ReportMetric(float64(p.libObjs/n), "allocs/op")
	b.ReportMetric(float64(p.libBytes/n), "B/op")
	b.ReportMetric(float64(p.rawObjs/n), "raw-allocs/op")
	b.ReportMetric(float64(p.libCPU)/float64(p.rawCPU), "cpu-ratio")
}

// reportThroughput reports MB/s of each side for size bytes per iteration,
// and the throughput ratio bgexec/raw.
func (p *benchPair) reportThroughput(b *testing.B, size int64) {
	if len(p.lib) == 0 {
		return
	}
	mbps := func(d time.Duration) float64 { return float64(size) / 1e6 / d.Seconds() }
	lib, raw := mbps(benchPercentile(p.lib, 0.5)), mbps(benchPercentile(p.raw, 0.5))
	b.ReportMetric(float64(benchMean(p.lib)), "ns/op")
	b.ReportMetric(lib, "MB/s")
	b.ReportMetric(raw, "raw-MB/s")
	b.ReportMetric(lib/raw, "ratio")
	// CPU time (this process and the child) per byte: steadier than wall
	// time on a shared machine, and what the wall time tends to when the
	// cores are contended.
	b.ReportMetric(float64(p.rawCPU)/float64(p.libCPU), "cpu-ratio")
	n := uint64(len(p.lib))
	b.ReportAllocs()
	b.ReportMetric(float64(p.libObjs/n), "allocs/op")
	b.ReportMetric(float64(p.libBytes/n), "B/op")
}

// ---------------------------------------------------------------------------
// 1. Foreground exec of `true`.

// BenchmarkExecTrue runs `sh -c true` in the foreground through Scope.Exec
// and, interleaved, through os/exec (Run: spawn and wait). Target: ratio ≤ 1.10.
func BenchmarkExecTrue(b *testing.B) {
	benchContainment(b, Config{}, func(b *testing.B, reg *Registry) {
		sc := reg.Scope("bench")
		ctx := context.Background()
		var p benchPair
		raw := func() {
			if err := exec.Command(benchShell, "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
		lib := func() {
			res, err := sc.Exec(ctx, &ExecRequest{Command: "true"})
			if err != nil || res.Details.Status != StatusCompleted {
				b.Fatalf("exec: %v %+v", err, res)
			}
		}
		for i := 0; b.Loop(); i++ {
			p.run(i, raw, lib)
		}
		p.reportTime(b)
	})
}

// BenchmarkExecTrueCaptured is BenchmarkExecTrue against a baseline that
// also captures stdout and stderr, as any caller of a tool must.
func BenchmarkExecTrueCaptured(b *testing.B) {
	reg := newBenchRegistry(b, Config{Containment: ContainmentOff})
	sc := reg.Scope("bench")
	ctx := context.Background()
	var p benchPair
	raw := func() {
		var out, errb bytes.Buffer
		c := exec.Command(benchShell, "-c", "true")
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
	}
	lib := func() {
		if _, err := sc.Exec(ctx, &ExecRequest{Command: "true"}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; b.Loop(); i++ {
		p.run(i, raw, lib)
	}
	p.reportTime(b)
}

// ---------------------------------------------------------------------------
// 2 and 3. Ingest throughput: pipe and PTY.

// rawPipeRead runs cmdline with stdout on a pipe and reads it to EOF in
// 64 KiB reads (the default pipe's capacity), discarding the data. With
// BGEXEC_BENCH_RAWPIPE=bytes the pipe is first resized (F_SETPIPE_SZ), to
// compare with a session's busy pipe on equal terms.
func rawPipeRead(b *testing.B, cmdline string) int64 {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	if v := os.Getenv("BGEXEC_BENCH_RAWPIPE"); v != "" {
		size, _ := strconv.Atoi(v)
		rc, _ := r.SyscallConn()
		_ = rc.Control(func(fd uintptr) { _, err = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size) })
		if err != nil {
			b.Fatal(err)
		}
	}
	c := exec.Command(benchShell, "-c", cmdline)
	c.Stdout = w
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	_ = w.Close()
	n := readAll(r)
	_ = r.Close()
	if err := c.Wait(); err != nil {
		b.Fatal(err)
	}
	return n
}

// rawPTYRead runs cmdline under a creack/pty terminal and reads the master
// to EOF (EIO) in 64 KiB reads.
func rawPTYRead(b *testing.B, cmdline string) int64 {
	c := exec.Command(benchShell, "-c", cmdline)
	master, err := pty.Start(c)
	if err != nil {
		b.Fatal(err)
	}
	n := readAll(master)
	_ = master.Close()
	if err := c.Wait(); err != nil {
		b.Fatal(err)
	}
	return n
}

func readAll(r io.Reader) int64 {
	size := 64 << 10
	if os.Getenv("BGEXEC_BENCH_RAWPIPE") != "" {
		size = 128 << 10 // the engine's read size
	}
	buf := make([]byte, size)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(k)
		if err != nil {
			return n
		}
	}
}

// ingestRun is one bgexec ingest: a background session runs cmdline to the
// end with nobody polling (pending output keeps overflowing its cap, the
// worst case), then it is cleared. It returns the characters the session
// counted and the heap growth, peak and retained, over the live heap before.
func ingestRun(b *testing.B, reg *Registry, req *ExecRequest) (chars int64, peak, retained uint64) {
	sc := reg.Scope("bench")
	ctx := context.Background()
	base := liveHeap()
	stop := heapPeak()
	res, err := sc.Exec(ctx, req)
	if err != nil || res.Details.Status != StatusRunning {
		b.Fatalf("exec: %v %+v", err, res)
	}
	s, ok, _ := reg.lookup(sc.key, res.Details.SessionID)
	if !ok {
		b.Fatal("session not found")
	}
	<-s.Done()
	p := stop()
	b.StopTimer()
	after := liveHeap()
	chars = s.Snapshot(0).TotalChars
	if r, err := sc.Process(ctx, &ProcessRequest{Action: "clear", SessionID: s.ID()}); err != nil || r.Details.Status == StatusFailed {
		b.Fatalf("clear: %v %+v", err, r)
	}
	b.StartTimer()
	return chars, p - min(p, base), after - min(after, base)
}

// BenchmarkIngestPipe reads lines of text printed by a helper child through
// a session with the default caps, against a raw read loop on the same
// child's pipe. 64 MiB per iteration, 1 GiB with BGEXEC_BENCH_LARGE=1, or
// BGEXEC_BENCH_BYTES.
// Target: ratio ≥ 0.7, heap growth ≤ caps + 8 MiB.
func BenchmarkIngestPipe(b *testing.B) {
	size := int64(64 << 20)
	if benchLarge() {
		size = 1 << 30
	}
	if v, err := strconv.ParseInt(os.Getenv("BGEXEC_BENCH_BYTES"), 10, 64); err == nil && v > 0 {
		size = v
	}
	benchIngest(b, size, false)
}

// BenchmarkIngestPTY is BenchmarkIngestPipe through a pseudo-terminal,
// against a raw read loop on a creack/pty master. 32 MiB per iteration,
// 256 MiB with BGEXEC_BENCH_LARGE=1. Target: ratio ≥ 0.8.
func BenchmarkIngestPTY(b *testing.B) {
	size := int64(32 << 20)
	if benchLarge() {
		size = 256 << 20
	}
	benchIngest(b, size, true)
}

func benchIngest(b *testing.B, size int64, usePTY bool) {
	reg := newBenchRegistry(b, Config{Containment: ContainmentOff})
	cmdline := helper("print-block", strconv.FormatInt(size, 10))
	want := size
	if usePTY {
		want = size + size/100 // the line discipline turns each \n into \r\n
	}
	var p benchPair
	var peak, retained uint64
	for i := 0; b.Loop(); i++ {
		raw := func() {
			var n int64
			if usePTY {
				n = rawPTYRead(b, cmdline)
			} else {
				n = rawPipeRead(b, cmdline)
			}
			if n != want {
				b.Fatalf("raw read %d bytes, want %d", n, want)
			}
		}
		lib := func() {
			n, pk, rt := ingestRun(b, reg, &ExecRequest{Command: cmdline, Background: true, PTY: usePTY})
			if n != want {
				b.Fatalf("session counted %d chars, want %d", n, want)
			}
			peak, retained = max(peak, pk), max(retained, rt)
		}
		p.run(i, raw, lib)
	}
	p.reportThroughput(b, want)
	b.ReportMetric(float64(peak)/(1<<20), "heap-peak-MiB")
	b.ReportMetric(float64(retained)/(1<<10), "heap-retained-KiB")
}

// ---------------------------------------------------------------------------
// 4. Idle sessions.

type procStats struct {
	rss, heap  uint64
	goroutines int
	threads    int
	fds        int
}

// readProcStats collects garbage, returns freed memory to the OS, and reads
// this process's RSS, heap, goroutines, OS threads and descriptors.
func readProcStats() (procStats, error) {
	runtime.GC()
	debug.FreeOSMemory()
	var st procStats
	st.heap = heapObjects()
	st.goroutines = runtime.NumGoroutine()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return st, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		v = strings.TrimSpace(v)
		switch k {
		case "VmRSS":
			kb, _ := strconv.ParseUint(strings.TrimSuffix(v, " kB"), 10, 64)
			st.rss = kb << 10
		case "Threads":
			st.threads, _ = strconv.Atoi(v)
		}
	}
	ents, err := os.ReadDir("/proc/self/fd")
	st.fds = len(ents) - 1 // ReadDir's own descriptor
	return st, err
}

func mustProcStats(b *testing.B) procStats {
	st, err := readProcStats()
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// raiseNoFile raises the soft RLIMIT_NOFILE to the hard limit and returns
// the hard limit and a function restoring the old limit.
func raiseNoFile(b *testing.B) (hard uint64, restore func()) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		b.Fatal(err)
	}
	nl := old
	nl.Cur = nl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &nl); err != nil {
		b.Fatal(err)
	}
	return old.Max, func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) }
}

func idleCounts() []int {
	if v := os.Getenv("BGEXEC_BENCH_SESSIONS"); v != "" {
		var out []int
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
				out = append(out, n)
			}
		}
		return out
	}
	if benchLarge() {
		return []int{1000, 10000}
	}
	return []int{1000}
}

// BenchmarkIdleSessions starts n background `sleep 1000` sessions and
// reports what each costs this process while idle: RSS, heap, goroutines,
// OS threads, descriptors, and the start rate against raw os/exec spawns of
// the same command. The raw side runs in a helper process of its own (so
// the threads it leaves behind do not hide ours): each child gets its two
// output pipes and a goroutine in Wait, the usual os/exec idiom. The soft
// RLIMIT_NOFILE is raised to the hard limit for the run and restored; a
// count whose descriptors cannot fit under the hard limit is skipped with
// the numbers. Run with -benchtime=1x.
// Targets: ≤ 48 KiB RSS per session; threads flat in n.
func BenchmarkIdleSessions(b *testing.B) {
	for _, n := range idleCounts() {
		for _, m := range []struct {
			name string
			mode Containment
		}{{"cgroup", ContainmentAuto}, {"pgroup", ContainmentOff}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, m.name), func(b *testing.B) {
				hard, restore := raiseNoFile(b)
				defer restore()
				for b.Loop() {
					idleRun(b, n, m.mode, hard)
				}
			})
		}
	}
}

func idleRun(b *testing.B, n int, mode Containment, hardFDs uint64) {
	defer b.StartTimer() // b.Loop wants it running
	ctx := context.Background()
	reg, err := NewRegistry(Config{Shell: benchShell, Containment: mode})
	if err != nil {
		b.Fatal(err)
	}
	closed := false
	closeReg := func() {
		if closed {
			return
		}
		closed = true
		cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		t := time.Now()
		if err := reg.Close(cctx); err != nil {
			b.Error(err)
		}
		b.ReportMetric(time.Since(t).Seconds(), "close-s")
	}
	defer closeReg()
	if mode == ContainmentAuto && reg.cgroups == nil {
		b.Skip("cgroup v2 containment is not available here")
	}
	sc := reg.Scope("bench")
	start := func() {
		res, err := sc.Exec(ctx, &ExecRequest{Command: "sleep 1000", Background: true})
		if err != nil || res.Details.Status != StatusRunning {
			b.Fatalf("exec: %v %s", err, res.Text())
		}
	}
	b.StopTimer()
	before := mustProcStats(b)
	// A probe tells how many descriptors a session holds, so a count that
	// cannot fit under the hard limit is skipped instead of failing halfway.
	const probe = 16
	t0 := time.Now()
	for range probe {
		start()
	}
	probeDur := time.Since(t0)
	fdsPer := float64(mustProcStats(b).fds-before.fds) / probe
	if need := uint64(float64(n)*fdsPer) + uint64(before.fds) + 64; need > hardFDs {
		b.Skipf("n=%d needs ~%d descriptors (%.1f per session); the RLIMIT_NOFILE hard limit is %d (raising it needs CAP_SYS_RESOURCE); the largest n that fits is %d",
			n, need, fdsPer, hardFDs, int(float64(hardFDs-uint64(before.fds)-64)/fdsPer))
	}
	b.StartTimer()
	t0 = time.Now()
	for range n - probe {
		start()
	}
	libDur := time.Since(t0) + probeDur
	b.StopTimer()
	after := mustProcStats(b)

	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	b.ReportMetric(per(after.rss, before.rss)/1024, "rss-KiB/session")
	b.ReportMetric(per(after.heap, before.heap)/1024, "heap-KiB/session")
	b.ReportMetric(float64(after.goroutines-before.goroutines)/float64(n), "goroutines/session")
	b.ReportMetric(float64(after.fds-before.fds)/float64(n), "fds/session")
	b.ReportMetric(float64(after.threads-before.threads), "threads-added")
	b.ReportMetric(float64(after.threads), "threads")
	b.ReportMetric(float64(n)/libDur.Seconds(), "starts/s")
	closeReg() // frees the process slots and descriptors for the raw run

	raw := exec.Command(os.Args[0], "raw-idle", strconv.Itoa(n))
	raw.Env = append(os.Environ(), helperEnv+"=1")
	raw.Stderr = os.Stderr
	out, err := raw.Output()
	if err != nil {
		b.Fatalf("raw-idle helper: %v", err)
	}
	var rate, rss float64
	var threads int
	if _, err := fmt.Sscanf(string(out), "%g %g %d", &rate, &rss, &threads); err != nil {
		b.Fatalf("raw-idle helper said %q: %v", out, err)
	}
	b.ReportMetric(rate, "raw-starts/s")
	b.ReportMetric(float64(n)/libDur.Seconds()/rate, "start-ratio")
	b.ReportMetric(rss/1024, "raw-rss-KiB/child")
	b.ReportMetric(float64(threads), "raw-threads-added")
}

// rawIdleHelper is the raw side of BenchmarkIdleSessions, run as the helper
// command "raw-idle N" in a process of its own: it starts N `sh -c 'sleep
// 1000'` children with os/exec (own process group, stdout and stderr pipes
// kept open, a goroutine in Wait for each), prints the start rate, the RSS
// per child and the OS threads added, then kills and reaps them.
func rawIdleHelper(args []string) int {
	n, _ := strconv.Atoi(args[0])
	debug.SetMaxThreads(n + 10000) // each waiting goroutine holds a thread
	before, err := readProcStats()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmds := make([]*exec.Cmd, 0, n)
	var files []*os.File
	var wg sync.WaitGroup
	t0 := time.Now()
	for range n {
		c := exec.Command(benchShell, "-c", "sleep 1000")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		or, ow, err := os.Pipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		er, ew, err := os.Pipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		c.Stdout, c.Stderr = ow, ew
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_ = ow.Close()
		_ = ew.Close()
		files = append(files, or, er)
		cmds = append(cmds, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Wait()
		}()
	}
	el := time.Since(t0)
	// The waiters enter wait at once; give the stragglers a moment.
	time.Sleep(200 * time.Millisecond)
	after, _ := readProcStats()
	for _, c := range cmds {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	wg.Wait()
	for _, f := range files {
		_ = f.Close()
	}
	fmt.Printf("%g %g %d\n", float64(n)/el.Seconds(), (float64(after.rss)-float64(before.rss))/float64(n), after.threads-before.threads)
	return 0
}

// ---------------------------------------------------------------------------
// 5. Latency.

func parseStamp(b *testing.B, text string) int64 {
	text = strings.TrimSpace(text)
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	v, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	if err != nil {
		b.Fatalf("no stamp in %q", text)
	}
	return v
}

// awaitExitEvent waits on a pidfd of its own for pid to exit and returns
// when the kernel reported it (CLOCK_MONOTONIC ns). The waiters being
// measured wake on the same event; on a loaded machine this observer may
// be scheduled after them, and a sample then comes out short or negative.
func awaitExitEvent(b *testing.B, pid int) int64 {
	exited, err := waitPidExit(pid, 10*time.Second)
	if !exited {
		b.Fatalf("wait for pid %d to exit: %v (an ESRCH means it exited too soon to be observed)", pid, err)
	}
	return monoNow()
}

// benchSessionPid waits until reg holds a session and returns its pid.
func benchSessionPid(reg *Registry) int {
	for {
		reg.mu.Lock()
		for _, s := range reg.sessions {
			reg.mu.Unlock()
			return s.Pid()
		}
		reg.mu.Unlock()
		time.Sleep(20 * time.Microsecond)
	}
}

// reportLatency reports medians and p99 of both sides in µs.
func reportLatency(b *testing.B, raw, lib []time.Duration) {
	b.ReportMetric(benchMicros(benchPercentile(lib, 0.5)), "p50-µs")
	b.ReportMetric(benchMicros(benchPercentile(lib, 0.99)), "p99-µs")
	b.ReportMetric(benchMicros(benchPercentile(raw, 0.5)), "raw-p50-µs")
	b.ReportMetric(benchMicros(benchPercentile(raw, 0.99)), "raw-p99-µs")
}

// BenchmarkLatency measures, per iteration, one event through bgexec and
// the same event through raw os/exec:
//
//   - exit-to-return: from a child's exit, as a pidfd of the benchmark's
//     own reports it, to a foreground Exec returning; raw: to cmd.Wait
//     returning.
//   - stamp-to-return: from a child's last act (date reading the clock,
//     then printing it and exiting) to a foreground Exec returning; raw: to
//     cmd.Output returning. It includes date's own exit, the same on both
//     sides.
//   - output-to-poll, output-to-wait: from a child's write (stamped) to a
//     waiting poll (timeout) or wait (pattern) returning it; raw: to a
//     blocked Read on the pipe returning it.
//   - poll-empty: a poll with nothing new (ns/op; no baseline).
//
// Target: ≤ 1 ms median for the first two. Run with -benchtime=300x or so.
func BenchmarkLatency(b *testing.B) {
	b.Run("exit-to-return", func(b *testing.B) {
		reg := newBenchRegistry(b, Config{Containment: ContainmentOff})
		sc := reg.Scope("bench")
		ctx := context.Background()
		// The child lives long enough for the observer to open its pidfd.
		const cmdline = "sleep 0.02"
		var raw, lib []time.Duration
		for i := 0; b.Loop(); i++ {
			rawOne := func() {
				c := exec.Command(benchShell, "-c", cmdline)
				if err := c.Start(); err != nil {
					b.Fatal(err)
				}
				ret := make(chan int64, 1)
				go func() {
					_ = c.Wait()
					ret <- monoNow()
				}()
				exited := awaitExitEvent(b, c.Process.Pid)
				raw = append(raw, time.Duration(<-ret-exited))
			}
			libOne := func() {
				ret := make(chan int64, 1)
				go func() {
					res, err := sc.Exec(ctx, &ExecRequest{Command: cmdline})
					t := monoNow()
					if err != nil || res.Details.Status != StatusCompleted {
						b.Errorf("exec: %v %+v", err, res)
					}
					ret <- t
				}()
				exited := awaitExitEvent(b, benchSessionPid(reg))
				lib = append(lib, time.Duration(<-ret-exited))
			}
			alternate(i, rawOne, libOne)
		}
		reportLatency(b, raw, lib)
	})
	b.Run("stamp-to-return", func(b *testing.B) {
		reg := newBenchRegistry(b, Config{Containment: ContainmentOff})
		sc := reg.Scope("bench")
		ctx := context.Background()
		// date, exec'd as the session leader, reads the clock as its last
		// act but printing it and exiting: a small C program, so little
		// lies between the stamp and the exit.
		const cmdline = "exec date +%s%N"
		var raw, lib []time.Duration
		for i := 0; b.Loop(); i++ {
			rawOne := func() {
				out, err := exec.Command(benchShell, "-c", cmdline).Output()
				t := time.Now().UnixNano()
				if err != nil {
					b.Fatal(err)
				}
				raw = append(raw, time.Duration(t-parseStamp(b, string(out))))
			}
			libOne := func() {
				res, err := sc.Exec(ctx, &ExecRequest{Command: cmdline})
				t := time.Now().UnixNano()
				if err != nil || res.Details.Status != StatusCompleted {
					b.Fatalf("exec: %v %+v", err, res)
				}
				lib = append(lib, time.Duration(t-parseStamp(b, res.Details.Aggregated)))
			}
			alternate(i, rawOne, libOne)
		}
		reportLatency(b, raw, lib)
	})
	for _, action := range []string{"poll", "wait"} {
		b.Run("output-to-"+action, func(b *testing.B) {
			reg := newBenchRegistry(b, Config{Containment: ContainmentOff})
			sc := reg.Scope("bench")
			ctx := context.Background()
			cmdline := helper("stamp-lines")
			res, err := sc.Exec(ctx, &ExecRequest{Command: cmdline, Background: true, Stdin: "pipe"})
			if err != nil || res.Details.Status != StatusRunning {
				b.Fatalf("exec: %v %+v", err, res)
			}
			id := res.Details.SessionID
			s, _, _ := reg.lookup(sc.key, id)

			rc := exec.Command(benchShell, "-c", cmdline)
			rin, err := rc.StdinPipe()
			if err != nil {
				b.Fatal(err)
			}
			rr, rw, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			rc.Stdout = rw
			if err := rc.Start(); err != nil {
				b.Fatal(err)
			}
			_ = rw.Close()
			type stamped struct {
				t    int64
				text string
			}
			rawOut := make(chan stamped)
			go func() {
				defer close(rawOut)
				buf := make([]byte, 4096)
				for {
					n, err := rr.Read(buf)
					t := monoNow()
					if err != nil {
						return
					}
					rawOut <- stamped{t, string(buf[:n])}
				}
			}()
			defer func() {
				_ = rin.Close()
				for range rawOut {
				}
				_ = rr.Close()
				_ = rc.Wait()
			}()

			var raw, lib []time.Duration
			for i := 0; b.Loop(); i++ {
				rawOne := func() {
					time.Sleep(200 * time.Microsecond) // the reader is parked in Read
					if _, err := rin.Write([]byte("\n")); err != nil {
						b.Fatal(err)
					}
					o := <-rawOut
					raw = append(raw, time.Duration(o.t-parseStamp(b, o.text)))
				}
				libOne := func() {
					got := make(chan stamped, 1)
					go func() {
						req := &ProcessRequest{Action: action, SessionID: id, Timeout: ptr(Number(10000))}
						if action == "wait" {
							req.Pattern = `^\d+$`
						}
						r, err := sc.Process(ctx, req)
						t := monoNow()
						if err != nil {
							got <- stamped{t, err.Error()}
							return
						}
						text := r.Details.Matched
						if action == "poll" {
							text = r.Text()
						}
						got <- stamped{t, text}
					}()
					for { // until the poll or wait is waiting
						if s.Waiting() > 0 {
							break
						}
						time.Sleep(20 * time.Microsecond)
					}
					time.Sleep(200 * time.Microsecond) // and parked in select
					if r, err := sc.Process(ctx, &ProcessRequest{Action: "write", SessionID: id, Data: "\n"}); err != nil || r.Details.Status == StatusFailed {
						b.Fatalf("write: %v %+v", err, r)
					}
					o := <-got
					lib = append(lib, time.Duration(o.t-parseStamp(b, o.text)))
				}
				alternate(i, rawOne, libOne)
			}
			b.StopTimer()
			reportLatency(b, raw, lib)
		})
	}
	b.Run("poll-empty", func(b *testing.B) {
		reg := newBenchRegistry(b, Config{Containment: ContainmentOff})
		sc := reg.Scope("bench")
		ctx := context.Background()
		res, err := sc.Exec(ctx, &ExecRequest{Command: "sleep 1000", Background: true})
		if err != nil || res.Details.Status != StatusRunning {
			b.Fatalf("exec: %v %+v", err, res)
		}
		req := &ProcessRequest{Action: "poll", SessionID: res.Details.SessionID}
		b.ReportAllocs()
		var lat []time.Duration
		for b.Loop() {
			t := time.Now()
			r, err := sc.Process(ctx, req)
			lat = append(lat, time.Since(t))
			if err != nil || r.Details.Status != StatusRunning {
				b.Fatalf("poll: %v %+v", err, r)
			}
		}
		b.ReportMetric(benchMicros(benchPercentile(lat, 0.5)), "p50-µs")
		b.ReportMetric(benchMicros(benchPercentile(lat, 0.99)), "p99-µs")
	})
}
