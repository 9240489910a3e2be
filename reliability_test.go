package bgexec

// Reliability tests: leaks over many sessions, processes that escape the
// process group, the death of the host, concurrent use, and memory under
// floods of output. The figures they log go into RELIABILITY.md.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bgexec/bgexec/internal/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// tagEnv marks every process a reliability test starts, so a scan of
// /proc finds the ones that were reparented away from us.
const tagEnv = "BGEXEC_RELIABILITY_TAG"

// newTag returns a tag unique to this test run.
func newTag(t *testing.T) string {
	return fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid(), time.Now().UnixNano())
}

// psEntry is the part of /proc/<pid>/stat the tests look at.
type psEntry struct {
	pid, ppid, pgid, sid int
	state                byte
}

func readPS(pid int) (psEntry, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return psEntry{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return psEntry{}, false
	}
	// After the comm: state ppid pgrp session ...
	f := strings.Fields(s[i+2:])
	if len(f) < 4 {
		return psEntry{}, false
	}
	st := psEntry{pid: pid, state: f[0][0]}
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgid, _ = strconv.Atoi(f[2])
	st.sid, _ = strconv.Atoi(f[3])
	return st, true
}

// readAllPS reads the stat of every process.
func readAllPS(t *testing.T) map[int]psEntry {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	out := make(map[int]psEntry, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readPS(pid); ok {
			out[pid] = st
		}
	}
	return out
}

// ourDescendants lists every process whose parent chain leads to this one,
// zombies included, as "pid(state)".
func ourDescendants(t *testing.T) []string {
	t.Helper()
	procs := readAllPS(t)
	me := os.Getpid()
	var out []string
	for pid, st := range procs {
		for p, hops := st.ppid, 0; p > 1 && hops < 64; hops++ {
			if p == me {
				out = append(out, fmt.Sprintf("%d(%c)", pid, st.state))
				break
			}
			parent, ok := procs[p]
			if !ok {
				break
			}
			p = parent.ppid
		}
	}
	return out
}

// zombieChildren counts this process's children that exited and were not reaped.
func zombieChildren(t *testing.T) int {
	t.Helper()
	n := 0
	for _, pid := range children(t) {
		if st, ok := readPS(pid); ok && st.state == 'Z' {
			n++
		}
	}
	return n
}

// taggedProcesses lists the live processes whose environment carries tag, wherever
// they were reparented (zombies have no readable environment).
func taggedProcesses(t *testing.T, tag string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	needle := []byte(tagEnv + "=" + tag + "\x00")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && strings.Contains(string(b), string(needle)) {
			out = append(out, pid)
		}
	}
	return out
}

// pidWatch follows one process through a pidfd opened while the process is
// known to be alive, so a later check cannot be fooled by a reused pid.
type pidWatch struct {
	pid int
	fd  int // -1 when the process was gone before the watch began
}

func watchPid(pid int) (*pidWatch, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return &pidWatch{pid: pid, fd: -1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	return &pidWatch{pid: pid, fd: fd}, nil
}

// goneBy reports whether the process has exited by the deadline; a pidfd
// becomes readable when its process exits.
func (w *pidWatch) goneBy(deadline time.Time) bool {
	if w.fd < 0 {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
	for {
		ms := max(0, int(time.Until(deadline)/time.Millisecond))
		n, err := unix.Poll(fds, ms)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

// kill SIGKILLs the process through its pidfd (never a reused pid).
func (w *pidWatch) kill() {
	if w.fd >= 0 {
		_ = unix.PidfdSendSignal(w.fd, unix.SIGKILL, nil, 0)
	}
}

func (w *pidWatch) close() {
	if w.fd >= 0 {
		_ = unix.Close(w.fd)
		w.fd = -1
	}
}

// keyedInts parses output lines of the form "<key> <int>" (CR tolerated).
func keyedInts(text string) map[string]int {
	out := make(map[string]int)
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if n, err := strconv.Atoi(f[1]); err == nil {
			out[f[0]] = n
		}
	}
	return out
}

// awaitKeys waits until the session's output holds a "<key> <int>" line for
// every key and returns the values. It reads the whole log, then blocks in
// poll until new output arrives (event-driven), until ctx ends.
func awaitKeys(ctx context.Context, sc *Scope, id string, keys ...string) (map[string]int, error) {
	for {
		res, err := sc.Process(ctx, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0)})
		if err != nil {
			return nil, err
		}
		got := keyedInts(res.Text())
		if !slices.ContainsFunc(keys, func(k string) bool { _, ok := got[k]; return !ok }) {
			return got, nil
		}
		if res.Details.Status != StatusRunning {
			return nil, fmt.Errorf("session %s ended before printing %v: %q", id, keys, res.Text())
		}
		if _, err := sc.Process(ctx, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(2000))}); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("session %s: waiting for %v: %w", id, keys, ctx.Err())
		}
	}
}

// sessionOf returns the registry's session for id (nil if forgotten).
func sessionOf(reg *Registry, id string) *session.Session {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return reg.sessions[id]
}

// awaitEnd waits until s has ended, or ctx ends.
func awaitEnd(ctx context.Context, s *session.Session) error {
	select {
	case <-s.Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("session %s did not end: %w", s.ID(), ctx.Err())
	}
}

// countingNotifier counts exit events per session. It never blocks.
type countingNotifier struct {
	mu     sync.Mutex
	events int
	beats  map[string]int // session id → heartbeats
}

func (n *countingNotifier) SystemEvent(string, string) {
	n.mu.Lock()
	n.events++
	n.mu.Unlock()
}

func (n *countingNotifier) Heartbeat(_, reason string) {
	id := strings.TrimSuffix(strings.TrimPrefix(reason, "exec:"), ":exit")
	n.mu.Lock()
	if n.beats == nil {
		n.beats = make(map[string]int)
	}
	n.beats[id]++
	n.mu.Unlock()
}

func (n *countingNotifier) snapshot() (events int, beats map[string]int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.events, maps.Clone(n.beats)
}

// cgroupsAvailable reports whether this process may create session cgroups.
func cgroupsAvailable(t *testing.T) bool {
	t.Helper()
	reg, err := NewRegistry(Config{Containment: ContainmentRequired})
	if err != nil {
		t.Logf("cgroup containment unavailable: %v", err)
		return false
	}
	require.NoError(t, reg.Close(testCtx(t)))
	return true
}

// ---------------------------------------------------------------------------
// 1. Leaks over a thousand sessions.

// endWay is how a leak-suite session ends.
type endWay int

const (
	endExit0   endWay = iota // foreground `true`
	endExit3                 // background `exit 3`, waited for, then cleared
	endKill                  // process kill
	endTimeout               // the exec timeout
	endRemove                // process remove while running
	endClose                 // Registry.Close
	numEndWays
)

