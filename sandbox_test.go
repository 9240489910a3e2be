//go:build linux

package bgexec

// The sandbox host, tried as an attacker would: each test first shows the
// attack working on the gateway (so the test can fail), then fails inside
// bubblewrap.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/host/sandbox"
	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/bgexec/bgexec/internal/testhelper"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// sandboxSuiteEnv, set to 1, runs the whole suite with a sandbox
// configured (see sandboxed); .ci/run does a second pass that way.
const sandboxSuiteEnv = "BGEXEC_TEST_SANDBOX"

// inSandboxSuite reports whether this is the sandboxed pass of the suite.
func inSandboxSuite() bool { return os.Getenv(sandboxSuiteEnv) == "1" }

// skipInSandboxSuite skips a test that is about the gateway host itself.
func skipInSandboxSuite(t *testing.T, why string) {
	t.Helper()
	if inSandboxSuite() {
		t.Skip("host-specific under " + sandboxSuiteEnv + "=1: " + why)
	}
}

// sandboxed adds a sandbox to cfg in the sandboxed pass of the suite. The
// test binary (the helpers) and the tests' temporary directories, all
// under the temporary directory, are bound read-write, so the tests see
// what the commands write there.
func sandboxed(cfg Config) Config {
	if !inSandboxSuite() || cfg.Sandbox != nil || cfg.Host != "" {
		return cfg
	}
	// The network is on so the tests that listen on the host (process
	// wait on a port) run; TestSandboxNetwork covers the default.
	cfg.Sandbox = &Sandbox{WritablePaths: suitePaths(), ReadOnlyPaths: toolPaths(), Network: true}
	return cfg
}

// toolPaths are the installations below the hidden $HOME that PATH
// points into (pyenv's python3 on this kind of machine): the parent of
// each such PATH entry, so that shims find what they run.
func toolPaths() []string {
	home, err := os.UserHomeDir()
	if err != nil || home == "/" {
		return nil
	}
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(d) || !sandbox.Within(d, home) || d == home {
			continue
		}
		parent := filepath.Dir(d)
		if parent == home {
			parent = d
		}
		if _, err := os.Stat(parent); err == nil && !slices.Contains(dirs, parent) {
			dirs = append(dirs, parent)
		}
	}
	return dirs
}

func suitePaths() []string {
	paths := []string{os.TempDir()}
	if dir := filepath.Dir(os.Args[0]); !sandbox.Within(dir, os.TempDir()) {
		paths = append(paths, dir)
	}
	return paths
}

// requireBwrap skips without bubblewrap, or fails under CI=true.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bwrap is missing (apt-get install bubblewrap); CI must run the sandbox tests")
		}
		t.Skip("bwrap not installed")
	}
}

// testBinaryDirs are the directories of the test binary and of the helper
// binary, when that is not inside the first.
func testBinaryDirs() []string {
	dirs := []string{filepath.Dir(os.Args[0])}
	if bin := os.Getenv(testhelper.BinEnv); bin != "" && !sandbox.Within(bin, dirs[0]) {
		dirs = append(dirs, filepath.Dir(bin))
	}
	return dirs
}

// newSandboxRegistry returns a registry running commands in sb, with the
// test binary and the helper binary visible so helpers run inside.
func newSandboxRegistry(t *testing.T, cfg Config, sb Sandbox) *Registry {
	t.Helper()
	requireBwrap(t)
	sb.ReadOnlyPaths = append(sb.ReadOnlyPaths, testBinaryDirs()...)
	cfg.Sandbox = &sb
	return newTestRegistry(t, cfg)
}

// newGatewayRegistry is the control: the same commands on this machine.
func newGatewayRegistry(t *testing.T, cfg Config) *Registry {
	t.Helper()
	cfg.Host = "gateway"
	return newTestRegistry(t, cfg)
}

