//go:build linux

package bgexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host/sandbox"
	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/bgexec/bgexec/internal/testhelper"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// helperEnv marks a re-executed test binary as a helper child.
const helperEnv = "BGEXEC_TEST_HELPER"

// TestMain dispatches helper commands when the test binary is re-executed
// as a child; otherwise it runs the tests under goleak.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(runHelper(os.Args[1:]))
	}
	// A race-enabled binary sleeps a second before it exits 0, to let
	// other threads report; the helpers have nothing to report, and the
	// sleep made every helper run cost a second.
	if err := os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")); err != nil {
		fmt.Fprintln(os.Stderr, "GORACE:", err)
		os.Exit(2)
	}
	// The parallel tests wait on child processes, terminals, sandboxes and
	// sshd: two per CPU. Three per CPU was faster on a quiet machine but
	// overran a 60 s deadline in the sandboxed pass; four starved a
	// CPU-bound test on a loaded machine.
	proctest.SetParallelPerCPU(2)
	// The helpers that need no part of bgexec run from a small binary
	// built once here, not from this race-built binary, which costs about
	// 0.3 s of CPU to start; the test binaries re-executed by the tests
	// find it in the environment. Without the go tool every helper runs
	// from this binary, as before.
	cleanup := func() {}
	if os.Getenv(testhelper.BinEnv) == "" {
		cleanup = buildHelper()
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		cleanup()
		os.Exit(code)
	}))
}

// buildHelper builds the helper binary into a temporary directory and
// names it in the environment. It returns what removes the directory.
func buildHelper() (cleanup func()) {
	// Beside the test binary when that is a temporary directory (go test's
	// own), so that every sandbox that shows the test binary shows the
	// helper too; else in a temporary directory of its own.
	parent := ""
	if self := filepath.Dir(os.Args[0]); sandbox.Within(self, os.TempDir()) {
		parent = self
	}
	dir, err := os.MkdirTemp(parent, "bgexec-test-helper-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "test helper:", err)
		return func() {}
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	bin, err := testhelper.Build(dir)
	if err == nil {
		err = os.Setenv(testhelper.BinEnv, bin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "the helpers run from the test binary:", err)
	}
	return cleanup
}

// runHelper runs a helper command in the re-executed test binary: those
// that run a registry of their own here, the others through testhelper.
func runHelper(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no command")
		return 2
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "sandbox-syscalls":
		return helperSyscalls()
	case "unix-connect":
		return helperUnixConnect(rest[0])
	case "sandbox-host-pooled":
		return helperSandboxHostPooled(rest[0])
	case "sandbox-host":
		return helperSandboxHost(rest[0])
	case "killed-cgroup-host":
		return killedCgroupHost(rest[0])
	case "exhausted-kill":
		// Kills a session while this process has no free descriptor.
		return helperExhaustedKill(rest)
	case "cgroup-escape-host":
		// Runs a registry whose session leaves its cgroup (cgroupescape_test.go).
		return helperCgroupEscapeHost(rest)
	case "task-box-host":
		// Runs a registry in a small pids cgroup under a fork bomb (taskbudget_test.go).
		return helperTaskBoxHost(rest)
	case "own-registry":
		// Runs a registry of its own, reports its processes, then blocks.
		return helperOwnRegistry(rest)
	case "raw-idle":
		// The raw side of BenchmarkIdleSessions, in a process of its own.
		return rawIdleHelper(rest)
	default:
		if code, ok := testhelper.Run(cmd, rest); ok {
			return code
		}
		fmt.Fprintln(os.Stderr, "helper: unknown command", cmd)
		return 2
	}
}

// helper returns a shell command line that runs a helper command: from the
// small helper binary when it has the command and was built, else from
// this test binary.
func helper(args ...string) string {
	q := []string{"env", helperEnv + "=1", shellQuote(os.Args[0])}
	if bin := os.Getenv(testhelper.BinEnv); bin != "" && len(args) > 0 && testhelper.Has(args[0]) {
		q = []string{shellQuote(bin)}
	}
	for _, a := range args {
		q = append(q, shellQuote(a))
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// newTestRegistry returns a registry closed at the end of the test.
// Unless cfg says otherwise, the yield window is the longest allowed, so a
// foreground run on a loaded machine never backgrounds by accident.
func newTestRegistry(t *testing.T, cfg Config) *Registry {
	t.Helper()
	if cfg.YieldMs == 0 {
		cfg.YieldMs = MaxYieldMs
	}
	reg, err := NewRegistry(sandboxed(cfg))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, reg.Close(ctx))
	})
	settlePool(t, reg) // the test starts with the sandbox pool's processes in place, if it has one
	return reg
}

