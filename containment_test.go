//go:build linux

package bgexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestKillWarnsAboutEscapersWithoutCgroups(t *testing.T) {
	skipInSandboxSuite(t, "processes the shell leaves running end with the sandbox")
	t.Parallel()
	reg := newTestRegistry(t, Config{Containment: ContainmentOff, KillGrace: 500 * time.Millisecond})
	sc := reg.Scope("a")
	id := startBackground(t, sc, &ExecRequest{Command: "setsid sleep 300 & echo escaper $!; " + helper("hang")})
	res := waitFor(t, sc, id, `^escaper \d+$`)
	pid, err := strconv.Atoi(strings.TrimPrefix(res.Details.Matched, "escaper "))
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); pidGone(t, pid) })
	waitForAfter(t, sc, id, res, "^ready$")
	// The escaper has left the group once it runs sleep in a session of
	// its own; on a loaded machine that may come after the helper's ready.
	deadline := time.Now().Add(30 * time.Second)
	for {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if ps, ok := readPS(pid); ok && ps.sid == pid && strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		require.True(t, time.Now().Before(deadline), "pid %d never ran sleep in a session of its own", pid)
		time.Sleep(10 * time.Millisecond) // a process's exec gives this one no event to wait on
	}

	kill := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	assert.Regexp(t, regexp.MustCompile(`^Killed session `+id+`\.\nWarning: 1 process of the session may have escaped the kill \(it left the process group\): pid `+strconv.Itoa(pid)+` \(sleep\)\.$`), kill.Text())
}

func TestCgroupContainment(t *testing.T) {
	skipInSandboxSuite(t, "the command sees its cgroup as the namespace root")
	t.Parallel()
	if _, err := contain.Cgroup2Dir(); err != nil {
		t.Skip("no cgroup v2 here:", err)
	}
	reg := newTestRegistry(t, Config{Containment: ContainmentRequired, KillGrace: 500 * time.Millisecond})
	require.NotNil(t, cgroupRoot(reg))
	root := cgroupRoot(reg).Dir()
	sc := reg.Scope("a")

	id := startBackground(t, sc, &ExecRequest{Command: "setsid sleep 300 & echo escaper $!; " + helper("hang")})
	res := waitFor(t, sc, id, `^escaper \d+$`)
	pid, err := strconv.Atoi(strings.TrimPrefix(res.Details.Matched, "escaper "))
	require.NoError(t, err)
	waitForAfter(t, sc, id, res, "^ready$")

	dirs, _ := filepath.Glob(filepath.Join(root, "s-*"))
	require.Len(t, dirs, 1, "the session runs in a cgroup of its own")
	procs, err := os.ReadFile(filepath.Join(dirs[0], "cgroup.procs"))
	require.NoError(t, err)
	assert.Contains(t, strings.Fields(string(procs)), strconv.Itoa(pid), "the setsid escaper is still in the session's cgroup")

	kill := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	assert.Equal(t, "Killed session "+id+".", kill.Text())
	assert.True(t, pidGone(t, pid), "the setsid escaper ended with the cgroup")
	waitExit(t, sc, id)
	if _, err := os.Stat(dirs[0]); err == nil {
		assert.Equal(t, []string{dirs[0]}, spareCgroups(cgroupRoot(reg)), "the emptied session cgroup is removed or kept as a spare")
		pop, err := contain.Populated(dirs[0])
		assert.NoError(t, err)
		assert.False(t, pop, "a spare cgroup is empty")
	}

	require.NoError(t, reg.Close(testCtx(t)))
	_, err = os.Stat(root)
	assert.True(t, os.IsNotExist(err), "the registry cgroup is removed on Close")
}

// spareCgroups lists the spare session cgroups of a registry's cgroup.
func spareCgroups(r *contain.Root) []string { return r.Spares() }