// helperSyscalls is the "sandbox-syscalls" helper: it tries the calls the
// sandbox refuses and prints "name errno" for each ("name ok" when one
// succeeded; ptrace's probe gets ESRCH from the kernel when it reaches it).
func helperSyscalls() int {
	report := func(name string, err error) {
		if err == nil {
			fmt.Println(name, "ok")
			return
		}
		fmt.Println(name, unix.ErrnoName(err.(syscall.Errno)))
	}
	// The calls below act on this thread; on the gateway the mount goes
	// into a private mount namespace of this thread only, never the host's.
	runtime.LockOSThread()
	err := unix.Unshare(unix.CLONE_NEWNS)
	report("unshare", err)
	if err == nil {
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			fmt.Println("make-private", err)
			return 1
		}
	}
	report("mount", unix.Mount("none", "/mnt", "tmpfs", 0, ""))
	report("unshare-user", unix.Unshare(unix.CLONE_NEWUSER))
	// A request about this process, which nothing traces: the kernel
	// answers ESRCH, a filter EPERM. PTRACE_TRACEME would make the shell
	// this process's tracer, and the runtime's next signal (SIGURG) would
	// then stop it, which the shell takes for its end.
	_, _, e := unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_PEEKUSR, uintptr(unix.Getpid()), 0)
	report("ptrace", errnoOrNil(e))
	_, _, e = unix.RawSyscall(unix.SYS_KEYCTL, 0 /* KEYCTL_GET_KEYRING_ID */, ^uintptr(2) /* session */, 0)
	report("keyctl", errnoOrNil(e))
	_, _, e = unix.RawSyscall(unix.SYS_BPF, 0, 0, 0)
	report("bpf", errnoOrNil(e))
	_, _, e = unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
	report("clone3", errnoOrNil(e))
	return 0
}

func errnoOrNil(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func TestSandboxSyscallsAreRefused(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	cmd := &ExecRequest{Command: helper("sandbox-syscalls")}
	gw := mustExec(t, newGatewayRegistry(t, Config{}).Scope("a"), cmd).Text()
	if os.Geteuid() == 0 {
		// The control: as root on the gateway these calls work.
		require.Contains(t, gw, "unshare ok", gw)
		require.Contains(t, gw, "ptrace ESRCH", gw, "ptrace reached the kernel")
	}
	out := mustExec(t, newSandboxRegistry(t, Config{}, Sandbox{}).Scope("a"), cmd).Text()
	for _, want := range []string{"mount EPERM", "unshare EPERM", "unshare-user EPERM", "ptrace EPERM", "keyctl EPERM", "bpf EPERM", "clone3 ENOSYS"} {
		assert.Contains(t, out, want, out)
	}
}

func TestSandboxProcessState(t *testing.T) {
	t.Parallel()
	sc := newSandboxRegistry(t, Config{}, Sandbox{}).Scope("a")
	out := mustExec(t, sc, &ExecRequest{Command: `grep -E '^(NoNewPrivs|CapEff|CapBnd)' /proc/self/status; cat /proc/self/cgroup | grep '^0::'; ls /proc/self/fd | tr '\n' ' '`}).Text()
	assert.Contains(t, out, "NoNewPrivs:\t1", out)
	assert.Contains(t, out, "CapEff:\t0000000000000000", out)
	assert.Contains(t, out, "CapBnd:\t0000000000000000", out)
	assert.Contains(t, out, "0::/\n", out, "the session's cgroup is the namespace root")
	// Only stdio and the descriptor ls opened: the seccomp filter's memfd
	// did not leak into the command.
	assert.True(t, strings.HasSuffix(out, "\n0 1 2 3"), out)
}

func TestSandboxHidesProcesses(t *testing.T) {
	t.Parallel()
	reg := newSandboxRegistry(t, Config{}, Sandbox{})
	a, b := reg.Scope("agent:a"), reg.Scope("agent:b")
	id := startBackground(t, a, &ExecRequest{Command: "echo up; exec sleep 300", Env: map[string]string{"API_TOKEN": "s3cret-a"}})
	awaitLines(t, a, id, "up")
	hostPid := sessionOf(reg, id).Pid()

	// The control: on the gateway, scope B reads A's environment.
	gw := newGatewayRegistry(t, Config{}).Scope("agent:b")
	steal := fmt.Sprintf("cat /proc/%d/environ /proc/%d/task/*/children 2>&1 | tr '\\0' '\\n' | grep -c s3cret-a; ls /proc | grep -c '^[0-9]'", hostPid, hostPid)
	// The session's own pid is bwrap's; a pooled sandbox's bwrap started
	// with an empty environment, so the control reads every process's.
	control := "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -q s3cret-a && echo found"
	require.Contains(t, mustExec(t, gw, &ExecRequest{Command: control}).Text(), "found", "the control must read the token")

	out := mustExec(t, b, &ExecRequest{Command: steal + "; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c s3cret-a; ls /proc | grep '^[0-9]' | tr '\\n' ' '"}).Text()
	lines := strings.Split(out, "\n")
	require.GreaterOrEqual(t, len(lines), 4, out)
	assert.Equal(t, "0", lines[len(lines)-4], "A's host pid shows nothing: %s", out)
	assert.Equal(t, "0", lines[len(lines)-2], "no process of A is visible: %s", out)
	// Only the sandbox's own processes: bwrap's init, the shell, ls, grep, tr.
	n := len(strings.Fields(lines[len(lines)-1]))
	assert.LessOrEqual(t, n, 8, "processes visible: %s", out)
	assert.NotContains(t, " "+lines[len(lines)-1], " "+strconv.Itoa(os.Getpid())+" ")
}

// helperUnixConnect is the "unix-connect" helper: it connects to a Unix
// socket and prints the first line the server sends.
func helperUnixConnect(path string) int {
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Println("connect:", err)
		return 1
	}
	defer c.Close()
	buf := make([]byte, 64)
	n, _ := c.Read(buf)
	fmt.Print(string(buf[:n]))
	return 0
}

