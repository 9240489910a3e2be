package kube

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
)

// waitLimit bounds every wait of these tests.
const waitLimit = 30 * time.Second

// newTestHost is the host of scope "s" in pod "p1" of a new test cluster,
// closed at the test's end.
func newTestHost(t *testing.T) (*Host, *Cluster, *testCluster) {
	t.Helper()
	tc := newTestCluster(t, "p1")
	c, err := New(Config{REST: tc.rest(), Namespace: "ns", Pod: "p1", StartTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.Host("s"), c, tc
}

// within runs f and fails the test when it has not returned after
// waitLimit.
func within[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	tm := time.NewTimer(waitLimit)
	defer tm.Stop()
	select {
	case v := <-ch:
		return v
	case <-tm.C:
		t.Fatalf("%s: not done within %s", what, waitLimit)
		panic("unreachable")
	}
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	return within(t, "read output", func() string {
		b, _ := io.ReadAll(r)
		return string(b)
	})
}

// finish waits for the exit, then reaps and releases p.
func finish(t *testing.T, p session.Process) (syscall.WaitStatus, error, error) {
	t.Helper()
	within(t, "await exit", func() error { return p.AwaitExit() })
	ws, err := p.Reap()
	return ws, err, p.Release()
}

func TestExitCodeAndSeparateStreams(t *testing.T) {
	h, _, _ := newTestHost(t)
	checkExitAndStreams(t, h)
}

func checkExitAndStreams(t *testing.T, h *Host) {
	st, err := h.Start(context.Background(), &host.Spec{Command: `echo out; echo err >&2; printf 'no newline'; exit 3`})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Outputs) != 2 || st.Stdin != nil {
		t.Fatalf("pipes: %d outputs, stdin %v; want 2 and none", len(st.Outputs), st.Stdin)
	}
	var wg sync.WaitGroup
	var errText string
	wg.Go(func() { errText = readAll(t, st.Outputs[1]) })
	out := readAll(t, st.Outputs[0])
	wg.Wait()
	if out != "out\nno newline" || errText != "err\n" {
		t.Fatalf("stdout %q, stderr %q; want %q and %q", out, errText, "out\nno newline", "err\n")
	}
	ws, rerr, lerr := finish(t, st.Process)
	if rerr != nil || lerr != nil {
		t.Fatalf("reap %v, release %v", rerr, lerr)
	}
	if !ws.Exited() || ws.ExitStatus() != 3 {
		t.Fatalf("status %v; want exit 3", ws)
	}
	if st.Process.Pid() <= 1 {
		t.Fatalf("pid %d", st.Process.Pid())
	}
}

func TestExitZeroAndWorkdirAndEnv(t *testing.T) {
	h, _, tc := newTestHost(t)
	sub := tc.pods["p1"] + "/sub"
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := h.Start(context.Background(), &host.Spec{Command: `pwd; echo "$A $B"`, Dir: sub,
		Env: host.Env{Defaults: []string{"A=def", "B=def"}, Overrides: map[string]string{"B": "over"}}})
	if err != nil {
		t.Fatal(err)
	}
	go discard(st.Outputs[1])
	out := readAll(t, st.Outputs[0])
	if out != sub+"\ndef over\n" || st.Cwd != sub {
		t.Fatalf("output %q, cwd %q", out, st.Cwd)
	}
	ws, rerr, lerr := finish(t, st.Process)
	if rerr != nil || lerr != nil || ws.ExitStatus() != 0 || !ws.Exited() {
		t.Fatalf("status %v, reap %v, release %v", ws, rerr, lerr)
	}

	// A missing directory: the pod's default, and a warning.
	st, err = h.Start(context.Background(), &host.Spec{Command: `pwd`, Dir: "/nonexistent/dir"})
	if err != nil {
		t.Fatal(err)
	}
	go discard(st.Outputs[1])
	out = readAll(t, st.Outputs[0])
	if out != tc.pods["p1"]+"\n" || len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], `"/nonexistent/dir" is unavailable in pod p1`) {
		t.Fatalf("output %q, warnings %q", out, st.Warnings)
	}
	finish(t, st.Process)
}

func TestStdinWriteAndEOF(t *testing.T) {
	h, _, _ := newTestHost(t)
	checkStdin(t, h)
}

