//go:build linux

package bgexec

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
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
	setParallelDefault()
	goleak.VerifyTestMain(m)
}

// runHelper implements the helper commands used by the tests.
func runHelper(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no command")
		return 2
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "echo":
		fmt.Println(strings.Join(rest, " "))
	case "stderr":
		fmt.Fprintln(os.Stderr, strings.Join(rest, " "))
	case "exit":
		n, _ := strconv.Atoi(rest[0])
		fmt.Println("exiting", n)
		return n
	case "sandbox-syscalls":
		return helperSyscalls()
	case "unix-connect":
		return helperUnixConnect(rest[0])
	case "sandbox-host-pooled":
		return helperSandboxHostPooled(rest[0])
	case "sandbox-host":
		return helperSandboxHost(rest[0])
	case "hang":
		// Prints ready, then waits to be killed.
		fmt.Println("ready")
		select {}
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
		fmt.Println("ready")
		select {}
	case "trap-exit0":
		// Exits 0 on SIGTERM, like a server with a graceful shutdown.
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("ready")
		<-c
		return 0
	case "grandchild":
		// Starts a hanging grandchild in the same process group and prints its pid.
		c := exec.Command(os.Args[0], "hang")
		c.Env = os.Environ()
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("grandchild", c.Process.Pid)
		select {}
	case "lines":
		n, _ := strconv.Atoi(rest[0])
		w := bufio.NewWriter(os.Stdout)
		for i := range n {
			fmt.Fprintf(w, "line %d\n", i)
		}
		_ = w.Flush()
	case "cat":
		_, _ = io.Copy(os.Stdout, os.Stdin)
		fmt.Println("[eof]")
	case "read-stdin":
		// Reports whether stdin is at EOF at once.
		b := make([]byte, 1)
		n, err := os.Stdin.Read(b)
		fmt.Printf("read n=%d err=%v\n", n, err)
	case "no-read":
		// Never reads stdin.
		fmt.Println("ready")
		select {}
	case "env":
		for _, k := range rest {
			v, ok := os.LookupEnv(k)
			fmt.Printf("%s=%q %v\n", k, v, ok)
		}
	case "killed-cgroup-host":
		return killedCgroupHost(rest[0])
	case "pieces":
		// Prints rest[0], waits until a line arrives on stdin, prints rest[1].
		fmt.Print(rest[0])
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		fmt.Println(rest[1])
		select {}
	case "listen":
		// Opens a TCP port after reading a line from stdin, then prints it.
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("port", l.Addr().(*net.TCPAddr).Port)
		for {
			c, err := l.Accept()
			if err != nil {
				return 0
			}
			_ = c.Close()
		}
	case "print-block":
		// Writes N bytes of 100-byte text lines from a precomputed 1 MiB
		// block, so the child costs little next to its reader (benchmarks).
		n, _ := strconv.ParseInt(rest[0], 10, 64)
		var sb strings.Builder
		for i := 0; sb.Len() < 1<<20-100; i++ {
			fmt.Fprintf(&sb, "%08d %90s\n", i, "build step ok: compiling package and running checks")
		}
		block := []byte(sb.String())
		for n > 0 {
			k := int(min(n, int64(len(block))))
			if _, err := os.Stdout.Write(block[:k]); err != nil {
				return 1
			}
			n -= int64(k)
		}
	case "stamp-lines":
		// For each line read on stdin, prints CLOCK_MONOTONIC in ns taken
		// just before the write (latency benchmarks).
		in := bufio.NewReader(os.Stdin)
		for {
			if _, err := in.ReadString('\n'); err != nil {
				return 0
			}
			var ts unix.Timespec
			_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
			fmt.Println(ts.Nano())
		}
	case "setpgid-sleep":
		// Leaves the session's process group, reports its pid, then sleeps.
		if err := syscall.Setpgid(0, 0); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("setpgid", os.Getpid())
		time.Sleep(10 * time.Minute)
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
	case "flood-text":
		// Prints rest[0] bytes of very long lines mixed with invalid UTF-8.
		return helperFlood(rest, floodLongBlock(), true)
	case "flood-controls":
		// Prints rest[0] bytes of control characters and escape sequences only.
		return helperFlood(rest, floodControlBlock(), false)
	case "raw-idle":
		// The raw side of BenchmarkIdleSessions, in a process of its own.
		return rawIdleHelper(rest)
	default:
		fmt.Fprintln(os.Stderr, "helper: unknown command", cmd)
		return 2
	}
	return 0
}

// helper returns a shell command line that runs the test binary as a helper.
func helper(args ...string) string {
	q := []string{"env", helperEnv + "=1", shellQuote(os.Args[0])}
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
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
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
	defer os.Remove(k)
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