func (w endWay) String() string {
	return [...]string{"exit 0 (fg)", "exit 3 (bg)", "kill", "timeout", "remove", "Close"}[w]
}

func TestLeakSuite(t *testing.T) {
	total := 1000
	if testing.Short() {
		total = 200
	}
	const (
		registries = 5
		batch      = 50
	)
	perReg := total / registries
	start := time.Now()

	// Warm up what the runtime and the library create once per process
	// (netpoller descriptors, pools, os/exec lookups), so the baseline is
	// the steady state.
	{
		reg, err := NewRegistry(Config{YieldMs: MaxYieldMs})
		require.NoError(t, err)
		sc := reg.Scope("warm")
		mustExec(t, sc, &ExecRequest{Command: "true"})
		mustExec(t, sc, &ExecRequest{Command: "true", PTY: true})
		id := startBackground(t, sc, &ExecRequest{Command: "sleep 30"})
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		require.NoError(t, reg.Close(testCtx(t)))
	}
	ignore := goleak.IgnoreCurrent()
	fdsBefore := openFDs(t)
	require.Empty(t, children(t), "no child processes before the suite")
	threadsBefore := threadCount(t)
	tag := newTag(t)

	var (
		ended   [numEndWays][2]atomic.Int64 // [way][pty]
		notes   = &countingNotifier{}
		cgDirs  []string
		closeMs []int64
	)
	for r := range registries {
		t.Run(fmt.Sprintf("registry %d of %d ends %d sessions in mixed ways", r+1, registries, perReg), func(t *testing.T) {
			reg, err := NewRegistry(Config{YieldMs: MaxYieldMs, KillGrace: 300 * time.Millisecond, Notifier: notes})
			require.NoError(t, err)
			closed := false
			t.Cleanup(func() {
				if !closed {
					_ = reg.Close(context.Background())
				}
			})
			if reg.cgroups != nil {
				cgDirs = append(cgDirs, reg.cgroups.dir)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			sc := reg.Scope("leak")
			env := map[string]string{tagEnv: tag}

			// All batches but the last end in the five per-session ways; the
			// last batch is left running for Close.
			for b := 0; b < perReg; b += batch {
				last := b+batch >= perReg
				var wg sync.WaitGroup
				for i := b; i < min(b+batch, perReg); i++ {
					way := endWay(i % int(endClose))
					if last {
						way = endClose
					}
					pty := (r*perReg+i)%4 == 0
					stubborn := i%7 == 3 && way >= endKill // ignores SIGTERM: needs the SIGKILL escalation
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := leakSession(ctx, reg, sc, way, pty, stubborn, env); err != nil {
							t.Errorf("%s, pty=%v, stubborn=%v: %v", way, pty, stubborn, err)
							return
						}
						if way != endClose {
							ended[way][boolIndex(pty)].Add(1)
						}
					}()
				}
				wg.Wait()
			}
			closeStart := time.Now()
			require.NoError(t, reg.Close(ctx))
			closed = true
			closeMs = append(closeMs, time.Since(closeStart).Milliseconds())
			for i := range batch {
				ended[endClose][boolIndex((r*perReg+perReg-batch+i)%4 == 0)].Add(1)
			}
		})
	}

	t.Run("nothing is left behind", func(t *testing.T) {
		var sum int64
		for w := range numEndWays {
			n := ended[w][0].Load() + ended[w][1].Load()
			sum += n
			t.Logf("ended by %-12s %4d (pipes %d, PTYs %d)", w, n, ended[w][0].Load(), ended[w][1].Load())
		}
		assert.Equal(t, int64(total), sum, "every session ended as planned")

		// goleak retries until the goroutines of the last Close are gone.
		leakErr := goleak.Find(ignore)
		assert.NoError(t, leakErr, "no goroutine outlives the registries")
		fdsAfter := openFDs(t)
		assert.Equal(t, fdsBefore, fdsAfter, "no descriptor leaks")
		kids := children(t)
		assert.Empty(t, kids, "no child process (or zombie) is left")
		desc := ourDescendants(t)
		assert.Empty(t, desc, "no descendant is left")
		orphans := taggedProcesses(t, tag)
		assert.Empty(t, orphans, "no tagged process survives anywhere (reparented orphans included)")
		for _, d := range cgDirs {
			assert.NoDirExists(t, d, "the registry cgroup is removed")
		}
		events, _ := notes.snapshot()
		extraGoroutines := 0
		if leakErr != nil {
			extraGoroutines = strings.Count(leakErr.Error(), "Goroutine ")
		}
		t.Logf("%d sessions over %d registries (cgroups: %v) in %v; Close took %v ms",
			total, registries, len(cgDirs) == registries, time.Since(start).Round(time.Millisecond), closeMs)
		t.Logf("extra goroutines %d, fds %d → %d (extra %d), zombies %d, child processes %d, descendants %d, tagged survivors %d, registry cgroups left %d, OS threads %d → %d, exit events %d",
			extraGoroutines, fdsBefore, fdsAfter, fdsAfter-fdsBefore, zombieChildren(t), len(kids), len(desc), len(orphans),
			countExisting(cgDirs), threadsBefore, threadCount(t), events)
	})
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func countExisting(dirs []string) int {
	n := 0
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			n++
		}
	}
	return n
}

