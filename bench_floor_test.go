//go:build linux

package bgexec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"golang.org/x/sys/unix"
)

// guardedRunner runs a command the way any runner must that keeps the
// promises bgexec keeps for a foreground exec, and does nothing more: it
// is os/exec into bytes.Buffers plus, in process-group mode,
//
//   - the fork on an OS thread locked for the runner's life, reached over
//     a channel, so that Pdeathsig (SIGKILL) means "this process died"
//     rather than "the forking thread ended";
//   - a process group of the command's own (Setpgid);
//   - the wait for the leader's exit through a pidfd in the runtime's
//     netpoller, so that a waiting command holds no thread, without
//     reaping it;
//   - SIGKILL to the group before the leader is reaped (while its pgid
//     cannot be reused), so nothing the command left behind runs on.
//
// In cgroup mode (newCgroupFloor) the command is forked on the calling
// thread straight into a fresh cgroup v2 directory of its own
// (CLONE_INTO_CGROUP) and a cgroup namespace of its own, which is held
// open, and waited for the same way. At its end the cgroup is killed as
// a whole unless it is empty already, waited for until it is, and
// removed. Where cgroup2 is mounted without nsdelegate a process could
// have moved itself out of its cgroup, so after the call returned, a
// goroutine kills every process /proc shows in the command's cgroup
// namespace. That floor leaves out what bgexec adds to keep its other
// promises there: the limits (on a hybrid host the cgroup v1 directories
// the forking thread joins and leaves), the peak-memory and OOM reads,
// and the watchdog that kills the cgroups if this process dies.
//
// It keeps no session, no registry, no output cleaning or caps. It
// measures the floor under bgexec's exec: what these steps cost over
// plain os/exec, in the same run.
type guardedRunner struct {
	env  []string
	reqs chan guardedStart
	stop chan struct{}
	wg   sync.WaitGroup
	// cgroup is the cgroup v2 directory under which each command gets a
	// directory of its own; "" means process-group mode.
	cgroup string
	n      int  // commands started in cgroup mode, for the directory names
	scan   bool // cgroup2 has no nsdelegate: look for processes that moved out
}

type guardedStart struct {
	cmd *exec.Cmd
	err chan error
}

// newGuardedRunner starts the runner's forking thread; it ends with b,
// after every command it started was reaped.
func newGuardedRunner(b *testing.B, env []string) *guardedRunner {
	g := &guardedRunner{env: env, reqs: make(chan guardedStart), stop: make(chan struct{})}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		// Never unlocked: the thread ends with this goroutine.
		runtime.LockOSThread()
		for {
			select {
			case <-g.stop:
				return
			case s := <-g.reqs:
				s.err <- s.cmd.Start()
			}
		}
	}()
	b.Cleanup(func() {
		close(g.stop)
		g.wg.Wait()
	})
	return g
}

// newCgroupFloor is a guardedRunner in cgroup mode, its directory made in
// this process's cgroup v2 directory and removed when b ends. It skips b
// where that cannot be done (no cgroup v2, not root).
func newCgroupFloor(b *testing.B, env []string) *guardedRunner {
	base, err := contain.Cgroup2Dir()
	if err != nil {
		b.Skipf("no cgroup v2 directory: %v", err)
	}
	dir := filepath.Join(base, fmt.Sprintf("bgexec-floor-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Skipf("cannot make a cgroup for the floor: %v", err)
	}
	b.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			b.Error(err)
		}
	})
	g := newGuardedRunner(b, env)
	g.cgroup = dir
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		b.Fatal(err)
	}
	g.scan = true
	for line := range strings.Lines(string(mounts)) {
		if strings.Contains(line, " - cgroup2 ") && strings.Contains(line, "nsdelegate") {
			g.scan = false
		}
	}
	return g
}

