package bgexec

import (
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestKillWarnsAboutEscapersWithoutCgroups(t *testing.T) {
	reg := newTestRegistry(t, Config{Containment: ContainmentOff, KillGrace: 500 * time.Millisecond})
	sc := reg.Scope("a")
	id := startBackground(t, sc, &ExecRequest{Command: "setsid sleep 300 & echo escaper $!; " + helper("hang")})
	res := waitFor(t, sc, id, `^escaper \d+$`)
	pid, err := strconv.Atoi(strings.TrimPrefix(res.Details.Matched, "escaper "))
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); pidGone(t, pid) })
	waitFor(t, sc, id, "ready")

	kill := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	assert.Regexp(t, regexp.MustCompile(`^Killed session `+id+`\.\nWarning: 1 process of the session may have escaped the kill \(it left the process group\): pid `+strconv.Itoa(pid)+` \(sleep\)\.$`), kill.Text())
}

func TestCgroupContainment(t *testing.T) {
	if _, err := findCgroup2Dir(); err != nil {
		t.Skip("no cgroup v2 here:", err)
	}
	reg := newTestRegistry(t, Config{Containment: ContainmentRequired, KillGrace: 500 * time.Millisecond})
	require.NotNil(t, reg.cgroups)
	root := reg.cgroups.dir
	sc := reg.Scope("a")

	id := startBackground(t, sc, &ExecRequest{Command: "setsid sleep 300 & echo escaper $!; " + helper("hang")})
	res := waitFor(t, sc, id, `^escaper \d+$`)
	pid, err := strconv.Atoi(strings.TrimPrefix(res.Details.Matched, "escaper "))
	require.NoError(t, err)
	waitFor(t, sc, id, "ready")

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
		assert.Equal(t, []string{dirs[0]}, spareCgroups(reg), "the emptied session cgroup is removed or kept as a spare")
		assert.False(t, (&sessionCgroup{dir: dirs[0]}).populated(), "a spare cgroup is empty")
	}

	require.NoError(t, reg.Close(testCtx(t)))
	_, err = os.Stat(root)
	assert.True(t, os.IsNotExist(err), "the registry cgroup is removed on Close")
}

// spareCgroups lists the registry's spare session cgroups.
func spareCgroups(reg *Registry) []string {
	reg.cgroups.mu.Lock()
	defer reg.cgroups.mu.Unlock()
	return slices.Clone(reg.cgroups.spare)
}

func TestSessionCgroupsAreReused(t *testing.T) {
	if _, err := findCgroup2Dir(); err != nil {
		t.Skip("no cgroup v2 here:", err)
	}
	reg := newTestRegistry(t, Config{Containment: ContainmentRequired})
	root := reg.cgroups.dir
	sc := reg.Scope("a")
	cgroupOf := func(text string) string {
		_, path, ok := strings.Cut(strings.TrimSpace(text), "0::")
		require.True(t, ok, "no cgroup v2 line in %q", text)
		return filepath.Base(path)
	}

	// Six at once: six cgroups, none shared.
	var ids []string
	seen := map[string]bool{}
	for range 6 {
		id := startBackground(t, sc, &ExecRequest{Command: "grep '^0::' /proc/self/cgroup; exec " + helper("hang")})
		res := waitFor(t, sc, id, `^0::`)
		name := cgroupOf(res.Details.Matched)
		require.False(t, seen[name], "cgroup %s shared by two running sessions", name)
		seen[name] = true
		ids = append(ids, id)
	}
	for _, id := range ids {
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		waitExit(t, sc, id)
	}
	spare := spareCgroups(reg)
	assert.Len(t, spare, maxSpareCgroups, "emptied cgroups kept for reuse")
	dirs, _ := filepath.Glob(filepath.Join(root, "s-*"))
	assert.ElementsMatch(t, spare, dirs, "every other session cgroup is removed")

	// The next session runs in a spare one.
	res := mustExec(t, sc, &ExecRequest{Command: "grep '^0::' /proc/self/cgroup"})
	require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
	assert.Contains(t, spare, filepath.Join(root, cgroupOf(res.Text())))
	assert.Len(t, spareCgroups(reg), maxSpareCgroups, "and gives it back when it ends")

	require.NoError(t, reg.Close(testCtx(t)))
	_, err := os.Stat(root)
	assert.True(t, os.IsNotExist(err), "Close removes the spare cgroups and the registry's")
}

// A cgroup that was killed is never reused: on some kernels a child cloned
// into it is SIGKILLed at birth.
func TestKilledCgroupsAreNotReused(t *testing.T) {
	if _, err := findCgroup2Dir(); err != nil {
		t.Skip("no cgroup v2 here:", err)
	}
	reg := newTestRegistry(t, Config{Containment: ContainmentRequired, KillGrace: 100 * time.Millisecond})
	sc := reg.Scope("a")
	// The setsid escaper ignores SIGTERM and is outside the process group,
	// so only the cgroup kill ends it: that kill is certain to happen.
	id := startBackground(t, sc, &ExecRequest{Command: "setsid " + helper("ignore-term") + " >/dev/null & exec " + helper("ignore-term")})
	waitFor(t, sc, id, "ready")
	s := sessionOf(reg, id)
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	res := waitExit(t, sc, id)
	require.Equal(t, "SIGKILL", res.Details.ExitSignal, "the grace ran out: %s", res.Text())
	require.True(t, s.c.(*osChild).cg.killed.Load(), "the cgroup was killed")
	assert.NotContains(t, spareCgroups(reg), s.c.(*osChild).cg.dir)
	for range 2 * maxSpareCgroups {
		res := mustExec(t, sc, &ExecRequest{Command: "echo ok"})
		require.Equal(t, "ok", res.Text())
	}
}

// On some kernels every child cloned into a new cgroup is SIGKILLed once the
// host's own cgroup has been killed before. bgexec must notice at
// NewRegistry and fall back to process groups, not fail every exec.
func TestContainmentWorksInAKilledCgroup(t *testing.T) {
	base, err := findCgroup2Dir()
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