func TestSessionCgroupsAreReused(t *testing.T) {
	skipInSandboxSuite(t, "the command sees its cgroup as the namespace root")
	t.Parallel()
	if _, err := contain.Cgroup2Dir(); err != nil {
		t.Skip("no cgroup v2 here:", err)
	}
	reg := newTestRegistry(t, Config{Containment: ContainmentRequired})
	root := cgroupRoot(reg).Dir()
	sc := reg.Scope("a")
	// The session sees its cgroup as its namespace's root: read where it
	// runs from here.
	cgroupOf := func(text string) string {
		pid, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(text), "pid "))
		require.NoError(t, err, text)
		return filepath.Base(cgroup2Of(t, pid))
	}

	// Six at once: six cgroups, none shared.
	var ids []string
	seen := map[string]bool{}
	for range 6 {
		id := startBackground(t, sc, &ExecRequest{Command: "echo pid $$; exec " + helper("hang")})
		res := waitFor(t, sc, id, `^pid \d+$`)
		name := cgroupOf(res.Details.Matched)
		require.False(t, seen[name], "cgroup %s shared by two running sessions", name)
		seen[name] = true
		ids = append(ids, id)
	}
	for _, id := range ids {
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		waitExit(t, sc, id)
	}
	spare := spareCgroups(cgroupRoot(reg))
	assert.Len(t, spare, contain.MaxSpares, "emptied cgroups kept for reuse")
	dirs, _ := filepath.Glob(filepath.Join(root, "s-*"))
	assert.ElementsMatch(t, spare, dirs, "every other session cgroup is removed")

	// The next session runs in a spare one.
	id := startBackground(t, sc, &ExecRequest{Command: "echo pid $$; exec " + helper("hang")})
	res := waitFor(t, sc, id, `^pid \d+$`)
	assert.Contains(t, spare, filepath.Join(root, cgroupOf(res.Details.Matched)))
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	waitExit(t, sc, id)
	assert.Len(t, spareCgroups(cgroupRoot(reg)), contain.MaxSpares, "and gives it back when it ends")

	require.NoError(t, reg.Close(testCtx(t)))
	_, err := os.Stat(root)
	assert.True(t, os.IsNotExist(err), "Close removes the spare cgroups and the registry's")
}

// A cgroup that was killed is never reused: on some kernels a child cloned
// into it is SIGKILLed at birth.
func TestKilledCgroupsAreNotReused(t *testing.T) {
	t.Parallel()
	if _, err := contain.Cgroup2Dir(); err != nil {
		t.Skip("no cgroup v2 here:", err)
	}
	reg := newTestRegistry(t, Config{Containment: ContainmentRequired, KillGrace: 100 * time.Millisecond})
	sc := reg.Scope("a")
	// The setsid escaper ignores SIGTERM and is outside the process group,
	// so only the cgroup kill ends it: that kill is certain to happen.
	id := startBackground(t, sc, &ExecRequest{Command: "setsid " + helper("ignore-term") + " >/dev/null & exec " + helper("ignore-term")})
	waitFor(t, sc, id, "ready")
	s := sessionOf(reg, id)
	// The escaper must have left the process group before the kill, or
	// the group's SIGKILL takes it and the cgroup is seen empty: on a
	// loaded machine its setsid may come after the leader's ready.
	deadline := time.Now().Add(30 * time.Second)
	for escaped := false; !escaped; {
		pids, err := cgroupOf(s).Procs()
		require.NoError(t, err)
		for _, pid := range pids {
			if ps, ok := readPS(pid); ok && pid != s.Pid() && ps.sid == pid {
				escaped = true
			}
		}
		require.True(t, time.Now().Before(deadline), "the escaper never left the process group")
		time.Sleep(10 * time.Millisecond) // a setsid gives this process no event to wait on
	}
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	res := waitExit(t, sc, id)
	require.Equal(t, "SIGKILL", res.Details.ExitSignal, "the grace ran out: %s", res.Text())
	require.True(t, cgroupOf(s).Killed(), "the cgroup was killed")
	assert.NotContains(t, spareCgroups(cgroupRoot(reg)), cgroupOf(s).Dir())
	for range 2 * contain.MaxSpares {
		res := mustExec(t, sc, &ExecRequest{Command: "echo ok"})
		require.Equal(t, "ok", res.Text())
	}
}