func checkStdin(t *testing.T, h *Host) {
	st, err := h.Start(context.Background(), &host.Spec{Command: `cat; echo done`, StdinPipe: true})
	if err != nil {
		t.Fatal(err)
	}
	go discard(st.Outputs[1])
	w := st.Stdin.(interface {
		io.WriteCloser
		SetWriteDeadline(time.Time) error
	})
	if err := w.SetWriteDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil { // EOF: cat ends
		t.Fatal(err)
	}
	if out := readAll(t, st.Outputs[0]); out != "hello\ndone\n" {
		t.Fatalf("output %q", out)
	}
	ws, rerr, lerr := finish(t, st.Process)
	if rerr != nil || lerr != nil || !ws.Exited() || ws.ExitStatus() != 0 {
		t.Fatalf("status %v, reap %v, release %v", ws, rerr, lerr)
	}
}

// lineReader collects a stream's output for waits on it.
type lineReader struct {
	mu   sync.Mutex
	buf  strings.Builder
	more chan struct{}
	done chan struct{}
}

func collect(r io.Reader) *lineReader {
	l := &lineReader{more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			l.mu.Lock()
			l.buf.Write(b[:n])
			l.mu.Unlock()
			select {
			case l.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return l
}

func (l *lineReader) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor waits until the output contains s, calling poke (when not nil)
// every 100ms meanwhile.
func (l *lineReader) waitFor(t *testing.T, s string, poke func()) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(l.text(), s) {
		select {
		case <-l.more:
		case <-tick.C:
			if poke != nil {
				poke()
			}
		case <-deadline.C:
			t.Fatalf("output %q has no %q after %s", l.text(), s, waitLimit)
		}
	}
}

func TestPTYSizeAndResize(t *testing.T) {
	h, _, _ := newTestHost(t)
	checkPTY(t, h)
}

func checkPTY(t *testing.T, h *Host) {
	st, err := h.Start(context.Background(), &host.Spec{Command: `stty size; while read x; do [ "$x" = q ] && exit 7; stty size; done`, PTY: true, Cols: 91, Rows: 27})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Outputs) != 1 || st.Stdin == nil {
		t.Fatalf("terminal: %d outputs, stdin %v", len(st.Outputs), st.Stdin)
	}
	out := collect(st.Outputs[0])
	out.waitFor(t, "27 91", nil)
	if strings.Contains(out.text(), "bgexec1") {
		t.Fatalf("the wrapper's report reached the output: %q", out.text())
	}
	rz, ok := st.Process.(host.Resizer)
	if !ok {
		t.Fatal("no host.Resizer")
	}
	if err := rz.Resize(120, 40); err != nil {
		t.Fatal(err)
	}
	// The resize and the input travel on separate streams: ask until the
	// new size shows.
	out.waitFor(t, "40 120", func() { _, _ = st.Stdin.Write([]byte("\n")) })
	if _, err := st.Stdin.Write([]byte("q\n")); err != nil {
		t.Fatal(err)
	}
	ws, rerr, lerr := finish(t, st.Process)
	within(t, "output end", func() struct{} { <-out.done; return struct{}{} })
	if rerr != nil || lerr != nil || !ws.Exited() || ws.ExitStatus() != 7 {
		t.Fatalf("status %v, reap %v, release %v", ws, rerr, lerr)
	}
}

// alive reports whether pid is a live process of this machine (the test
// runtime's containers are directories here), not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// TestKillReachesProcessThatLeftTheGroup is an attack: a command starts a
// process in a session of its own (setsid), out of its process group,
// and the session is killed. Nothing of it may survive.
func TestKillReachesProcessThatLeftTheGroup(t *testing.T) {
	h, _, _ := newTestHost(t)
	st, err := h.Start(context.Background(), &host.Spec{Command: `setsid sleep 300 & echo $!; sleep 300`})
	if err != nil {
		t.Fatal(err)
	}
	go discard(st.Outputs[1])
	out := collect(st.Outputs[0])
	out.waitFor(t, "\n", nil)
	escaped, err := strconv.Atoi(strings.TrimSpace(out.text()))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLimit)
	for !alive(escaped) || pgidOf(escaped) != escaped {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never ran in a session of its own", escaped)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) }) // on failure only
	if err := st.Process.SignalGroup(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ws, rerr, lerr := finish(t, st.Process)
	if rerr != nil || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("status %v, reap %v; want SIGTERM", ws, rerr)
	}
	if lerr != nil {
		t.Fatalf("release: %v", lerr)
	}
	for alive(escaped) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d, which left the session's process group, survived the kill", escaped)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func pgidOf(pid int) int {
	g, err := syscall.Getpgid(pid)
	if err != nil {
		return -1
	}
	return g
}

