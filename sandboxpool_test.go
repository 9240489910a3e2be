//go:build linux

package bgexec

// The sandbox pool (package sandbox's Pool and Warm, its Host's pool): a
// call that takes a sandbox started ahead of time gets what a cold one
// would have given it, and nothing of another session; a burst larger
// than the pool still runs; Close leaves no sandbox behind.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// awaitPool waits, with a deadline, until reg's sandbox pool is full.
func awaitPool(t *testing.T, reg *Registry) {
	t.Helper()
	require.NotNil(t, reg.hosts.sbx, "the registry has a sandbox host")
	require.Positive(t, reg.hosts.sbx.PoolSize(), "the sandbox host has a pool")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, reg.hosts.sbx.AwaitPool(ctx), "the pool fills")
}

// settlePool waits until reg's sandbox pool, if it has one, is full, so
// the descriptors and processes of this process stay put meanwhile.
func settlePool(t *testing.T, reg *Registry) {
	t.Helper()
	if reg.hosts.sbx != nil && reg.hosts.sbx.PoolSize() > 0 {
		awaitPool(t, reg)
	}
}

// newPooledRegistry is newSandboxRegistry with its pool full.
func newPooledRegistry(t *testing.T, cfg Config, sb Sandbox) *Registry {
	t.Helper()
	reg := newSandboxRegistry(t, cfg, sb)
	awaitPool(t, reg)
	return reg
}

// newColdRegistry is newSandboxRegistry without a pool: every sandbox
// starts cold, as before there was one.
func newColdRegistry(t *testing.T, cfg Config, sb Sandbox) *Registry {
	t.Helper()
	reg := newSandboxRegistry(t, cfg, sb)
	disablePool(reg)
	return reg
}

// disablePool closes reg's sandbox pool and makes its sandbox host start
// every sandbox cold.
func disablePool(reg *Registry) {
	reg.hosts.sbx.Close() // a closed pool serves nothing: every call starts cold
}

// pooledRun runs req on reg with the pool full first, and checks that it
// took a pooled sandbox.
func pooledRun(t *testing.T, reg *Registry, sc *Scope, req *ExecRequest) *Result {
	t.Helper()
	awaitPool(t, reg)
	before := reg.hosts.sbx.PoolTaken()
	res := mustExec(t, sc, req)
	assert.Equal(t, before+1, reg.hosts.sbx.PoolTaken(), "the call took a pooled sandbox")
	return res
}

// exitCode is res's exit code, -1 for none.
func exitCode(res *Result) int {
	if res.Details.ExitCode == nil {
		return -1
	}
	return *res.Details.ExitCode
}

func TestSandboxPoolSameAsCold(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	cfg := Config{Workdir: work}
	pooled := newPooledRegistry(t, cfg, Sandbox{})
	cold := newColdRegistry(t, cfg, Sandbox{})
	cases := []struct {
		name string
		req  ExecRequest
	}{
		{"an exit code", ExecRequest{Command: "echo out; exit 7"}},
		{"stderr", ExecRequest{Command: "echo err >&2; exit 3"}},
		{"the environment, per-call variables included", ExecRequest{Command: "env | LC_ALL=C sort", Env: map[string]string{"POOL_VAR": "it's \"quoted\"\n$(not run) `nor this`", "EMPTY": ""}}},
		{"the working directory and identity", ExecRequest{Command: "pwd; id -u; id -g; hostname; umask; echo $$"}},
		{"stdin closed", ExecRequest{Command: "cat; echo rc=$?; readlink /proc/self/fd/0; [ -t 0 ] || echo not-a-tty"}},
		{"the open descriptors", ExecRequest{Command: "ls /proc/self/fd | LC_ALL=C sort | tr '\\n' ' '"}},
		// The shell counts with a glob of its own: a pipeline's processes
		// start one after the other, so ls | grep -c counted 3 or 4
		// under load, whichever side it ran on.
		{"the namespaces' processes", ExecRequest{Command: "set -- /proc/[0-9]*; echo $#"}},
		{"a signal death", ExecRequest{Command: "kill -TERM $$"}},
		{"a command with quotes and newlines", ExecRequest{Command: "printf '%s|' 'a b' \"c'd\" '\n'; echo"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r1, r2 := c.req, c.req
			want := mustExec(t, cold.Scope("a"), &r1)
			got := pooledRun(t, pooled, pooled.Scope("a"), &r2)
			assert.Equal(t, want.Details.Status, got.Details.Status, "status\ncold:\n%s\npooled:\n%s", want.Text(), got.Text())
			assert.Equal(t, exitCode(want), exitCode(got), "exit code\ncold:\n%s\npooled:\n%s", want.Text(), got.Text())
			assert.Equal(t, want.Details.Aggregated, got.Details.Aggregated, "output")
		})
	}
	t.Run("stdin written by the session", func(t *testing.T) {
		run := func(reg *Registry, pooledRun bool) string {
			sc := reg.Scope("a")
			if pooledRun {
				awaitPool(t, reg)
			}
			before := reg.hosts.sbx.PoolTaken()
			id := startBackground(t, sc, &ExecRequest{Command: "tr a-z A-Z; echo rc=$?", Stdin: "pipe"})
			if pooledRun {
				assert.Equal(t, before+1, reg.hosts.sbx.PoolTaken(), "the call took a pooled sandbox")
			}
			w := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "hello pool\n", EOF: true})
			require.False(t, w.IsError, w.Text())
			waitExit(t, sc, id)
			return mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text()
		}
		want, got := run(cold, false), run(pooled, true)
		assert.Contains(t, want, "HELLO POOL")
		assert.Equal(t, want, got)
	})
}