// On some kernels every child cloned into a new cgroup is SIGKILLed once the
// host's own cgroup has been killed before. bgexec must notice at
// NewRegistry and fall back to process groups, not fail every exec.
func TestContainmentWorksInAKilledCgroup(t *testing.T) {
	t.Parallel()
	base, err := contain.Cgroup2Dir()
	if err != nil {
		t.Skip("no cgroup v2 here:", err)
	}
	ctx := testCtx(t)
	cmd := exec.CommandContext(ctx, os.Args[0], "killed-cgroup-host", base)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("%s", out)
	assert.Contains(t, string(out), "exec: ok\n", "the command ran")
	assert.NotContains(t, string(out), "cleanup:", "the helper removes the cgroup it made")
	if strings.Contains(string(out), "cgroups: false") {
		assert.Contains(t, string(out), "required: bgexec: containment required: the kernel SIGKILLs children cloned into a new cgroup", "the reason is given")
	} else {
		assert.Contains(t, string(out), "required: <nil>")
	}
}

func TestInheritedDescriptorsDoNotReachChildren(t *testing.T) {
	// A descriptor without close-on-exec, as a host may inherit from its parent.
	marker := filepath.Join(t.TempDir(), "inherit-marker")
	require.NoError(t, os.WriteFile(marker, nil, 0o600))
	fd, err := syscall.Open(marker, syscall.O_RDONLY, 0)
	require.NoError(t, err)
	defer syscall.Close(fd)
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	require.NoError(t, err)
	require.Zero(t, flags&unix.FD_CLOEXEC)

	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	// The shell lists its own descriptors; a grandchild does the same.
	list := `for f in /proc/$$/fd/*; do readlink "$f"; done; sh -c 'for f in /proc/$$/fd/*; do readlink "$f"; done'; echo listed`
	for _, req := range []ExecRequest{{Command: list}, {Command: list, PTY: true}, {Command: list, Stdin: "pipe"}} {
		res := mustExec(t, sc, &req)
		require.Contains(t, res.Text(), "listed")
		assert.NotContains(t, res.Text(), "inherit-marker", "pty=%v stdin=%q", req.PTY, req.Stdin)
	}
}

// exhaustFDs leaves this process without a free descriptor: it lowers the
// soft RLIMIT_NOFILE to limit and fills every free slot below it, so every
// open fails with EMFILE, even after descriptors at or above limit are
// closed. restore undoes both. Only for a helper process: every goroutine
// of the process is affected.
func exhaustFDs(limit int) (restore func(), err error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return nil, err
	}
	var fillers []int
	restore = func() {
		for _, fd := range fillers {
			_ = unix.Close(fd)
		}
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	}
	low := lim
	low.Cur = uint64(limit)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		return nil, err
	}
	for {
		fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EMFILE {
			return restore, nil
		}
		if err != nil {
			restore()
			return nil, err
		}
		fillers = append(fillers, fd)
	}
}