func threadCount(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// leakSession runs one session of the leak suite to its planned end and
// checks the reported end state.
func leakSession(ctx context.Context, reg *Registry, sc *Scope, way endWay, pty, stubborn bool, env map[string]string) error {
	command := "sleep 30"
	if stubborn {
		command = "trap '' TERM HUP; sleep 30"
	}
	req := &ExecRequest{Command: command, Background: true, PTY: pty, Env: env}
	switch way {
	case endExit0:
		req = &ExecRequest{Command: "true", PTY: pty, Env: env}
	case endExit3:
		req.Command = "exit 3"
	case endTimeout:
		req.Timeout = ptr(0.2)
	}
	res, err := sc.Exec(ctx, req)
	if err != nil {
		return err
	}
	if res == nil {
		return errors.New("exec returned neither a result nor an error")
	}
	if way == endExit0 {
		if res.Details.Status != StatusCompleted || res.Details.ExitCode == nil || *res.Details.ExitCode != 0 {
			return fmt.Errorf("foreground true: %+v %q", res.Details, res.Text())
		}
		return nil
	}
	if res.Details.Status != StatusRunning {
		// A very fast command may end before it is marked backgrounded.
		if way == endExit3 && res.Details.ExitCode != nil && *res.Details.ExitCode == 3 {
			return nil
		}
		return fmt.Errorf("background exec: %+v %q", res.Details, res.Text())
	}
	id := res.Details.SessionID
	var want ExitReason
	switch way {
	case endExit3, endTimeout:
		want = ExitReasonExit
		if way == endTimeout {
			want = ExitReasonTimeout
		}
		w, err := sc.Process(ctx, &ProcessRequest{Action: "wait", SessionID: id, Timeout: ptr(Number(20000))})
		if err != nil {
			return err
		}
		if w.Details.Condition != "exit" || w.Details.ExitReason != want {
			return fmt.Errorf("wait: %+v %q", w.Details, w.Text())
		}
		if way == endExit3 {
			if w.Details.ExitCode == nil || *w.Details.ExitCode != 3 {
				return fmt.Errorf("exit 3 reported as %+v", w.Details)
			}
			if c, err := sc.Process(ctx, &ProcessRequest{Action: "clear", SessionID: id}); err != nil || c.Text() != "Cleared session "+id+"." {
				return fmt.Errorf("clear: %v %v", err, c)
			}
		}
	case endKill:
		k, err := sc.Process(ctx, &ProcessRequest{Action: "kill", SessionID: id})
		if err != nil {
			return err
		}
		if k.Text() != "Killed session "+id+"." || k.Details.ExitReason != ExitReasonKilled {
			return fmt.Errorf("kill: %+v %q", k.Details, k.Text())
		}
	case endRemove:
		s := sessionOf(reg, id)
		if s == nil {
			return fmt.Errorf("session %s is not registered", id)
		}
		rm, err := sc.Process(ctx, &ProcessRequest{Action: "remove", SessionID: id})
		if err != nil {
			return err
		}
		if rm.Text() != "Removed session "+id+"." {
			return fmt.Errorf("remove: %q", rm.Text())
		}
		if err := awaitEnd(ctx, s); err != nil {
			return err
		}
		reason := reasonOf(s.Snapshot(0).Exit.Reason)
		if reason != ExitReasonKilled {
			return fmt.Errorf("removed session ended with reason %q", reason)
		}
	case endClose:
		// Left running; Close ends it.
	}
	return nil
}

// ---------------------------------------------------------------------------
// 2. Processes that leave the process group.

// escaperScript starts three escapers, each of which prints "<kind> <pid>"
// once it has escaped, then waits for a line on stdin (so the test decides
// how the session ends).
func escaperScript() string {
	return "setsid sh -c 'echo setsid $$; exec sleep 300' &\n" +
		helper("setpgid-sleep") + " &\n" +
		"( sh -c 'echo double $$; exec sleep 300' & ) &\n" +
		"read x\n"
}

var escaperKinds = []string{"setsid", "setpgid", "double"}

// escaperWays are the ends the escaper test applies (natural exit too).
var escaperWays = []endWay{endExit3, endKill, endTimeout, endRemove, endClose}

func TestContainmentEscapers(t *testing.T) {
	haveCgroups := cgroupsAvailable(t)
	type tally struct {
		survivors, total int
	}
	summary := map[string]map[string]tally{} // mode → kind → tally
	for _, mode := range []struct {
		name string
		c    Containment
	}{{"auto", ContainmentAuto}, {"off", ContainmentOff}} {
		t.Run("with containment "+mode.name+" every escaper is accounted for", func(t *testing.T) {
			if mode.c == ContainmentAuto && !haveCgroups {
				t.Skip("cgroup v2 containment is not available here")
			}
			res := runEscapers(t, mode.c)
			summary[mode.name] = map[string]tally{}
			for _, r := range res {
				for kind, alive := range r.survived {
					tl := summary[mode.name][kind]
					tl.total++
					if alive {
						tl.survivors++
					}
					summary[mode.name][kind] = tl
				}
			}
			for _, kind := range escaperKinds {
				tl := summary[mode.name][kind]
				t.Logf("containment %s: %-7s survivors %d of %d", mode.name, kind, tl.survivors, tl.total)
			}
			for _, r := range res {
				t.Logf("containment %s: %-11s pty=%-5v survivors %v", mode.name, r.way, r.pty, r.survivorKinds())
			}
			if mode.c == ContainmentAuto {
				for _, kind := range escaperKinds {
					assert.Zero(t, summary[mode.name][kind].survivors, "no %s escaper survives with cgroups", kind)
				}
			} else {
				// Without cgroups only the process group is signalled: the
				// double fork stays in it, setsid and setpgid leave it.
				assert.Zero(t, summary[mode.name]["double"].survivors, "a double fork stays in the group")
				assert.Positive(t, summary[mode.name]["setsid"].survivors, "setsid escapes the process group")
				assert.Positive(t, summary[mode.name]["setpgid"].survivors, "setpgid escapes the process group")
			}
		})
	}
}

type escaperResult struct {
	way      endWay
	pty      bool
	survived map[string]bool
}

func (r escaperResult) survivorKinds() []string {
	var out []string
	for _, k := range escaperKinds {
		if r.survived[k] {
			out = append(out, k)
		}
	}
	return out
}

// runEscapers starts one session per end way, over pipes and a PTY, each
// with three escapers; ends them; and reports which escapers survived. It
// kills every survivor itself afterwards.
func runEscapers(t *testing.T, c Containment) []escaperResult {
	tag := newTag(t)
	reg, err := NewRegistry(Config{YieldMs: MaxYieldMs, Containment: c, KillGrace: 500 * time.Millisecond, DrainTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = reg.Close(context.Background())
		}
	})
	if c == ContainmentAuto {
		require.NotNil(t, reg.cgroups, "cgroups are available, so Auto uses them")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc := reg.Scope("escapers")

	type run struct {
		escaperResult
		id      string
		s       *session.Session
		watches map[string]*pidWatch
		cgDir   string // the session's cgroup ("" without cgroups)
	}
	var runs []*run
	t.Cleanup(func() {
		for _, r := range runs {
			for _, w := range r.watches {
				w.kill()
				w.close()
			}
		}
	})
	for _, way := range escaperWays {
		for _, pty := range []bool{false, true} {
			req := &ExecRequest{Command: escaperScript(), PTY: pty, Stdin: "pipe", Env: map[string]string{tagEnv: tag}}
			if way == endTimeout {
				req.Timeout = ptr(6.0) // long enough for the escapers to report under load
			}
			id := startBackground(t, sc, req)
			runs = append(runs, &run{escaperResult: escaperResult{way: way, pty: pty, survived: map[string]bool{}}, id: id, s: sessionOf(reg, id), watches: map[string]*pidWatch{}})
		}
	}
	for _, r := range runs {
		pids, err := awaitKeys(ctx, sc, r.id, escaperKinds...)
		require.NoError(t, err)
		leader, _ := readPS(r.s.Pid())
		for _, kind := range escaperKinds {
			w, err := watchPid(pids[kind])
			require.NoError(t, err)
			r.watches[kind] = w
			st, ok := readPS(pids[kind])
			require.True(t, ok, "%s escaper %d is running", kind, pids[kind])
			switch kind {
			case "setsid":
				assert.Equal(t, st.pid, st.sid, "the setsid escaper leads its own session")
			case "setpgid":
				assert.Equal(t, st.pid, st.pgid, "the setpgid escaper leads its own group")
			case "double":
				assert.Equal(t, leader.pgid, st.pgid, "the double fork stays in the group")
			}
			if reg.cgroups != nil {
				dir := sessionCgroupOf(t, reg, pids[kind])
				require.NotEmpty(t, dir, "%s escaper %d is in a session cgroup", kind, pids[kind])
				if r.cgDir == "" {
					r.cgDir = dir
				}
				assert.Equal(t, r.cgDir, dir, "all escapers share the session's cgroup")
			}
		}
	}

	// End every session but the Close ones, concurrently, then Close.
	bound := 10 * time.Second // escapers must be gone by then (cgroups)
	if reg.cgroups == nil {
		bound = 2 * time.Second // how long a survivor is given to end on its own
	}
	check := func(r *run) {
		deadline := time.Now().Add(bound)
		for kind, w := range r.watches {
			r.survived[kind] = !w.goneBy(deadline)
		}
		if r.cgDir != "" {
			if _, err := os.Stat(r.cgDir); err == nil {
				// An emptied cgroup that was never killed may be kept for reuse.
				assert.Contains(t, spareCgroups(reg.cgroups), r.cgDir, "the session cgroup of %s (%s) is removed or kept as a spare", r.id, r.way)
				pop, err := (&sessionCgroup{dir: r.cgDir}).populated()
				assert.NoError(t, err)
				assert.False(t, pop, "the spare cgroup of %s (%s) is empty", r.id, r.way)
			}
		}
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		if r.way == endClose {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := endEscaperSession(ctx, sc, r.s, r.way); err != nil {
				t.Errorf("%s pty=%v: %v", r.way, r.pty, err)
				return
			}
			check(r)
		}()
	}
	wg.Wait()
	cgRoot := ""
	if reg.cgroups != nil {
		cgRoot = reg.cgroups.dir
	}
	require.NoError(t, reg.Close(ctx))
	closed = true
	for _, r := range runs {
		if r.way == endClose {
			wg.Add(1)
			go func() {
				defer wg.Done()
				check(r)
			}()
		}
	}
	wg.Wait()
	if cgRoot != "" {
		assert.NoDirExists(t, cgRoot, "the registry cgroup is removed by Close")
	}

	// Clean up the survivors ourselves and prove nothing is left.
	deadline := time.Now().Add(10 * time.Second)
	out := make([]escaperResult, 0, len(runs))
	for _, r := range runs {
		for kind, w := range r.watches {
			w.kill()
			assert.True(t, w.goneBy(deadline), "%s escaper %d ends on SIGKILL", kind, w.pid)
			w.close()
		}
		out = append(out, r.escaperResult)
	}
	assert.Empty(t, taggedProcesses(t, tag), "no tagged process is left")
	assert.Empty(t, children(t), "no child process is left")
	return out
}

// sessionCgroupOf returns the session cgroup directory pid is in, or "".
func sessionCgroupOf(t *testing.T, reg *Registry, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		rel, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		if filepath.Base(filepath.Dir(rel)) == filepath.Base(reg.cgroups.dir) {
			return filepath.Join(reg.cgroups.dir, filepath.Base(rel))
		}
	}
	return ""
}