// TestSandboxHostSocketsUnderRun connects to a service socket under /run,
// as one would to a container runtime's: a read-only bind would not stop
// it, so /run is hidden.
func TestSandboxHostSocketsUnderRun(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	path := filepath.Join("/run", "bgexec-"+newTag(t)+".sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Skip("cannot listen under /run:", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("service answered\n"))
			_ = c.Close()
		}
	}()
	req := &ExecRequest{Command: helper("unix-connect", path)}
	require.Contains(t, mustExec(t, newGatewayRegistry(t, Config{}).Scope("a"), req).Text(), "service answered", "the control")
	exposed := mustExec(t, newSandboxRegistry(t, Config{}, Sandbox{HidePaths: []string{}}).Scope("a"), req).Text()
	require.Contains(t, exposed, "service answered", "the attack: a read-only /run still lets a command connect")
	res := mustExec(t, newSandboxRegistry(t, Config{}, Sandbox{}).Scope("a"), req)
	assert.NotContains(t, res.Text(), "service answered", res.Text())
	assert.Contains(t, res.Text(), "no such file or directory", res.Text())
}

func TestSandboxWritesOnlyWhereAllowed(t *testing.T) {
	t.Parallel()
	work, extra, ro := t.TempDir(), t.TempDir(), t.TempDir()
	reg := newSandboxRegistry(t, Config{Workdir: work}, Sandbox{WritablePaths: []string{extra}, ReadOnlyPaths: []string{ro}})
	sc := reg.Scope("a")
	res := mustExec(t, sc, &ExecRequest{Command: fmt.Sprintf("echo w > w.txt && echo x > %s/x.txt && echo t > /tmp/t.txt && echo ok", extra)})
	require.Contains(t, res.Text(), "ok", res.Text())
	assert.FileExists(t, filepath.Join(work, "w.txt"))
	assert.FileExists(t, filepath.Join(extra, "x.txt"))

	for _, target := range []string{"/etc/bgexec-attack", filepath.Join(ro, "r.txt"), "/usr/bgexec-attack", "/sys/fs/cgroup/bgexec-attack"} {
		res := mustExec(t, sc, &ExecRequest{Command: "echo pwned > " + target})
		assert.Contains(t, res.Text(), "Read-only file system", target, res.Text())
		_, err := os.Stat(target)
		assert.True(t, os.IsNotExist(err), "%s was written on the host", target)
	}
	// $HOME is hidden and writable, but nothing reaches the host's.
	if home := sandbox.UserHome(); home != "" && home != "/" {
		res := mustExec(t, sc, &ExecRequest{Command: `ls -A "$HOME" | wc -l; echo h > "$HOME/bgexec-sandbox-probe" && echo wrote`})
		assert.Contains(t, res.Text(), "0\nwrote", res.Text())
		assert.NoFileExists(t, filepath.Join(home, "bgexec-sandbox-probe"))
	}
}