// TestLostWhenAPIServerGoesAway closes the API server (its listener and
// every connection) while a session runs: the session ends lost, with a
// text that says the stream ended and the kill attempt failed.
func TestLostWhenAPIServerGoesAway(t *testing.T) {
	h, _, tc := newTestHost(t)
	st, err := h.Start(context.Background(), &host.Spec{Command: `echo started; sleep 300`})
	if err != nil {
		t.Fatal(err)
	}
	go discard(st.Outputs[1])
	out := collect(st.Outputs[0])
	out.waitFor(t, "started\n", nil)
	tc.stop()
	_, rerr, lerr := finish(t, st.Process)
	if !errors.Is(rerr, session.ErrLost) {
		t.Fatalf("reap: %v; want a lost session", rerr)
	}
	if !strings.Contains(rerr.Error(), "ended without the command's exit") || !strings.Contains(rerr.Error(), "attempt to kill it over a new exec failed") {
		t.Fatalf("lost text %q", rerr.Error())
	}
	if lerr != nil {
		t.Fatalf("release: %v", lerr)
	}
}

// TestLostWhenStreamDrops closes the exec stream's connection while the
// API server stays: the session ends lost, and the end check, over a new
// exec, finds the shell still running and kills it.
func TestLostWhenStreamDrops(t *testing.T) {
	h, _, tc := newTestHost(t)
	st, err := h.Start(context.Background(), &host.Spec{Command: `echo $$; sleep 300`})
	if err != nil {
		t.Fatal(err)
	}
	go discard(st.Outputs[1])
	out := collect(st.Outputs[0])
	out.waitFor(t, "\n", nil)
	shell, err := strconv.Atoi(strings.TrimSpace(out.text()))
	if err != nil {
		t.Fatalf("shell pid %q", out.text())
	}
	wrapperPid := st.Process.Pid()
	tc.dropConns()
	_, rerr, lerr := finish(t, st.Process)
	if !errors.Is(rerr, session.ErrLost) {
		t.Fatalf("reap: %v; want a lost session", rerr)
	}
	if !strings.Contains(rerr.Error(), "It was still running; one attempt to kill it over a new exec worked") {
		t.Fatalf("lost text %q", rerr.Error())
	}
	if lerr != nil {
		t.Fatalf("release: %v", lerr)
	}
	if alive(shell) || alive(wrapperPid) {
		t.Fatalf("the shell (pid %d) or its wrapper (pid %d) survived", shell, wrapperPid)
	}
}

// discard reads r to its end.
func discard(r io.Reader) { _, _ = io.Copy(io.Discard, r) }

// TestPTYInterruptReachesShellNotWrapper: ^C on the terminal signals its
// foreground process group; the shell's own trap runs and its exit code
// is what the session reports (a wrapper that died of SIGINT would leave
// the runtime's 130 instead).
func TestPTYInterruptReachesShellNotWrapper(t *testing.T) {
	h, _, _ := newTestHost(t)
	st, err := h.Start(context.Background(), &host.Spec{Command: `trap 'echo got-int; exit 5' INT; echo ready; while :; do sleep 0.1; done`, PTY: true, Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	out := collect(st.Outputs[0])
	out.waitFor(t, "ready", nil)
	if _, err := st.Stdin.Write([]byte{0x03}); err != nil {
		t.Fatal(err)
	}
	ws, rerr, lerr := finish(t, st.Process)
	within(t, "output end", func() struct{} { <-out.done; return struct{}{} })
	if rerr != nil || lerr != nil || !ws.Exited() || ws.ExitStatus() != 5 {
		t.Fatalf("status %v, reap %v, release %v; want exit 5", ws, rerr, lerr)
	}
	if !strings.Contains(out.text(), "got-int") || strings.Contains(out.text(), "bgexec-end") {
		t.Fatalf("output %q", out.text())
	}
}