// endEscaperSession ends s in the given way and checks the reported reason.
func endEscaperSession(ctx context.Context, sc *Scope, s *session.Session, way endWay) error {
	var want ExitReason
	switch way {
	case endExit3:
		want = ExitReasonExit
		if _, err := sc.Process(ctx, &ProcessRequest{Action: "write", SessionID: s.ID(), Data: "\n"}); err != nil {
			return err
		}
		// What the shell leaves running (the escapers that stayed in its
		// cgroup or process group) is kept as the session, so the agent
		// ends it; if nothing was left, the session ends with the shell.
		select {
		case <-s.LeftBehind():
			want = ExitReasonKilled
			if _, err := sc.Process(ctx, &ProcessRequest{Action: "kill", SessionID: s.ID()}); err != nil {
				return err
			}
		case <-s.Done():
		case <-ctx.Done():
			return fmt.Errorf("session %s: the shell did not exit: %w", s.ID(), ctx.Err())
		}
	case endKill:
		want = ExitReasonKilled
		if _, err := sc.Process(ctx, &ProcessRequest{Action: "kill", SessionID: s.ID()}); err != nil {
			return err
		}
	case endTimeout:
		want = ExitReasonTimeout
	case endRemove:
		want = ExitReasonKilled
		if _, err := sc.Process(ctx, &ProcessRequest{Action: "remove", SessionID: s.ID()}); err != nil {
			return err
		}
	}
	if err := awaitEnd(ctx, s); err != nil {
		return err
	}
	got := reasonOf(s.Snapshot(0).Exit.Reason)
	if got != want {
		return fmt.Errorf("session %s ended with reason %q, want %q", s.ID(), got, want)
	}
	return nil
}

// ---------------------------------------------------------------------------
// 3. The host dies.