func TestSandboxReadOnlyHintOncePerSession(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	sc := newSandboxRegistry(t, Config{Workdir: work}, Sandbox{}).Scope("a")
	res := mustExec(t, sc, &ExecRequest{Command: "touch /etc/nope"})
	assert.Contains(t, res.Text(), "Read-only file system")
	assert.Contains(t, res.Text(), "Note: this command runs in a sandbox where the file system is read-only except "+work, res.Text())

	// The hint comes with the first text that shows the error: the start's
	// own result when the error came within it (its "Output so far"),
	// else a poll.
	start := mustExec(t, sc, &ExecRequest{Command: "touch /etc/a; echo one; read x; touch /etc/b; echo two; read y", Stdin: "pipe", Background: true})
	require.Equal(t, StatusRunning, start.Details.Status, start.Text())
	id := start.Details.SessionID
	// stdout and stderr are separate pipes: the error may come after the
	// line, in a later poll.
	pollUntil := func(want string) string {
		var all string
		for !strings.Contains(all, want) || !strings.Contains(all, "Read-only file system") {
			res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(20000))})
			require.Equal(t, StatusRunning, res.Details.Status, all+res.Text())
			all += res.Text()
		}
		return all
	}
	first := start.Text() + pollUntil("one")
	assert.Equal(t, 1, strings.Count(first, "Note: this command runs in a sandbox"), first)
	mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "\n"})
	second := pollUntil("two")
	assert.Contains(t, second, "Read-only file system", second)
	assert.NotContains(t, second, "Note: this command runs in a sandbox", "the hint comes once per session")
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
}