// run runs `sh -c cmdline` to its end and returns its standard output.
func (g *guardedRunner) run(b *testing.B, cmdline string) []byte {
	var out, errb bytes.Buffer
	c := exec.Command(benchShell, "-c", cmdline)
	c.Env = g.env
	c.Stdout, c.Stderr = &out, &errb
	var dir string
	link := "cgroup:[0]" // the command's cgroup namespace, in cgroup mode
	var held *os.File    // that namespace, held open
	if g.cgroup == "" {
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		s := guardedStart{cmd: c, err: make(chan error, 1)}
		g.reqs <- s
		if err := <-s.err; err != nil {
			b.Fatal(err)
		}
	} else {
		g.n++
		dir = filepath.Join(g.cgroup, strconv.Itoa(g.n))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: fd, Unshareflags: unix.CLONE_NEWCGROUP}
		err = c.Start()
		_ = unix.Close(fd) // Best effort: an O_PATH descriptor.
		if err != nil {
			_ = os.Remove(dir) // Best effort: nothing ever ran in it.
			b.Fatal(err)
		}
		// Held open until the end, so its number is not reused. A leader
		// that has exited already has no namespace to read: the scan then
		// looks for one no process has, at the same cost.
		if ns, err := os.Open("/proc/" + strconv.Itoa(c.Process.Pid) + "/ns/cgroup"); err == nil {
			held = ns
			var st unix.Stat_t
			if err := unix.Fstat(int(ns.Fd()), &st); err != nil {
				b.Fatal(err)
			}
			link = fmt.Sprintf("cgroup:[%d]", st.Ino)
		}
	}
	pid := c.Process.Pid
	awaitExitUnreaped(b, pid)
	if dir == "" {
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			b.Fatal(err)
		}
	} else {
		emptyCgroup(b, dir)
	}
	if err := c.Wait(); err != nil {
		b.Fatalf("%s: %v %s", cmdline, err, errb.Bytes())
	}
	if dir != "" {
		if err := os.Remove(dir); err != nil {
			b.Fatal(err)
		}
		// As bgexec does, the scan runs after the result is given: the
		// benchmark's settle waits for it and counts its CPU.
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			if g.scan {
				if err := killNamespace(link); err != nil {
					b.Error(err) // not Fatal: this is not the benchmark's goroutine
				}
			}
			if held != nil {
				_ = held.Close() // Best effort: read-only.
			}
		}()
	}
	return out.Bytes()
}

// awaitExitUnreaped waits in the runtime's netpoller until pid exits, and
// leaves it unreaped.
func awaitExitUnreaped(b *testing.B, pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		b.Fatal(os.NewSyscallError("pidfd_open", err))
	}
	pidfd := os.NewFile(uintptr(fd), "pidfd")
	defer pidfd.Close()
	rc, err := pidfd.SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	var werr error
	if err := rc.Read(func(fd uintptr) bool {
		var info unix.Siginfo
		werr = unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
		// Linux fills in si_signo SIGCHLD only when a child had exited;
		// false: not yet, wait in the poller.
		return werr != nil || info.Signo == int32(syscall.SIGCHLD)
	}); err != nil {
		b.Fatal(err)
	}
	if werr != nil {
		b.Fatal(os.NewSyscallError("waitid", werr))
	}
}

// killNamespace SIGKILLs every process /proc shows in the cgroup
// namespace link ("cgroup:[ino]"), until none is left.
func killNamespace(link string) error {
	buf := make([]byte, 64)
	deadline := time.Now().Add(10 * time.Second)
	for {
		names, err := os.ReadDir("/proc")
		if err != nil {
			return err
		}
		found := 0
		for _, e := range names {
			name := e.Name()
			if name[0] < '1' || name[0] > '9' {
				continue
			}
			n, err := unix.Readlink("/proc/"+name+"/ns/cgroup", buf)
			if err != nil || string(buf[:n]) != link {
				continue
			}
			if pid, err := strconv.Atoi(name); err == nil {
				_ = unix.Kill(pid, unix.SIGKILL) // Best effort: the next look tells.
				found++
			}
		}
		if found == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes of %s still ran 10 s after SIGKILL", found, link)
		}
		time.Sleep(time.Millisecond)
	}
}