// helperOwnRegistry is the "own-registry" helper: it runs a registry of its
// own (containment as in rest[0]: "auto" or "off") with a pipe session and
// a PTY session that both start a grandchild (the pipe session also a
// setsid escaper), prints "<name> <pid>" lines, prints ready and blocks
// until it is killed.
func helperOwnRegistry(rest []string) int {
	cfg := Config{YieldMs: MaxYieldMs}
	if len(rest) > 0 && rest[0] == "off" {
		cfg.Containment = ContainmentOff
	}
	reg, err := NewRegistry(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc := reg.Scope("host")
	sessions := []struct {
		name string
		req  ExecRequest
		keys []string
	}{
		{"pipe", ExecRequest{Command: "sleep 300 & echo grandchild $!\nsetsid sh -c 'echo escaper $$; exec sleep 300' &\nsleep 300", Background: true}, []string{"grandchild", "escaper"}},
		{"pty", ExecRequest{Command: "sleep 300 & echo grandchild $!\nsleep 300", Background: true, PTY: true}, []string{"grandchild"}},
	}
	for _, s := range sessions {
		res, err := sc.Exec(ctx, &s.req)
		if err != nil || res.Details.Status != StatusRunning {
			fmt.Fprintln(os.Stderr, "exec:", err, res)
			return 1
		}
		pids, err := awaitKeys(ctx, sc, res.Details.SessionID, s.keys...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("%s-leader %d\n", s.name, res.Details.Pid)
		for _, k := range s.keys {
			fmt.Printf("%s-%s %d\n", s.name, k, pids[k])
		}
	}
	if len(rest) > 1 && rest[1] == "kill-watchdog" {
		// Someone kills the watchdog: the registry must start another one
		// that knows every group.
		old := reg.watchdog.pid()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			fmt.Fprintln(os.Stderr, "kill watchdog:", err)
			return 1
		}
		for p := reg.watchdog.pid(); p == old || p == 0; p = reg.watchdog.pid() {
			if ctx.Err() != nil {
				fmt.Fprintln(os.Stderr, "no new watchdog")
				return 1
			}
			time.Sleep(time.Millisecond)
		}
	}
	fmt.Printf("watchdog %d\n", reg.watchdog.pid())
	if reg.cgroups != nil {
		fmt.Printf("cgroup %s\n", reg.cgroups.dir)
	}
	fmt.Println("ready")
	time.Sleep(10 * time.Minute)
	return 0
}

func TestParentDeathKillsSessions(t *testing.T) {
	haveCgroups := cgroupsAvailable(t)
	for _, mode := range []string{"auto", "off"} {
		t.Run("with containment "+mode, func(t *testing.T) {
			if mode == "auto" && !haveCgroups {
				t.Skip("cgroup v2 containment is not available here")
			}
			parentDeath(t, mode)
		})
		t.Run("with containment "+mode+", after the watchdog was killed", func(t *testing.T) {
			if mode == "auto" && !haveCgroups {
				t.Skip("cgroup v2 containment is not available here")
			}
			parentDeath(t, mode, "kill-watchdog")
		})
	}
}

// parentDeath runs the own-registry helper, SIGKILLs it once its sessions
// run, and checks what outlives it.
func parentDeath(t *testing.T, mode string, extra ...string) {
	cmd := exec.Command(os.Args[0], append([]string{"own-registry", mode}, extra...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	// Our own pipe, not StdoutPipe: Wait must not close it under the reader.
	stdout, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = w
	err = cmd.Start()
	_ = w.Close()
	if err != nil {
		_ = stdout.Close()
		require.NoError(t, err)
	}

	// Read the helper's report in a goroutine that ends at EOF, once the
	// helper and the processes that share its stdout are gone.
	lines := make(chan string)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		// Unblock the reader even if an escaper still holds the pipe.
		_ = stdout.SetReadDeadline(time.Now())
		for range lines {
		}
		<-readerDone
		_ = stdout.Close()
	})
	pids := map[string]int{}
	cgroup := ""
	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
read:
	for {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "the helper exited before it was ready")
			if line == "ready" {
				break read
			}
			k, v, _ := strings.Cut(line, " ")
			if k == "cgroup" {
				cgroup = v
				continue
			}
			pids[k], err = strconv.Atoi(v)
			require.NoError(t, err, line)
		case <-timeout.C:
			t.Fatal("the helper did not get ready within 60s")
		}
	}
	for _, k := range []string{"pipe-leader", "pipe-grandchild", "pipe-escaper", "pty-leader", "pty-grandchild", "watchdog"} {
		require.Contains(t, pids, k)
	}
	if mode == "auto" {
		require.NotEmpty(t, cgroup, "the helper's registry uses cgroups")
	}
	watches := map[string]*pidWatch{}
	t.Cleanup(func() {
		for _, w := range watches {
			w.kill()
			w.close()
		}
	})
	for k, pid := range pids {
		w, err := watchPid(pid)
		require.NoError(t, err)
		require.GreaterOrEqual(t, w.fd, 0, "%s %d is alive before the host dies", k, pid)
		watches[k] = w
	}

	killedAt := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	waited = true
	eof := time.NewTimer(10 * time.Second)
	defer eof.Stop()
drain:
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				break drain
			}
		case <-eof.C:
			t.Fatal("the helper's stdout did not reach EOF")
		}
	}

	deadline := time.Now().Add(10 * time.Second)
	t.Run("every session process and grandchild ends when the host is SIGKILLed", func(t *testing.T) {
		for _, k := range []string{"pipe-leader", "pipe-grandchild", "pty-leader", "pty-grandchild"} {
			assert.True(t, watches[k].goneBy(deadline), "%s %d outlived its host", k, pids[k])
		}
	})
	t.Run("the watchdog ends too", func(t *testing.T) {
		assert.True(t, watches["watchdog"].goneBy(deadline), "watchdog %d outlived its host", pids["watchdog"])
	})
	gone := time.Since(killedAt)
	if cgroup != "" {
		t.Run("a setsid escaper is killed through the cgroup", func(t *testing.T) {
			assert.True(t, watches["pipe-escaper"].goneBy(deadline), "escaper %d outlived its host", pids["pipe-escaper"])
			// The watchdog removes the cgroups before it exits.
			assert.NoDirExists(t, cgroup)
		})
		t.Logf("containment %s: host SIGKILLed; 6 of 6 watched processes gone after %v", mode, gone.Round(time.Millisecond))
		return
	}
	// Without cgroups nothing reaches a process that left the group.
	survived := !watches["pipe-escaper"].goneBy(time.Now().Add(2 * time.Second))
	watches["pipe-escaper"].kill()
	assert.True(t, watches["pipe-escaper"].goneBy(time.Now().Add(10*time.Second)))
	t.Logf("containment %s: host SIGKILLed; 5 of 5 group processes gone after %v; setsid escaper survived: %v", mode, gone.Round(time.Millisecond), survived)
}

// ---------------------------------------------------------------------------
// 4. Concurrent use.

// endRecord is the end state first observed for a session.
type endRecord struct {
	status   Status
	code     string // "" when no exit code, else the number
	signal   string
	reason   ExitReason // "" until a result that carries it was seen
	seenSeq  int64      // seq at which the first observing call returned
	observed int
}

// stressBook records every observation of every session. Session ids are
// reissued once a session is forgotten, so a session is an incarnation of
// an id: the n-th exec that returned it running. Every call is stamped with
// sequence numbers taken before and after it; an observation is attributed
// to the incarnation whose exec returned before the call began, and skipped
// when the call overlaps an exec that returned the same id (it may have
// seen either incarnation).
type stressBook struct {
	seq atomic.Int64

	mu           sync.Mutex
	ended        map[string]*endRecord // by incarnation key "<id>#<n>"
	ids          []string
	incarnations map[string][][2]int64 // id → [start, end] of each exec that returned it
	ambiguous    int
	reissued     int
	violations   []string
	counts       map[string]int
}