// testCtx is a context with a deadline for one test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustExec runs exec and fails the test on a Go error.
func mustExec(t *testing.T, sc *Scope, req *ExecRequest) *Result {
	t.Helper()
	res, err := sc.Exec(testCtx(t), req)
	require.NoError(t, err)
	require.NotNil(t, res)
	return res
}

func mustProcess(t *testing.T, sc *Scope, req *ProcessRequest) *Result {
	t.Helper()
	res, err := sc.Process(testCtx(t), req)
	require.NoError(t, err)
	require.NotNil(t, res)
	return res
}

// startBackground starts cmd in the background and returns its session id.
func startBackground(t *testing.T, sc *Scope, req *ExecRequest) string {
	t.Helper()
	req.Background = true
	res := mustExec(t, sc, req)
	require.Equal(t, StatusRunning, res.Details.Status, res.Text())
	return res.Details.SessionID
}

// waitFor waits (event-driven, via the wait action) until the session's
// output matches pattern.
func waitFor(t *testing.T, sc *Scope, id, pattern string) *Result {
	t.Helper()
	res := mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Pattern: pattern, Timeout: ptr(Number(20000))})
	require.Equal(t, "pattern", res.Details.Condition, res.Text())
	return res
}

// waitForAfter is waitFor for a line that may have come with the output
// an earlier wait (prev) returned already: a wait matches only output no
// call has returned, so a line that arrived in the same read as prev's
// match is looked for in prev's text first.
func waitForAfter(t *testing.T, sc *Scope, id string, prev *Result, pattern string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	for _, line := range strings.Split(prev.Text(), "\n") {
		if re.MatchString(line) {
			return
		}
	}
	waitFor(t, sc, id, pattern)
}

// waitExit waits for the session to end and returns the wait result.
func waitExit(t *testing.T, sc *Scope, id string) *Result {
	t.Helper()
	res := mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Timeout: ptr(Number(20000))})
	require.Equal(t, "exit", res.Details.Condition, res.Text())
	return res
}

// pidGone waits, with a deadline, until pid has exited (see
// proctest.PidGone).
func pidGone(t *testing.T, pid int) bool { return proctest.PidGone(t, pid) }

// waitPidExit waits up to d for pid to exit (see proctest.WaitPidExit).
func waitPidExit(pid int, d time.Duration) (bool, error) { return proctest.WaitPidExit(pid, d) }

// children lists the live child processes of this test process.
func children(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	me := os.Getpid()
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+2:])
		if len(f) > 1 {
			if ppid, _ := strconv.Atoi(f[1]); ppid == me {
				out = append(out, pid)
			}
		}
	}
	return out
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	// The runtime opens its poller's descriptors (an epoll instance and an
	// event descriptor) the first time a file joins it, and keeps them. Start
	// the poller first, so that a test run alone does not count them as its
	// own leak.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.NoError(t, w.Close())
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// removeCgroupDir removes the empty cgroup dir, retrying for up to 10
// seconds while the kernel still counts a process that is exiting in it
// (EBUSY); it prints "cleanup:", the error and what cgroup.procs lists
// when it cannot.
func removeCgroupDir(dir string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			fmt.Printf("cleanup: %v (cgroup.procs: %q)\n", err, procs)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killedCgroupHost moves this helper into a cgroup under base that was
// killed once before, then runs a command through a new registry (default
// containment) and asks for required containment, printing what happened.
func killedCgroupHost(base string) int {
	k := filepath.Join(base, "bgexec-test-killed-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(k, 0o755); err != nil {
		fmt.Println("setup:", err)
		return 1
	}
	defer removeCgroupDir(k)
	pid := []byte(strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(filepath.Join(k, "cgroup.kill"), []byte("1"), 0); err != nil {
		fmt.Println("setup:", err)
		return 1
	}
	if err := os.WriteFile(filepath.Join(k, "cgroup.procs"), pid, 0); err != nil {
		fmt.Println("setup:", err)
		return 1
	}
	defer func() { _ = os.WriteFile(filepath.Join(base, "cgroup.procs"), pid, 0) }()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg, err := NewRegistry(sandboxed(Config{}))
	if err != nil {
		fmt.Println("registry:", err)
		return 1
	}
	defer func() { _ = reg.Close(ctx) }()
	fmt.Println("cgroups:", cgroupRoot(reg) != nil)
	res, err := reg.Scope("a").Exec(ctx, &ExecRequest{Command: "echo ok"})
	if err != nil {
		fmt.Println("exec error:", err)
		return 1
	}
	fmt.Println("exec:", res.Text())
	req, err := NewRegistry(sandboxed(Config{Containment: ContainmentRequired}))
	if err == nil {
		_ = req.Close(ctx)
	}
	fmt.Println("required:", err)
	return 0
}