func TestSandboxPoolKeepsShellState(t *testing.T) {
	t.Parallel()
	reg := newPooledRegistry(t, Config{Workdir: t.TempDir(), KeepShellState: true}, Sandbox{})
	sc := reg.Scope("a")
	pooledRun(t, reg, sc, &ExecRequest{Command: "export POOL_KEPT=yes"})
	res := pooledRun(t, reg, sc, &ExecRequest{Command: "echo kept=$POOL_KEPT"})
	assert.Contains(t, res.Details.Aggregated, "kept=yes", res.Text())
}

// TestSandboxPoolSessionsAreIsolated attacks the pool: a session leaves
// a file in its /tmp, a process behind and a secret in its environment,
// and looks for the spare sandboxes waiting in the pool; the next pooled
// session looks for all of that.
func TestSandboxPoolSessionsAreIsolated(t *testing.T) {
	t.Parallel()
	reg := newPooledRegistry(t, Config{Workdir: t.TempDir()}, Sandbox{})
	sc := reg.Scope("a")
	tag := newTag(t)
	// The first session: a file in /tmp, a process that stays, a secret.
	first := startBackground(t, sc, &ExecRequest{
		// A shell whose command line names the sleeper (dash has no exec -a).
		Command: "echo secret > /tmp/pool-" + tag + "; sh -c 'sleep 600; : pool-sleeper-" + tag + "' & echo \"started $(ls /proc | grep -c '^[0-9]')\"; wait",
		Env:     map[string]string{"POOL_SECRET": tag},
	})
	waitFor(t, sc, first, `started [0-9]+`)
	awaitPool(t, reg)
	for _, cmd := range []string{
		"cat /tmp/pool-" + tag + " 2>/dev/null; ls -A /tmp",
		"ps -eo pid,args 2>/dev/null || ls /proc",
		"grep -l 'pool-[s]leeper-" + tag + "' /proc/[0-9]*/cmdline 2>/dev/null; echo searched",
		"env",
	} {
		got := pooledRun(t, reg, sc, &ExecRequest{Command: cmd})
		out := got.Details.Aggregated
		assert.NotContains(t, out, "secret", cmd)
		assert.NotContains(t, out, "pool-"+tag, cmd)
		assert.NotContains(t, out, "pool-sleeper", cmd)
		assert.NotContains(t, out, "POOL_SECRET", cmd)
	}
	// Only the sandbox's own processes are in sight (its init, which
	// bwrap's command line names, the shell, ls, grep): neither the
	// first session's nor the spare sandboxes' stubs waiting in the pool.
	got := pooledRun(t, reg, sc, &ExecRequest{Command: "for p in /proc/[0-9]*; do [ -e $p/cmdline ] && echo ${p#/proc/}; done | grep -vc '^1$'"})
	n, err := strconv.Atoi(strings.TrimSpace(strings.Split(got.Details.Aggregated, "\n")[0]))
	require.NoError(t, err, got.Text())
	assert.LessOrEqual(t, n, 3, "processes other than the sandbox's init: %s", got.Text())
	// And the other way: the second session cannot reach the first's
	// processes to signal them.
	got = pooledRun(t, reg, sc, &ExecRequest{Command: "pkill -f 'pool-[s]leeper-" + tag + "'; echo rc=$?"})
	assert.Contains(t, got.Details.Aggregated, "rc=1", "no process matched: %s", got.Text())
	kill := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: first})
	require.False(t, kill.IsError, kill.Text())
}