// incarnation names the session a call from start to end observed, or ""
// when that is ambiguous.
func (b *stressBook) incarnationLocked(id string, start, end int64) string {
	n := 0
	for _, iv := range b.incarnations[id] {
		if iv[0] < end && iv[1] > start {
			b.ambiguous++
			return ""
		}
		if iv[1] < start {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return id + "#" + strconv.Itoa(n)
}

func (b *stressBook) violate(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.violations) < 50 {
		b.violations = append(b.violations, fmt.Sprintf(format, args...))
	}
}

func (b *stressBook) addID(id string, start, end int64) {
	b.mu.Lock()
	if len(b.incarnations[id]) > 0 {
		b.reissued++
	}
	b.incarnations[id] = append(b.incarnations[id], [2]int64{start, end})
	b.ids = append(b.ids, id)
	b.mu.Unlock()
}

func (b *stressBook) randomID(rng *rand.Rand) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.ids) == 0 || rng.IntN(20) == 0 {
		return "no-such-session"
	}
	// Favour recent sessions: they are the ones still running.
	n := len(b.ids)
	return b.ids[n-1-rng.IntN(min(n, 12))]
}

func (b *stressBook) count(action string) {
	b.mu.Lock()
	b.counts[action]++
	b.mu.Unlock()
}

func codeString(c *int) string {
	if c == nil {
		return ""
	}
	return strconv.Itoa(*c)
}

// observe records what a call that ran from seq start to seq end saw of
// session id. hasReason says whether the result carries exitReason.
func (b *stressBook) observe(id string, start, end int64, status Status, code *int, signal string, reason ExitReason, hasReason bool, via string) {
	switch status {
	case StatusRunning, StatusCompleted, StatusFailed:
	default:
		b.violate("%s of %s: status %q", via, id, status)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	key := b.incarnationLocked(id, start, end)
	if key == "" {
		return
	}
	id = key
	rec := b.ended[id]
	if status == StatusRunning {
		if rec != nil && start > rec.seenSeq {
			b.violations = append(b.violations, fmt.Sprintf("%s of %s: running after it was seen %s", via, id, rec.status))
		}
		return
	}
	if hasReason && reason == "" {
		b.violations = append(b.violations, fmt.Sprintf("%s of %s: ended without exitReason", via, id))
	}
	if rec == nil {
		rec = &endRecord{status: status, code: codeString(code), signal: signal, seenSeq: end}
		b.ended[id] = rec
	}
	rec.observed++
	rec.seenSeq = min(rec.seenSeq, end)
	if rec.status != status || rec.code != codeString(code) || rec.signal != signal {
		b.violations = append(b.violations, fmt.Sprintf("%s of %s: end state changed from %s/%q/%q to %s/%q/%q",
			via, id, rec.status, rec.code, rec.signal, status, codeString(code), signal))
	}
	if hasReason {
		if rec.reason == "" {
			rec.reason = reason
		} else if rec.reason != reason {
			b.violations = append(b.violations, fmt.Sprintf("%s of %s: exitReason changed from %s to %s", via, id, rec.reason, reason))
		}
	}
}

var stressCommands = []struct {
	cmd   string
	stdin string
	pty   bool
}{
	{"true", "", false},
	{"exit 7", "", false},
	{"echo hello; echo oops >&2", "", false},
	{"sleep 0.2; echo done", "", false},
	{"sleep 30", "", false},
	{"cat", "pipe", false},
	{"yes | head -n 3000", "", false},
	{"trap '' TERM; sleep 30", "", false},
	{"read x; echo got $x", "", true},
	{"sleep 0.1; exit 3", "", true},
	{"printf 'a\\033[31mb\\n'; sleep 30", "", true},
	{"kill -9 $$", "", false},
}

// stressAction runs one random call and records what it saw.
func stressAction(ctx context.Context, rng *rand.Rand, scopes []*Scope, book *stressBook) {
	sc := scopes[rng.IntN(len(scopes))]
	var timeout *Number
	if rng.IntN(2) == 0 {
		timeout = ptr(Number(rng.IntN(150)))
	}
	actions := []string{"exec", "exec-bg", "poll", "log", "write", "kill", "remove", "clear", "list", "wait"}
	action := actions[rng.IntN(len(actions))]
	book.count(action)
	start := book.seq.Add(1)
	var (
		res *Result
		err error
		id  string
	)
	switch action {
	case "exec", "exec-bg":
		c := stressCommands[rng.IntN(len(stressCommands))]
		req := &ExecRequest{Command: c.cmd, Stdin: c.stdin, PTY: c.pty, Background: action == "exec-bg", YieldMs: ptr(float64(10 + rng.IntN(150)))}
		if rng.IntN(3) == 0 {
			req.Timeout = ptr(0.05 + rng.Float64()/2)
		}
		res, err = sc.Exec(ctx, req)
	case "list":
		res, err = sc.Process(ctx, &ProcessRequest{Action: "list"})
	default:
		id = book.randomID(rng)
		req := &ProcessRequest{Action: action, SessionID: id, Timeout: timeout}
		switch action {
		case "log":
			if rng.IntN(2) == 0 {
				req.Offset = ptr(rng.IntN(5))
			}
			if rng.IntN(2) == 0 {
				req.Limit = ptr(1 + rng.IntN(5))
			}
		case "write":
			req.Data, req.EOF = "line\n", rng.IntN(3) == 0
		case "wait":
			req.Timeout = ptr(Number(rng.IntN(150))) // the default wait is 30 s
			if rng.IntN(2) == 0 {
				req.Pattern = "done|got"
			}
		}
		res, err = sc.Process(ctx, req)
	}
	end := book.seq.Add(1)
	if err != nil {
		book.violate("%s: Go error %v", action, err)
		return
	}
	if res == nil {
		book.violate("%s: nil result without an error", action)
		return
	}
	d := &res.Details
	switch action {
	case "exec", "exec-bg":
		switch d.Status {
		case StatusRunning:
			if d.SessionID == "" || d.Pid <= 0 {
				book.violate("exec: running without a session id or pid: %+v", d)
				return
			}
			book.addID(d.SessionID, start, end)
		case StatusCompleted, StatusFailed:
			if d.ExitReason == "" {
				book.violate("exec: finished without exitReason: %+v %q", d, res.Text())
			}
			if d.Status == StatusCompleted && (d.ExitCode == nil || d.ExitReason != ExitReasonExit) {
				book.violate("exec: completed without an exit code: %+v", d)
			}
		default:
			book.violate("exec: status %q: %q", d.Status, res.Text())
		}
	case "list":
		for _, s := range d.Sessions {
			book.observe(s.SessionID, start, end, s.Status, s.ExitCode, s.ExitSignal, "", false, "list")
		}
	case "poll", "wait", "kill":
		if d.SessionID == id {
			book.observe(id, start, end, d.Status, d.ExitCode, d.ExitSignal, d.ExitReason, true, action)
		}
	case "log":
		if d.SessionID == id {
			book.observe(id, start, end, d.Status, d.ExitCode, d.ExitSignal, "", false, action)
		}
	}
}

func TestStress(t *testing.T) {
	const workers = 8
	dur := 5 * time.Second
	notes := &countingNotifier{}
	reg, err := NewRegistry(Config{YieldMs: 100, KillGrace: 200 * time.Millisecond, DrainTimeout: 300 * time.Millisecond, Notifier: notes})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = reg.Close(context.Background())
		}
	})
	scopes := []*Scope{reg.Scope("agent:a"), reg.Scope("agent:b")}
	book := &stressBook{ended: map[string]*endRecord{}, counts: map[string]int{}, incarnations: map[string][][2]int64{}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var calls atomic.Int64
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					book.violate("worker %d panicked: %v", w, p)
				}
			}()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for time.Now().Before(stop) {
				stressAction(ctx, rng, scopes, book)
				calls.Add(1)
			}
		}()
	}
	wg.Wait()

	t.Run("every observation is consistent", func(t *testing.T) {
		book.mu.Lock()
		defer book.mu.Unlock()
		assert.Empty(t, book.violations)
		t.Logf("%d calls by %d workers in %v; %d sessions backgrounded (%d under a reissued id), %d seen ended, %d observations skipped as ambiguous; actions %v",
			calls.Load(), workers, dur, len(book.ids), book.reissued, len(book.ended), book.ambiguous, book.counts)
	})

	t.Run("the recorded end state is the one first observed", func(t *testing.T) {
		book.mu.Lock()
		defer book.mu.Unlock()
		checked := 0
		for key, rec := range book.ended {
			id, _, _ := strings.Cut(key, "#")
			s := sessionOf(reg, id)
			if s == nil || key != id+"#"+strconv.Itoa(len(book.incarnations[id])) {
				continue // cleared or removed, or a later incarnation holds the id
			}
			sn := s.Snapshot(0)
			ended, e := sn.Ended, sn.Exit
			if assert.True(t, ended, "session %s was seen ended", id) {
				assert.Equal(t, rec.status, statusOf(e.Status()), "session %s", id)
				assert.Equal(t, rec.code, codeString(e.Code), "session %s", id)
				assert.Equal(t, rec.signal, e.Signal, "session %s", id)
				if rec.reason != "" {
					assert.Equal(t, rec.reason, reasonOf(e.Reason), "session %s", id)
				}
				checked++
			}
		}
		t.Logf("%d ended sessions still registered match their first observation", checked)
	})

	t.Run("no session is notified more than once", func(t *testing.T) {
		events, beats := notes.snapshot()
		book.mu.Lock()
		defer book.mu.Unlock()
		for id, n := range beats {
			// A reissued id may name several sessions, each notified once.
			assert.LessOrEqual(t, n, max(1, len(book.incarnations[id])), "heartbeats for %s", id)
		}
		t.Logf("%d exit events, %d sessions woken", events, len(beats))
	})

	t.Run("Close returns within its deadline and ends everything", func(t *testing.T) {
		closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		began := time.Now()
		require.NoError(t, reg.Close(closeCtx))
		closed = true
		took := time.Since(began)
		t.Logf("Close took %v", took.Round(time.Millisecond))
		assert.Less(t, took, 10*time.Second)
		_, err := scopes[0].Exec(ctx, &ExecRequest{Command: "true"})
		assert.ErrorIs(t, err, ErrClosed)
		assert.Empty(t, children(t), "no child process is left")
	})
}