func TestSandboxNetwork(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello from the host\n"))
			_ = c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	connect := &ExecRequest{Command: fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && head -n1 <&3`, port)}
	cfg := Config{Shell: bash}

	on := mustExec(t, newSandboxRegistry(t, cfg, Sandbox{Network: true}).Scope("a"), connect)
	assert.Contains(t, on.Text(), "hello from the host", "the control: with Network the host is reachable")
	off := mustExec(t, newSandboxRegistry(t, cfg, Sandbox{}).Scope("a"), connect)
	assert.NotContains(t, off.Text(), "hello from the host", off.Text())
	assert.Contains(t, off.Text(), "Connection refused", off.Text())
}

// TestSandboxCgroupEscape moves the shell into the cgroup root and others
// (which works on the gateway as root), then kills the session: nothing of
// it may survive.
func TestSandboxCgroupEscape(t *testing.T) {
	t.Parallel()
	root, err := contain.Cgroup2Dir()
	if err != nil {
		t.Skip("no cgroup v2 here:", err)
	}
	mount := root
	for filepath.Dir(mount) != mount {
		if _, err := os.Stat(filepath.Join(filepath.Dir(mount), "cgroup.procs")); err != nil {
			break
		}
		mount = filepath.Dir(mount)
	}
	escape := fmt.Sprintf(`for f in %s/cgroup.procs /sys/fs/cgroup/*/cgroup.procs /sys/fs/cgroup/*/tasks; do echo $$ > $f && echo "moved to $f"; done 2>&1; grep '^0::' /proc/self/cgroup; echo done; exec sleep 300`, mount)
	tag := newTag(t)
	sc := newSandboxRegistry(t, Config{KillGrace: 500 * time.Millisecond}, Sandbox{}).Scope("a")
	id := startBackground(t, sc, &ExecRequest{Command: escape, Env: map[string]string{tagEnv: tag}})
	awaitLines(t, sc, id, "done")
	log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text()
	assert.NotContains(t, log, "moved to", log)
	assert.Contains(t, log, "Read-only file system", log)
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	waitExit(t, sc, id)
	awaitNoTagged(t, tag)
}

// awaitLines waits until the session's log holds every text.
func awaitLines(t *testing.T, sc *Scope, id string, texts ...string) {
	t.Helper()
	require.NoError(t, awaitTexts(testCtx(t), sc, id, texts...))
}

// awaitTexts reads the whole log, then blocks in poll until new output
// arrives (event-driven), until every text is there or ctx ends.
func awaitTexts(ctx context.Context, sc *Scope, id string, texts ...string) error {
	for {
		res, err := sc.Process(ctx, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0)})
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(texts, func(s string) bool { return !strings.Contains(res.Text(), s) }) {
			return nil
		}
		poll, err := sc.Process(ctx, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(2000))})
		if err != nil {
			return err
		}
		if poll.Details.Status != StatusRunning {
			res, _ = sc.Process(ctx, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0)})
			if !slices.ContainsFunc(texts, func(s string) bool { return !strings.Contains(res.Text(), s) }) {
				return nil
			}
			return fmt.Errorf("session %s ended before printing %q: %s", id, texts, res.Text())
		}
		if ctx.Err() != nil {
			return fmt.Errorf("session %s: waiting for %q: %w", id, texts, ctx.Err())
		}
	}
}

// escapers leaves a setsid'd, double-forked process and a plain
// background one, then blocks.
const escapers = `(setsid sh -c 'sleep 300 & echo escaper' &); sleep 301 & echo up; sleep 302`

func TestSandboxNothingOutlivesTheSession(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"kill", "timeout", "close", "pty-kill"} {
		t.Run("after "+end, func(t *testing.T) {
			t.Parallel()
			requireBwrap(t)
			tag := newTag(t)
			reg, err := NewRegistry(Config{YieldMs: MaxYieldMs, KillGrace: 300 * time.Millisecond, Sandbox: &Sandbox{}})
			require.NoError(t, err)
			closed := false
			t.Cleanup(func() {
				if !closed {
					_ = reg.Close(context.Background())
				}
			})
			sc := reg.Scope("a")
			req := &ExecRequest{Command: escapers, Env: map[string]string{tagEnv: tag}, PTY: end == "pty-kill"}
			if end == "timeout" {
				req.Timeout = ptr(10.0) // long enough for both lines under load
			}
			id := startBackground(t, sc, req)
			awaitLines(t, sc, id, "up", "escaper")
			awaitTaggedAtLeast(t, tag, 1)
			switch end {
			case "kill", "pty-kill":
				mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
				waitExit(t, sc, id)
			case "timeout":
				res := waitExit(t, sc, id)
				assert.Equal(t, ExitReasonTimeout, res.Details.ExitReason, res.Text())
			case "close":
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				require.NoError(t, reg.Close(ctx))
				closed = true
			}
			awaitNoTagged(t, tag)
		})
	}
}

// helperSandboxHost is the "sandbox-host" helper: a registry with a
// sandboxed session that left escapers; prints ready and blocks until it
// is killed.
func helperSandboxHost(tag string) int {
	reg, err := NewRegistry(Config{YieldMs: MaxYieldMs, Sandbox: &Sandbox{}})
	if err != nil {
		fmt.Println("registry:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc := reg.Scope("host")
	res, err := sc.Exec(ctx, &ExecRequest{Command: escapers, Env: map[string]string{tagEnv: tag}, Background: true})
	if err != nil || res.Details.Status != StatusRunning {
		fmt.Println("exec:", err, res)
		return 1
	}
	if err := awaitTexts(ctx, sc, res.Details.SessionID, "up", "escaper"); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("ready")
	<-ctx.Done()
	return 1
}

func TestSandboxDiesWithItsHost(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	tag := newTag(t)
	cmd := exec.Command(os.Args[0], "sandbox-host", tag)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	buf := make([]byte, 256)
	n, _ := out.Read(buf) // the helper prints one line when ready, or why not
	require.Equal(t, "ready\n", string(buf[:n]))
	awaitTaggedAtLeast(t, tag, 1)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait() // killed: the status is known
	awaitNoTagged(t, tag)
}

func TestSandboxKillKeepsGraceAndSignal(t *testing.T) {
	t.Parallel()
	sc := newSandboxRegistry(t, Config{KillGrace: 10 * time.Second}, Sandbox{}).Scope("a")
	id := startBackground(t, sc, &ExecRequest{Command: `trap 'echo cleanup ran; exit 0' TERM; echo up; sleep 300 & wait`})
	awaitLines(t, sc, id, "up")
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	res := waitExit(t, sc, id)
	log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text()
	assert.Contains(t, log, "cleanup ran", "the trap ran within the grace period")
	assert.Equal(t, ExitReasonKilled, res.Details.ExitReason, res.Text())

	id = startBackground(t, sc, &ExecRequest{Command: "echo up; exec sleep 300"})
	awaitLines(t, sc, id, "up")
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	res = waitExit(t, sc, id)
	assert.Equal(t, "SIGTERM", res.Details.ExitSignal, res.Text())
}

func TestSandboxFeatures(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	sc := newSandboxRegistry(t, Config{Workdir: work}, Sandbox{}).Scope("a")

	t.Run("a long command arrives on fd 3", func(t *testing.T) {
		long := "x=" + strings.Repeat("a", maxArgCommand) + "; echo ${#x}"
		res := mustExec(t, sc, &ExecRequest{Command: long})
		assert.Contains(t, res.Text(), strconv.Itoa(maxArgCommand), res.Text())
	})
	t.Run("exit codes and cwd pass through", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "pwd; exit 3"})
		assert.Contains(t, res.Text(), work)
		require.NotNil(t, res.Details.ExitCode)
		assert.Equal(t, 3, *res.Details.ExitCode)
	})
	t.Run("a PTY session is a terminal and takes keys", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: `test -t 0 && echo tty-ok; stty size; read line; echo "got $line"`, PTY: true})
		awaitLines(t, sc, id, "tty-ok")
		mustProcess(t, sc, &ProcessRequest{Action: "send-keys", SessionID: id, Literal: "hello", Keys: []string{"Enter"}})
		res := waitExit(t, sc, id)
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text()
		assert.Contains(t, log, "30 120", log)
		assert.Contains(t, log, "got hello", log+res.Text())
	})
	t.Run("stdin pipe", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: "cat", Stdin: "pipe"})
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "piped\n", EOF: true})
		waitExit(t, sc, id)
		assert.Contains(t, mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text(), "piped")
	})
	t.Run("HOME is writable", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: `touch "$HOME/.probe" && echo home-ok`})
		assert.Contains(t, res.Text(), "home-ok", res.Text())
	})
	t.Run("the env rules still apply", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "true", Env: map[string]string{"LD_PRELOAD": "/x.so"}})
		assert.Contains(t, res.Text(), "Security Violation")
		res = mustExec(t, sc, &ExecRequest{Command: `echo "$OPENCLAW_SHELL $OPENCLAW_CLI"`})
		assert.Contains(t, res.Text(), "exec 1")
	})
	t.Run("workdir / is refused", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "true", Workdir: "/"})
		assert.True(t, res.IsError)
		assert.Contains(t, res.Text(), `the workdir cannot be "/"`)
	})
}

func TestSandboxHostAndElevated(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	_, err := NewRegistry(Config{Host: "sandbox"})
	assert.ErrorContains(t, err, "needs Config.Sandbox")
	_, err = NewRegistry(Config{Host: "gateway", Sandbox: &Sandbox{}})
	assert.ErrorContains(t, err, "contradicts Config.Sandbox")
	_, err = NewRegistry(Config{Sandbox: &Sandbox{Bwrap: "/nonexistent/bwrap"}})
	assert.ErrorContains(t, err, "bubblewrap not found")
	_, err = NewRegistry(Config{Sandbox: &Sandbox{WritablePaths: []string{"relative"}}})
	assert.ErrorContains(t, err, "not an absolute path")

	// A fake bwrap that cannot create namespaces: the error names the check.
	fake := filepath.Join(t.TempDir(), "bwrap")
	proctest.WriteExecutable(t, fake, []byte("#!/bin/sh\ncase \" $* \" in *' --unshare-user '*) echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1;; esac\nexec bwrap \"$@\"\n"), 0o755)
	_, err = NewRegistry(Config{Sandbox: &Sandbox{Bwrap: fake}})
	assert.ErrorContains(t, err, "cannot create a user namespace here")
	assert.ErrorContains(t, err, "setting up uid map")

	hostPid := strconv.Itoa(os.Getpid())
	seeHost := &ExecRequest{Command: "test -d /proc/" + hostPid + " && echo on-gateway || echo in-sandbox", Elevated: true}
	reg := newSandboxRegistry(t, Config{Elevation: ElevationPolicy{Enabled: true, Allow: func(s string) bool { return s == "admin" }}}, Sandbox{})
	assert.Contains(t, mustExec(t, reg.Scope("admin"), seeHost).Text(), "on-gateway")
	refused := mustExec(t, reg.Scope("agent:x"), seeHost)
	assert.Equal(t, "elevated is not available right now (runtime=sandbox).\nFailing gates: allowFrom (tools.elevated.allowFrom)\nContext: session=agent:x", refused.Text())
	plain := *seeHost
	plain.Elevated = false
	assert.Contains(t, mustExec(t, reg.Scope("admin"), &plain).Text(), "in-sandbox")

	// Per-call host: the configured value ("auto" here) or what it resolves to.
	res := mustExec(t, reg.Scope("admin"), &ExecRequest{Command: "test -d /proc/" + hostPid + " || echo in-sandbox", Host: "sandbox"})
	assert.Equal(t, "in-sandbox", res.Text())
	res = mustExec(t, reg.Scope("admin"), &ExecRequest{Command: "true", Host: "gateway"})
	assert.Equal(t, "exec host not allowed (requested gateway; configure tools.exec.host=gateway to allow).", res.Text())
	explicit := newTestRegistry(t, Config{Host: "sandbox", Sandbox: &Sandbox{}})
	res = mustExec(t, explicit.Scope("a"), &ExecRequest{Command: "test -d /proc/" + hostPid + " || echo in-sandbox", Host: "sandbox"})
	assert.Contains(t, res.Text(), "in-sandbox")
	res = mustExec(t, explicit.Scope("a"), &ExecRequest{Command: "true", Host: "gateway"})
	assert.Contains(t, res.Text(), "exec host not allowed (requested gateway")
}

func TestSandboxNeverFallsBackToTheGateway(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	onGateway := &ExecRequest{Command: "test -d /proc/" + strconv.Itoa(os.Getpid()) + " && echo on-gateway"}

	gone := t.TempDir()
	reg := newSandboxRegistry(t, Config{}, Sandbox{WritablePaths: []string{gone}})
	require.NoError(t, os.Remove(gone)) // a bind source vanished
	res := mustExec(t, reg.Scope("a"), onGateway)
	assert.NotContains(t, res.Text(), "on-gateway")
	assert.Contains(t, res.Text(), "no longer exists", res.Text())
	assert.Equal(t, StatusFailed, res.Details.Status, res.Text())

	// bwrap itself vanished: a spawn error, not a run on the gateway.
	real, err := exec.LookPath("bwrap")
	require.NoError(t, err)
	b, err := os.ReadFile(real)
	require.NoError(t, err)
	copied := filepath.Join(t.TempDir(), "bwrap")
	proctest.WriteExecutable(t, copied, b, 0o755)
	reg = newSandboxRegistry(t, Config{}, Sandbox{Bwrap: copied})
	disablePool(reg) // a sandbox started ahead would still serve: this is about a cold start
	require.NoError(t, os.Remove(copied))
	res = mustExec(t, reg.Scope("a"), onGateway)
	assert.NotContains(t, res.Text(), "on-gateway")
	assert.Equal(t, ExitReasonSpawnError, res.Details.ExitReason, res.Text())
}

func TestSandboxToolDescription(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	reg := newSandboxRegistry(t, Config{Workdir: work}, Sandbox{WritablePaths: []string{work}})
	d := reg.ToolDefinitions()[0].Description
	assert.True(t, strings.HasPrefix(d, "Run a shell command in a sandbox"), d)
	assert.Contains(t, d, "no network access")
	assert.Contains(t, d, "read-only except the working directory, "+work)
	gw := newGatewayRegistry(t, Config{}).ToolDefinitions()[0].Description
	assert.Equal(t, ToolDefinitions()[0].Description, gw)
}

// suiteHost is the host the suite's registries run commands on.
func suiteHost() string {
	if inSandboxSuite() {
		return "sandbox"
	}
	return "gateway"
}

func TestSandboxMinimalRootAndHidePaths(t *testing.T) {
	t.Parallel()
	shown, hidden := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(shown, "f"), []byte("visible\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(hidden, "secret"), []byte("s3cret\n"), 0o644))
	work := t.TempDir()
	sc := newSandboxRegistry(t, Config{Workdir: work}, Sandbox{MinimalRoot: true, ReadOnlyPaths: []string{shown}}).Scope("a")
	res := mustExec(t, sc, &ExecRequest{Command: "ls /var >/dev/null 2>&1 && echo var-seen || echo no-var; cat " + shown + "/f; test -x /bin/sh && echo sh-ok; touch " + shown + "/g 2>&1"})
	assert.Contains(t, res.Text(), "no-var", "only the system directories are bound")
	// touch's complaint goes to stdout as well: stdout and stderr are two
	// pipes, and the order between them is not kept.
	assert.Contains(t, res.Text(), "visible\nsh-ok\ntouch", res.Text())
	assert.Contains(t, res.Text(), "Read-only file system")

	sc = newSandboxRegistry(t, Config{Workdir: work}, Sandbox{HidePaths: []string{hidden}}).Scope("a")
	res = mustExec(t, sc, &ExecRequest{Command: "ls -A " + hidden + " | wc -l; cat " + hidden + "/secret 2>&1"})
	assert.NotContains(t, res.Text(), "s3cret", res.Text())
	assert.Contains(t, res.Text(), "0\n", res.Text())
}

// A root host's sandbox runs as the host's uid 0, which is all the kernel
// checks before a write to a kernel setting: kernel.core_pattern names a
// program the kernel runs as root at the next crash, and sysrq-trigger
// reboots the machine. Inside, those files are read-only.
func TestSandboxKernelSettingsAreReadOnly(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the attack needs a root host; an unprivileged host cannot write these files anyway")
	}
	const probe = `for f in /proc/sys/kernel/core_pattern /proc/sys/kernel/panic /proc/sys/vm/overcommit_memory /proc/sysrq-trigger; do if [ -w "$f" ]; then echo "$f writable"; else echo "$f read-only"; fi; done`
	// The control: on this machine, as root, the settings are writable
	// (sysrq-trigger may not be, where the machine is itself a container).
	gw := mustExec(t, newGatewayRegistry(t, Config{}).Scope("a"), &ExecRequest{Command: probe})
	require.Contains(t, gw.Text(), "/proc/sys/kernel/core_pattern writable", gw.Text())

	sc := newSandboxRegistry(t, Config{}, Sandbox{}).Scope("a")
	res := mustExec(t, sc, &ExecRequest{Command: probe})
	for _, f := range []string{"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/panic", "/proc/sys/vm/overcommit_memory", "/proc/sysrq-trigger"} {
		assert.Contains(t, res.Text(), f+" read-only", res.Text())
	}
	// The write itself (the setting's own value, so a failure of the
	// defence changes nothing) is refused.
	before, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	require.NoError(t, err)
	res = mustExec(t, sc, &ExecRequest{Command: `v=$(cat /proc/sys/kernel/core_pattern) && printf '%s\n' "$v" > /proc/sys/kernel/core_pattern 2>&1 && echo wrote`})
	assert.Contains(t, res.Text(), "Read-only file system", res.Text())
	assert.NotContains(t, res.Text(), "wrote", res.Text())
	after, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	// The sandbox's own network settings are still readable.
	res = mustExec(t, sc, &ExecRequest{Command: "cat /proc/sys/net/ipv4/ip_forward"})
	assert.Regexp(t, `^[01]$`, res.Text())
}