// TestSandboxPoolBurst runs three times as many sandboxed commands at
// once as the pool holds: the pooled ones and the cold ones all run, each
// in a sandbox of its own.
func TestSandboxPoolBurst(t *testing.T) {
	t.Parallel()
	reg := newPooledRegistry(t, Config{Workdir: t.TempDir()}, Sandbox{})
	n := 3 * reg.hosts.sbx.PoolReady()
	require.Positive(t, n)
	before := reg.hosts.sbx.PoolTaken()
	results := make([]*Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := reg.Scope("burst").Exec(testCtx(t), &ExecRequest{Command: fmt.Sprintf("echo %d > /tmp/mine-%d; echo files=$(ls /tmp | grep -c '^mine-'); cat /tmp/mine-*; exit %d", i, i, i%5)})
			if err == nil {
				results[i] = res
			}
		}()
	}
	wg.Wait()
	for i, res := range results {
		require.NotNil(t, res, "call %d", i)
		assert.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		assert.Equal(t, i%5, exitCode(res), res.Text())
		lines := strings.Split(res.Details.Aggregated, "\n")
		require.GreaterOrEqual(t, len(lines), 2, res.Text())
		assert.Equal(t, []string{"files=1", strconv.Itoa(i)}, lines[:2], "a /tmp of its own: %s", res.Text())
	}
	taken := reg.hosts.sbx.PoolTaken() - before
	assert.Positive(t, taken, "some calls took pooled sandboxes")
	assert.Less(t, taken, n, "the rest started cold")
}

// TestSandboxPoolWorkdirAndTerminalStartCold: a call the warm sandboxes
// cannot serve starts cold and gets what it asked for.
func TestSandboxPoolWorkdirAndTerminalStartCold(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	sub := filepath.Join(work, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	reg := newPooledRegistry(t, Config{Workdir: work}, Sandbox{})
	sc := reg.Scope("a")
	before := reg.hosts.sbx.PoolTaken()
	res := mustExec(t, sc, &ExecRequest{Command: "pwd", Workdir: sub})
	assert.Equal(t, sub, strings.TrimSpace(res.Details.Aggregated), res.Text())
	res = mustExec(t, sc, &ExecRequest{Command: "[ -t 0 ] && echo tty", PTY: true})
	assert.Contains(t, res.Details.Aggregated, "tty", res.Text())
	long := "true " + strings.Repeat("x", maxArgCommand) + "; echo long"
	res = mustExec(t, sc, &ExecRequest{Command: long})
	assert.Contains(t, res.Details.Aggregated, "long", res.Text())
	assert.Equal(t, before, reg.hosts.sbx.PoolTaken(), "none took a pooled sandbox")
}

// TestSandboxPoolReplacedDirectoryIsDropped: a warm sandbox binds the
// default workdir it found when it started; once another directory stands
// at that path, it is dropped and the call runs in the new directory.
func TestSandboxPoolReplacedDirectoryIsDropped(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	work := filepath.Join(base, "work")
	require.NoError(t, os.Mkdir(work, 0o755))
	reg := newPooledRegistry(t, Config{Workdir: work}, Sandbox{})
	require.NoError(t, os.Rename(work, work+".old"))
	require.NoError(t, os.Mkdir(work, 0o755))
	before := reg.hosts.sbx.PoolTaken()
	res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "touch here && echo ok"})
	require.Contains(t, res.Details.Aggregated, "ok", res.Text())
	assert.FileExists(t, filepath.Join(work, "here"), "the command ran in the directory at the path now")
	assert.NoFileExists(t, filepath.Join(work+".old", "here"))
	assert.Equal(t, before, reg.hosts.sbx.PoolTaken(), "the stale sandboxes were dropped, not used")
}