// TestStressCloseDuringCalls closes the registry while workers are still
// starting and driving sessions: Close must end everything it started,
// including runs whose spawn raced with it.
func TestStressCloseDuringCalls(t *testing.T) {
	const workers = 8
	stressRounds := 3
	if n, err := strconv.Atoi(os.Getenv("BGEXEC_CLOSE_ROUNDS")); err == nil && n > 0 {
		stressRounds = n
	}
	for round := range stressRounds {
		t.Run(fmt.Sprintf("round %d leaves no process, goroutine or cgroup behind", round+1), func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			tag := newTag(t)
			reg, err := NewRegistry(Config{YieldMs: 50, KillGrace: 200 * time.Millisecond, DrainTimeout: 300 * time.Millisecond})
			require.NoError(t, err)
			cgRoot := ""
			if reg.cgroups != nil {
				cgRoot = reg.cgroups.dir
			}
			sc := reg.Scope("a")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			var started, refused, asResult atomic.Int64
			quit := make(chan struct{})
			going := make(chan struct{})
			var goingOnce sync.Once
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-quit:
							return
						default:
						}
						res, err := sc.Exec(ctx, &ExecRequest{Command: "sleep 30", Background: true, PTY: (w+i)%4 == 0, Env: map[string]string{tagEnv: tag}})
						switch {
						case errors.Is(err, ErrClosed):
							refused.Add(1)
							return
						case err != nil || res == nil:
							t.Errorf("exec during Close: %v %v", err, res)
						case res.Details.Status == StatusRunning:
							if started.Add(1) == 20 {
								goingOnce.Do(func() { close(going) })
							}
						default:
							// Refused with a result (spawn-error) rather than ErrClosed.
							if asResult.Add(1) == 1 {
								t.Logf("refused with a result: %+v %q", res.Details, res.Text())
							}
							if !strings.Contains(res.Text(), "closed") && !strings.Contains(res.Text(), "cgroup") {
								t.Errorf("exec during Close: %+v %q", res.Details, res.Text())
							}
						}
					}
				}()
			}
			// Close once some sessions run.
			select {
			case <-going:
			case <-ctx.Done():
				t.Fatal("no sessions started")
			}
			closeCtx, cancelClose := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancelClose()
			require.NoError(t, reg.Close(closeCtx))
			close(quit)
			wg.Wait()
			t.Logf("%d started, %d refused with ErrClosed, %d refused with a spawn-error result", started.Load(), refused.Load(), asResult.Load())
			assert.Empty(t, children(t), "no child process is left")
			assert.Empty(t, taggedProcesses(t, tag), "no session process is left anywhere")
			if cgRoot != "" {
				assert.NoDirExists(t, cgRoot, "the registry cgroup is removed")
			}
			assert.NoError(t, goleak.Find(ignore))
		})
	}
}

// ---------------------------------------------------------------------------
// 5. Memory under floods of output.

