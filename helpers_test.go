//go:build linux

package bgexec

// Helpers shared by the reliability tests (leak_test.go, escape_test.go,
// parentdeath_test.go, stress_test.go) and others: what a test sees of
// processes in /proc, pidfd watches, session lookups, and the ways a
// session ends.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/session"
	"github.com/stretchr/testify/require"
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

// awaitTagged waits, at most 30 s, until exactly n processes carry tag
// and returns them. One look is not enough: a process in the middle of
// an exec has no readable environ for a moment, and one that is ending
// is not ours to wait on (it may have been reparented), so /proc is
// looked at again until the deadline.
func awaitTagged(t *testing.T, tag string, n int) []int {
	t.Helper()
	return awaitTaggedCount(t, tag, fmt.Sprint(n), func(seen int) bool { return seen == n })
}

// awaitTaggedAtLeast is awaitTagged for at least n processes.
func awaitTaggedAtLeast(t *testing.T, tag string, n int) []int {
	t.Helper()
	return awaitTaggedCount(t, tag, fmt.Sprint("at least ", n), func(seen int) bool { return seen >= n })
}

// awaitNoTagged waits, at most 30 s, until no process carries tag.
func awaitNoTagged(t *testing.T, tag string) {
	t.Helper()
	awaitTaggedCount(t, tag, "no", func(seen int) bool { return seen == 0 })
}

func awaitTaggedCount(t *testing.T, tag, want string, ok func(int) bool) []int {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		seen := taggedProcesses(t, tag)
		if ok(len(seen)) {
			return seen
		}
		select {
		case <-deadline:
			t.Fatalf("want %s processes tagged %s, see %d: %v", want, tag, len(seen), seen)
		case <-time.After(20 * time.Millisecond):
		}
	}
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

// awaitLogLine waits until the session's log has a line equal to want,
// or ctx ends. Like awaitKeys it reads the log, so a poll that already
// returned the line does not hide it.
func awaitLogLine(ctx context.Context, sc *Scope, id, want string) error {
	for {
		res, err := sc.Process(ctx, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0)})
		if err != nil {
			return err
		}
		if slices.Contains(strings.Split(res.Text(), "\n"), want) {
			return nil
		}
		if res.Details.Status != StatusRunning {
			return fmt.Errorf("session %s ended before printing %q: %q", id, want, res.Text())
		}
		if _, err := sc.Process(ctx, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(2000))}); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("session %s: waiting for %q: %w", id, want, ctx.Err())
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
	reg, err := NewRegistry(sandboxed(Config{Containment: ContainmentRequired}))
	if err != nil {
		t.Logf("cgroup containment unavailable: %v", err)
		return false
	}
	require.NoError(t, reg.Close(testCtx(t)))
	return true
}

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

func codeString(c *int) string {
	if c == nil {
		return ""
	}
	return strconv.Itoa(*c)
}

// needTool returns the path of a system tool (on PATH, else the first of
// alt that exists); without it the test fails under CI=true and is
// skipped elsewhere.
func needTool(t testing.TB, name string, alt ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, a := range alt {
		if _, err := os.Stat(a); err == nil {
			return a
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI (.ci/run installs it)", name)
	}
	t.Skipf("%s not installed", name)
	return ""
}