// sandboxTree lists pid and every descendant, with their start times.
func sandboxTree(pid int) map[int]string {
	out := map[int]string{}
	var walk func(int)
	walk = func(p int) {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			return
		}
		out[p] = startTime(st)
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, c := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(c); err == nil {
					walk(n)
				}
			}
		}
	}
	walk(pid)
	return out
}

// procState is field 3 of a /proc/<pid>/stat line.
func procState(stat []byte) string {
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// startTime is field 22 of a /proc/<pid>/stat line.
func startTime(stat []byte) string {
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

func TestSandboxPoolCloseLeavesNoSandbox(t *testing.T) {
	t.Parallel()
	reg := newSandboxRegistry(t, Config{Workdir: t.TempDir()}, Sandbox{})
	awaitPool(t, reg)
	procs := map[int]string{}
	for _, pid := range reg.hosts.sbx.PoolPids() {
		for p, st := range sandboxTree(pid) {
			procs[p] = st
		}
	}
	// bwrap, its init in the namespace and the stub, for each.
	require.GreaterOrEqual(t, len(procs), 3*reg.hosts.sbx.PoolReady(), "%v", procs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, reg.Close(ctx))
	// bwrap hands its command's status on as soon as its init in the
	// namespace reports it, without reaping that init: the init, dead,
	// is reparented to the host's init, which reaps it (as for a cold
	// sandbox). Dead is what Close promises; nothing may still run.
	for p, st := range procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil || st != startTime(b) {
			continue // gone, and its pid perhaps reused
		}
		assert.Equal(t, "Z", procState(b), "process %d of a pooled sandbox outlived Close: %s", p, b)
	}
}

// TestSandboxPoolContainment: a pooled session is contained as a cold
// one is. What it leaves behind (a setsid'd double fork, a background
// job) ends with it however it ends; a kill keeps the grace period and
// reports the signal; a write to any cgroup.procs is refused.
func TestSandboxPoolContainment(t *testing.T) {
	requireBwrap(t)
	t.Parallel()
	for _, end := range []string{"kill", "timeout", "close"} {
		t.Run("nothing outlives the session after "+end, func(t *testing.T) {
			t.Parallel()
			tag := newTag(t)
			reg, err := NewRegistry(Config{YieldMs: MaxYieldMs, KillGrace: 300 * time.Millisecond, Sandbox: &Sandbox{}})
			require.NoError(t, err)
			closed := false
			t.Cleanup(func() {
				if !closed {
					_ = reg.Close(context.Background()) // Best effort: the test failed first.
				}
			})
			sc := reg.Scope("a")
			req := &ExecRequest{Command: escapers, Env: map[string]string{tagEnv: tag}, Background: true}
			if end == "timeout" {
				req.Timeout = ptr(10.0) // long enough for both lines under load
			}
			res := pooledRun(t, reg, sc, req)
			require.Equal(t, StatusRunning, res.Details.Status, res.Text())
			id := res.Details.SessionID
			awaitLines(t, sc, id, "up", "escaper")
			awaitTaggedAtLeast(t, tag, 1)
			switch end {
			case "kill":
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
	t.Run("a kill keeps the grace period and reports the signal", func(t *testing.T) {
		t.Parallel()
		reg := newPooledRegistry(t, Config{KillGrace: 10 * time.Second}, Sandbox{})
		sc := reg.Scope("a")
		res := pooledRun(t, reg, sc, &ExecRequest{Command: `trap 'echo cleanup ran; exit 0' TERM; echo up; sleep 300 & wait`, Background: true})
		id := res.Details.SessionID
		awaitLines(t, sc, id, "up")
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		res = waitExit(t, sc, id)
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text()
		assert.Contains(t, log, "cleanup ran", "the trap ran within the grace period")
		assert.Equal(t, ExitReasonKilled, res.Details.ExitReason, res.Text())

		res = pooledRun(t, reg, sc, &ExecRequest{Command: "echo up; exec sleep 300", Background: true})
		id = res.Details.SessionID
		awaitLines(t, sc, id, "up")
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		res = waitExit(t, sc, id)
		assert.Equal(t, "SIGTERM", res.Details.ExitSignal, res.Text())
	})
	t.Run("the session's own cgroup, which it cannot leave", func(t *testing.T) {
		t.Parallel()
		tag := newTag(t)
		reg := newPooledRegistry(t, Config{KillGrace: 500 * time.Millisecond}, Sandbox{})
		if cgroupRoot(reg) == nil {
			t.Skip("no session cgroups here: containment is by process group")
		}
		sc := reg.Scope("a")
		mount := cgroupRoot(reg).Dir()
		for filepath.Dir(mount) != mount {
			if _, err := os.Stat(filepath.Join(filepath.Dir(mount), "cgroup.procs")); err != nil {
				break
			}
			mount = filepath.Dir(mount)
		}
		escape := `for f in ` + mount + `/cgroup.procs /sys/fs/cgroup/*/cgroup.procs /sys/fs/cgroup/*/tasks; do echo $$ > $f && echo "moved to $f"; done 2>&1; echo "cg=$(grep '^0::' /proc/self/cgroup)"; echo done; exec sleep 300`
		res := pooledRun(t, reg, sc, &ExecRequest{Command: escape, Env: map[string]string{tagEnv: tag}, Background: true})
		id := res.Details.SessionID
		awaitLines(t, sc, id, "done")
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text()
		assert.NotContains(t, log, "moved to", log)
		// The cgroup namespace's root is the session's cgroup, created
		// with the warm sandbox: the command sees itself at its root.
		assert.Contains(t, log, "cg=0::/\n", log)
		// On the host: a session cgroup below the registry's, as a cold
		// sandbox's.
		pids := awaitTaggedAtLeast(t, tag, 1)
		own, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pids[0]))
		require.NoError(t, err)
		rel, err := filepath.Rel(mount, cgroupRoot(reg).Dir())
		require.NoError(t, err)
		assert.Regexp(t, "(?m)^0::/"+regexp.QuoteMeta(rel)+"/[^/]+\n", string(own), "in a session cgroup of the registry")
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		waitExit(t, sc, id)
		awaitNoTagged(t, tag)
	})
}

// helperSandboxHostPooled is the "sandbox-host-pooled" helper: a
// registry with a full pool and a pooled session that left escapers;
// prints the pids of its spare sandboxes' processes, then "ready", and
// blocks until it is killed.
func helperSandboxHostPooled(tag string) int {
	reg, err := NewRegistry(Config{YieldMs: MaxYieldMs, Sandbox: &Sandbox{}})
	if err != nil {
		fmt.Println("registry:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := reg.hosts.sbx.AwaitPool(ctx); err != nil {
		fmt.Println("pool:", err)
		return 1
	}
	sc := reg.Scope("host")
	res, err := sc.Exec(ctx, &ExecRequest{Command: escapers, Env: map[string]string{tagEnv: tag}, Background: true})
	if err != nil || res.Details.Status != StatusRunning || reg.hosts.sbx.PoolTaken() != 1 {
		fmt.Println("exec:", err, res)
		return 1
	}
	if err := awaitTexts(ctx, sc, res.Details.SessionID, "up", "escaper"); err != nil {
		fmt.Println(err)
		return 1
	}
	if err := reg.hosts.sbx.AwaitPool(ctx); err != nil {
		fmt.Println("pool:", err)
		return 1
	}
	for _, pid := range reg.hosts.sbx.PoolPids() {
		for p, st := range sandboxTree(pid) {
			fmt.Println("spare", p, st)
		}
	}
	fmt.Println("ready")
	<-ctx.Done()
	return 1
}

// TestSandboxPoolDiesWithItsHost: when the host process dies, its
// pooled session's processes and the spare sandboxes waiting in its pool
// end too.
func TestSandboxPoolDiesWithItsHost(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	tag := newTag(t)
	cmd := exec.Command(os.Args[0], "sandbox-host-pooled", tag)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	spares := map[int]string{}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "ready" {
		var pid int
		var st string
		_, err := fmt.Sscanf(sc.Text(), "spare %d %s", &pid, &st)
		require.NoError(t, err, "the helper said: %s", sc.Text())
		spares[pid] = st
	}
	require.GreaterOrEqual(t, len(spares), 3, "bwrap, its init and the stub of each spare")
	awaitTaggedAtLeast(t, tag, 1)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait() // killed: the status is known
	awaitNoTagged(t, tag)
	deadline := time.Now().Add(30 * time.Second)
	for pid, st := range spares {
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil || startTime(b) != st || procState(b) == "Z" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d of a spare sandbox outlived its host: %s", pid, b)
			}
			time.Sleep(20 * time.Millisecond) // polling /proc: nothing signals another process's end to us
		}
	}
}

// TestSandboxPoolLimits: a pooled sandbox's session cgroup, created with
// it, carries the registry's limits: a memory hog meets its limit and is
// reported as killed for memory, and a session's forks meet its task
// limit.
func TestSandboxPoolLimits(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	reg := limitedRegistry(t, Config{Workdir: t.TempDir(), Limits: Limits{MemoryBytes: 64 << 20, Tasks: 16}, Sandbox: &Sandbox{}})
	sc := reg.Scope("a")
	// dd's 256 MiB buffer is charged as it reads /dev/zero into it.
	res := pooledRun(t, reg, sc, &ExecRequest{Command: "echo start; exec dd if=/dev/zero of=/dev/null bs=256M count=1"})
	assert.Equal(t, StatusFailed, res.Details.Status, res.Text())
	assert.Equal(t, ExitReasonOOM, res.Details.ExitReason, res.Text())
	assert.Contains(t, res.Text(), "Command killed: out of memory (limit 64 MiB).")
	res = pooledRun(t, reg, sc, &ExecRequest{Command: "for i in $(seq 40); do sleep 30 & done 2>&1 | head -1; echo forks-ended"})
	assert.Regexp(t, "(?i)fork|resource temporarily unavailable", res.Text(), "the task limit holds")
	ok := pooledRun(t, reg, sc, &ExecRequest{Command: "dd if=/dev/zero of=/dev/null bs=8M count=1 2>/dev/null && echo fine"})
	assert.Equal(t, StatusCompleted, ok.Details.Status, ok.Text())
	assert.Contains(t, ok.Text(), "fine")
}

// TestSandboxPoolSize: Sandbox.Pool sets how many sandboxes wait
// started (zero: 2), and a negative value turns the pool off, so every
// call starts its sandbox cold.
func TestSandboxPoolSize(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	for _, c := range []struct{ pool, want int }{{0, 2}, {3, 3}, {-1, 0}} {
		reg := newSandboxRegistry(t, Config{Workdir: t.TempDir()}, Sandbox{Pool: c.pool})
		require.Equal(t, c.want, reg.hosts.sbx.PoolSize(), "Pool %d", c.pool)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		require.NoError(t, reg.hosts.sbx.AwaitPool(ctx))
		cancel()
		assert.Len(t, reg.hosts.sbx.PoolPids(), c.want, "Pool %d: sandboxes waiting", c.pool)
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo ran"})
		assert.Contains(t, res.Text(), "ran")
		assert.Equal(t, min(c.want, 1), reg.hosts.sbx.PoolTaken(), "Pool %d: the call took a waiting sandbox, if any", c.pool)
	}
}

// The sandboxes waiting in the pool hold descriptors of the host process
// (pipes, a pidfd, the cgroup's). A call that would be refused for want
// of descriptors gets them first: the pool gives its sandboxes up, and
// the call runs. It lowers RLIMIT_NOFILE, so it does not run in parallel.
func TestSandboxPoolGivesWayWhenDescriptorsRunShort(t *testing.T) {
	reg := newPooledRegistry(t, Config{Workdir: t.TempDir()}, Sandbox{})
	sc := reg.Scope("a")
	proctest.LowerNofileUntil(t, func() bool { return contain.DescriptorRefusal() != "" })
	res := mustExec(t, sc, &ExecRequest{Command: "echo ran"})
	assert.Equal(t, "ran", res.Text(), "the pool's descriptors made room")
	assert.Zero(t, reg.hosts.sbx.PoolTaken(), "it ran cold: the pool had given its sandboxes up")
}