// floodLongBlock is 1 MiB of text without a newline: ASCII, valid multi-byte
// code points and invalid UTF-8 (stray continuation bytes, truncated
// sequences, encoded surrogates, 0xff).
var floodLongBlock = sync.OnceValue(func() []byte {
	unit := "plain ascii 0123456789 \xff é \xc3 € \xed\xa0\x80 😀 \x80\x80 漢字 \xf0\x9f z\t"
	b := make([]byte, 0, 1<<20)
	for len(b)+len(unit) <= 1<<20 {
		b = append(b, unit...)
	}
	return b
})

// floodControlBlock is about 1 MiB of escape sequences and controls that a
// terminal would not show as text; every sequence is whole.
var floodControlBlock = sync.OnceValue(func() []byte {
	seqs := []string{
		"\x1b[31m", "\x1b[0m", "\x1b[2J", "\x1b[H", "\x1b[?25l", "\x1b[?1049h", "\x1b[1;2;3;4;5m",
		"\x1b]0;a window title\x07", "\x1b]8;;http://example.com\x1b\\", "\x1bP1$r0m\x1b\\",
		"\x07", "\x08", "\x00", "\x01", "\x7f", "\x0e", "\x0f", "\x1b(B", "\x1b=", "\x1b7", "\x1b8",
		"\xc2\x9b31m", "\xe2\x80\x8b", "\xc2\x85", "\x1b[>c", "\x1b_app\x1b\\", "\x1b[38;5;200m",
	}
	b := make([]byte, 0, 1<<20+64)
	for i := 0; len(b) < 1<<20; i++ {
		b = append(b, seqs[i%len(seqs)]...)
	}
	return b
})

// helperFlood writes at least n bytes as whole blocks: block repeated, with
// every fourth block on stderr; for text, a newline after every eighth
// block, so lines are about 8 MiB long.
func helperFlood(rest []string, block []byte, newlines bool) int {
	n, err := strconv.ParseInt(rest[0], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for i := int64(0); i*int64(len(block)) < n; i++ {
		w := os.Stdout
		if i%4 == 3 {
			w = os.Stderr
		}
		if _, err := w.Write(block); err != nil {
			return 1
		}
		if newlines && i%8 == 7 {
			_, _ = w.Write([]byte("\nshort line\n"))
		}
	}
	return 0
}

// collectedHeap is the heap in use after a collection. Buffers parked in a
// sync.Pool survive one collection and count: they are memory the
// session's readers use.
func collectedHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// settledHeap is the live heap once pools have been emptied too.
func settledHeap() uint64 {
	runtime.GC()
	return collectedHeap()
}

func TestBoundedMemory(t *testing.T) {
	volume := int64(256 << 20)
	if os.Getenv("BGEXEC_HEAVY") == "1" {
		volume = 2 << 30
	}
	const (
		slack = 8 << 20
		// The caps, as UTF-8 at 4 bytes per code point: the aggregate and
		// one pending buffer per stream.
		caps = DefaultMaxOutputChars*4 + 2*DefaultPendingMaxOutputChars*4
	)
	for _, c := range []struct {
		name, helper string
		text         bool
	}{
		{"long lines with invalid UTF-8", "flood-text", true},
		{"control characters and escape sequences only", "flood-controls", false},
	} {
		t.Run(fmt.Sprintf("%s: %d MiB keep the heap within the caps", c.name, volume>>20), func(t *testing.T) {
			reg := newTestRegistry(t, Config{})
			sc := reg.Scope("mem")
			base := settledHeap()
			began := time.Now()
			id := startBackground(t, sc, &ExecRequest{Command: helper(c.helper, strconv.FormatInt(volume, 10))})

			// Sample the live heap while the flood runs.
			var peak atomic.Uint64
			samplerDone := make(chan struct{})
			stopSampling := make(chan struct{})
			go func() {
				defer close(samplerDone)
				// Each sample is a full collection: under -race it costs
				// enough to slow the flood, so sample ten times a second.
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for {
					if h := collectedHeap(); h > peak.Load() {
						peak.Store(h)
					}
					select {
					case <-stopSampling:
						return
					case <-tick.C:
					}
				}
			}()
			// A pattern waiter that never matches follows the long lines.
			ctx, cancel := context.WithTimeout(context.Background(), MaxWaitTimeoutMs*time.Millisecond)
			defer cancel()
			w, err := sc.Process(ctx, &ProcessRequest{Action: "wait", SessionID: id, Pattern: "^never matches$", Timeout: ptr(Number(MaxWaitTimeoutMs))})
			require.NoError(t, err)
			close(stopSampling)
			<-samplerDone
			took := time.Since(began)
			require.Equal(t, "exit", w.Details.Condition, w.Text())
			require.NotNil(t, w.Details.ExitCode, w.Text())
			require.Equal(t, 0, *w.Details.ExitCode)
			if c.text {
				assert.True(t, utf8.ValidString(w.Text()), "the drained output is valid UTF-8")
				assert.LessOrEqual(t, utf8.RuneCountInString(w.Text()), 2*DefaultPendingMaxOutputChars+1000, "pending output is capped per stream")
			}
			w = nil // measure the session, not our copy of its output

			kept := int64(settledHeap()) - int64(base)
			lg := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0)})
			require.NotNil(t, lg.Details.TotalChars)
			totalChars := *lg.Details.TotalChars
			if c.text {
				assert.Equal(t, int64(DefaultMaxOutputChars), totalChars, "the aggregate is full")
				assert.True(t, *lg.Details.Truncated)
				assert.True(t, utf8.ValidString(lg.Text()), "the log is valid UTF-8")
			} else {
				assert.Zero(t, totalChars, "no visible character was produced")
				assert.Equal(t, "(no output recorded)", lg.Text())
			}
			lg = nil
			mustProcess(t, sc, &ProcessRequest{Action: "clear", SessionID: id})
			cleared := int64(settledHeap()) - int64(base)
			growth := int64(peak.Load()) - int64(base)
			t.Logf("%d MiB in %v (%.0f MiB/s): peak heap growth %d KiB, retained after exit %d KiB, after clear %d KiB; bound %d KiB; totalChars %d",
				volume>>20, took.Round(time.Millisecond), float64(volume)/(1<<20)/took.Seconds(),
				growth>>10, kept>>10, cleared>>10, (caps+slack)>>10, totalChars)
			assert.LessOrEqual(t, growth, int64(caps+slack), "peak heap growth")
			assert.LessOrEqual(t, kept, int64(caps+slack), "heap growth with the finished session kept")
			assert.LessOrEqual(t, cleared, int64(slack), "heap growth once the session is cleared")
		})
	}
}