// helperExhaustedKill is the "exhausted-kill" helper. In a registry of its
// own (containment rest[0]: "required" or "off") it starts a session whose
// setsid child ignores SIGTERM, kills the session while this process has
// no free descriptor, gives the descriptors back, and prints what it saw
// as "key: value" lines.
func helperExhaustedKill(rest []string) int {
	cfg := Config{YieldMs: MaxYieldMs, KillGrace: 100 * time.Millisecond, DrainTimeout: 200 * time.Millisecond, Containment: ContainmentRequired}
	if rest[0] == "off" {
		cfg.Containment = ContainmentOff
	}
	reg, err := NewRegistry(sandboxed(cfg))
	if err != nil {
		fmt.Println("registry:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc := reg.Scope("a")
	res, err := sc.Exec(ctx, &ExecRequest{Command: "setsid " + helper("ignore-term") + " & echo escaper $!; exec sleep 300", Background: true})
	if err != nil || res.Details.Status != StatusRunning {
		fmt.Println("exec:", err, res)
		return 1
	}
	id := res.Details.SessionID
	pids, err := awaitKeys(ctx, sc, id, "escaper")
	if err != nil {
		fmt.Println("escaper:", err)
		return 1
	}
	escaper := pids["escaper"]
	// In the log, not by a pattern wait: awaitKeys's polls may have taken
	// the line already, and a wait looks only at output no poll returned.
	if err := awaitLogLine(ctx, sc, id, "ready"); err != nil {
		fmt.Println("ready:", err)
		return 1
	}
	s := sessionOf(reg, id)
	dirty := ""
	if cgroupRoot(reg) != nil {
		dirty = cgroupOf(s).Dir()
	}
	// The session frees its pipes and pidfd before it looks at its cgroup
	// for the last time: those slots must not help it.
	first := -1
	for _, f := range append(s.Outputs(), pidfdOf(s)) {
		rc, err := f.(*os.File).SyscallConn()
		if err != nil {
			fmt.Println("fd:", err)
			return 1
		}
		_ = rc.Control(func(fd uintptr) {
			if first < 0 || int(fd) < first {
				first = int(fd)
			}
		})
	}
	restore, err := exhaustFDs(first)
	if err != nil {
		fmt.Println("exhaust:", err)
		return 1
	}
	kill, err := sc.Process(ctx, &ProcessRequest{Action: "kill", SessionID: id})
	survived := unix.Kill(escaper, 0) == nil
	restore()
	if err != nil {
		fmt.Println("kill:", err)
		return 1
	}
	fmt.Printf("kill: %q\n", kill.Text())
	fmt.Println("escaper alive after the kill:", survived)

	if dirty != "" {
		fmt.Println("kept as a spare:", slices.Contains(spareCgroups(cgroupRoot(reg)), dirty))
		// The session sees its cgroup as "/": look from here.
		next, err := sc.Exec(ctx, &ExecRequest{Command: "echo pid $$; exec sleep 300", Background: true})
		if err != nil {
			fmt.Println("next:", err)
			return 1
		}
		pids, err := awaitKeys(ctx, sc, next.Details.SessionID, "pid")
		if err != nil {
			fmt.Println("next:", err)
			return 1
		}
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pids["pid"]) + "/cgroup")
		_, _ = sc.Process(ctx, &ProcessRequest{Action: "kill", SessionID: next.Details.SessionID})
		fmt.Println("next session in the same cgroup:", strings.Contains(string(b), "/"+filepath.Base(dirty)+"\n"))
		gone, err := waitPidExit(escaper, 10*time.Second)
		fmt.Println("escaper killed once descriptors are back:", gone || errors.Is(err, unix.ESRCH))
	} else if fd, err := unix.PidfdOpen(escaper, 0); err == nil {
		// Without cgroups it survives, as documented; end it here.
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		_ = unix.Close(fd)
		_, _ = waitPidExit(escaper, 10*time.Second)
	}
	fmt.Println("close:", reg.Close(ctx))
	return 0
}

// A kill while the host has no free descriptor cannot read the session's
// cgroup or /proc. It must not report an end it could not see, and a
// cgroup it could not see empty must never be handed to the next session.
func TestKillFailsClosedWithoutDescriptors(t *testing.T) {
	skipInSandboxSuite(t, "the test reads pids the command printed, which are those of its pid namespace")
	t.Parallel()
	haveCgroups := cgroupsAvailable(t)
	for _, mode := range []string{"required", "off"} {
		t.Run("containment "+mode, func(t *testing.T) {
			if mode == "required" && !haveCgroups {
				t.Skip("cgroup v2 containment is not available here")
			}
			cmd := exec.CommandContext(testCtx(t), os.Args[0], "exhausted-kill", mode)
			cmd.Env = append(os.Environ(), helperEnv+"=1")
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			require.NoError(t, err, "%s", out)
			t.Logf("%s", out)
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				k, v, _ := strings.Cut(line, ": ")
				got[k] = v
			}
			kill, err := strconv.Unquote(got["kill"])
			require.NoError(t, err, got["kill"])
			assert.Equal(t, "<nil>", got["close"])
			if mode == "off" {
				assert.Regexp(t, `^Killed session \S+\.\nWarning: could not list the session's processes before the kill \(.*too many open files\); a process that left the process group may have escaped\.$`, kill)
				return
			}
			assert.Regexp(t, `^Termination requested for session \S+\.\nWarning: the end of every process of the session could not be confirmed \(.*too many open files\)`, kill)
			assert.Equal(t, "true", got["escaper alive after the kill"], "the escaper was out of reach")
			assert.Equal(t, "false", got["kept as a spare"], "a cgroup not seen empty is not kept for reuse")
			assert.Equal(t, "false", got["next session in the same cgroup"], "nor handed to the next session")
			assert.Equal(t, "true", got["escaper killed once descriptors are back"])
		})
	}
}

// cgroup2Of returns the cgroup v2 path of a live process, as this process
// sees it (a session sees its own as "/", its namespace's root).
func cgroup2Of(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	t.Fatalf("no cgroup v2 line for pid %d in %q", pid, b)
	return ""
}