// emptyCgroup kills what is left in the cgroup dir, unless nothing is,
// and waits until it is empty.
func emptyCgroup(b *testing.B, dir string) {
	events, err := os.Open(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		b.Fatal(err)
	}
	defer events.Close()
	buf := make([]byte, 128)
	populated := func() bool {
		n, err := events.ReadAt(buf, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			b.Fatal(err)
		}
		return bytes.Contains(buf[:n], []byte("populated 1"))
	}
	if !populated() {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for populated() {
		if time.Now().After(deadline) {
			b.Fatalf("cgroup %s still populated 10 s after its kill", dir)
		}
		// The kernel marks cgroup.events modified when populated changes.
		fds := []unix.PollFd{{Fd: int32(events.Fd()), Events: unix.POLLPRI}}
		_, _ = unix.Poll(fds, 10) // a timeout or an interruption: read again
	}
}

// BenchmarkExecFloor prices the floor under BenchmarkExec and
// BenchmarkLatency/stamp-to-return: the steps bgexec's promises need
// (guardedRunner), done by hand around os/exec. Each iteration runs the
// same command three ways, plain os/exec into bytes.Buffers (rawRun),
// guardedRunner and Scope.Exec, in an order that rotates, so all three
// ratios are of one run. No target: it says how much of bgexec's distance
// from os/exec a runner keeping the same promises cannot avoid, and how
// much is bgexec's own (the session, its output handling, the registry,
// and in cgroup mode the steps the cgroup floor leaves out).
//
//   - exec/pgroup, exec/cgroup: `sh -c true`, timed from the call to its
//     return, bgexec with ContainmentOff or ContainmentRequired (skipped
//     where a registry cannot get cgroups): p50 and mean time and host
//     CPU per side; floor-p50-ratio and floor-cpu-ratio (guardedRunner
//     over os/exec), p50-ratio and cpu-ratio (bgexec over os/exec,
//     BenchmarkExec's figures) and over-floor-p50-ratio and
//     over-floor-cpu-ratio (bgexec over guardedRunner).
//   - stamp: `exec date +%s%N` in process-group mode, from the stamp date
//     takes as its last act to the call's return: the same p50 ratios.
func BenchmarkExecFloor(b *testing.B) {
	for _, mode := range []struct {
		name  string
		mode  Containment
		floor func(b *testing.B, env []string) *guardedRunner
	}{
		{"pgroup", ContainmentOff, newGuardedRunner},
		{"cgroup", ContainmentRequired, newCgroupFloor},
	} {
		b.Run("exec/"+mode.name, func(b *testing.B) {
			if mode.mode == ContainmentRequired && !benchCgroups() {
				b.Skip("cgroup v2 containment is not available here")
			}
			env := benchEnv(b)
			g := mode.floor(b, env)
			sc := newBenchRegistry(b, Config{Containment: mode.mode}).Scope("bench")
			execTrio(b, env, g, sc)
		})
	}
	b.Run("stamp", func(b *testing.B) {
		const cmdline = "exec date +%s%N"
		env := benchEnv(b)
		g := newGuardedRunner(b, env)
		sc := newBenchRegistry(b, Config{Containment: ContainmentOff}).Scope("bench")
		var raw, floor, lib []time.Duration
		sides := []func(){
			func() { raw = append(raw, osexecStamp(b, env, cmdline)) },
			func() {
				out := g.run(b, cmdline)
				t := time.Now().UnixNano()
				floor = append(floor, time.Duration(t-parseStamp(b, string(out))))
			},
			func() {
				res := benchExec(b, sc, &ExecRequest{Command: cmdline}, StatusCompleted)
				t := time.Now().UnixNano()
				lib = append(lib, time.Duration(t-parseStamp(b, res.Details.Aggregated)))
			},
		}
		for i := 0; b.Loop(); i++ {
			rotate(i, sides)
		}
		p50 := func(d []time.Duration) float64 { return float64(benchPercentile(d, 0.5)) }
		b.ReportMetric(p50(lib)/1e3, "p50-µs")
		b.ReportMetric(p50(floor)/1e3, "floor-p50-µs")
		b.ReportMetric(p50(raw)/1e3, "base-p50-µs")
		b.ReportMetric(p50(floor)/p50(raw), "floor-p50-ratio")
		b.ReportMetric(p50(lib)/p50(raw), "p50-ratio")
		b.ReportMetric(p50(lib)/p50(floor), "over-floor-p50-ratio")
	})
}

// execTrio runs `sh -c true` through os/exec, g and sc in rotation and
// reports BenchmarkExecFloor's exec figures.
func execTrio(b *testing.B, env []string, g *guardedRunner, sc *Scope) {
	var raw, floor, lib benchSide
	raw.settle, floor.settle, lib.settle = true, true, true
	sides := []func(){
		func() { raw.time(func() { rawRun(b, env, "true") }, 1) },
		func() { floor.time(func() { g.run(b, "true") }, 1) },
		func() { lib.time(func() { benchExec(b, sc, &ExecRequest{Command: "true"}, StatusCompleted) }, 1) },
	}
	// One untimed run of each: the registry's first exec starts what
	// lives as long as the registry (see BenchmarkExec).
	rawRun(b, env, "true")
	g.run(b, "true")
	benchExec(b, sc, &ExecRequest{Command: "true"}, StatusCompleted)
	for i := 0; b.Loop(); i++ {
		rotate(i, sides)
	}
	p50 := func(s *benchSide) float64 { return float64(benchPercentile(s.d, 0.5)) }
	cpu := func(s *benchSide) float64 { return float64(s.cpu) / float64(len(s.d)) }
	b.ReportMetric(float64(benchMean(lib.d)), "ns/op")
	b.ReportMetric(p50(&lib), "p50-ns")
	b.ReportMetric(p50(&floor), "floor-p50-ns")
	b.ReportMetric(p50(&raw), "base-p50-ns")
	b.ReportMetric(cpu(&lib), "cpu-ns/op")
	b.ReportMetric(cpu(&floor), "floor-cpu-ns/op")
	b.ReportMetric(cpu(&raw), "base-cpu-ns/op")
	b.ReportMetric(p50(&floor)/p50(&raw), "floor-p50-ratio")
	b.ReportMetric(cpu(&floor)/cpu(&raw), "floor-cpu-ratio")
	b.ReportMetric(p50(&lib)/p50(&raw), "p50-ratio")
	b.ReportMetric(cpu(&lib)/cpu(&raw), "cpu-ratio")
	b.ReportMetric(p50(&lib)/p50(&floor), "over-floor-p50-ratio")
	b.ReportMetric(cpu(&lib)/cpu(&floor), "over-floor-cpu-ratio")
}

// rotate runs every side once, starting with side i mod len(sides), so
// that no side always follows the same other side.
func rotate(i int, sides []func()) {
	for k := range sides {
		sides[(i+k)%len(sides)]()
	}
}
