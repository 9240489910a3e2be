//go:build linux

package contain

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The pids the kernel gives after a mark are on the arc from the first of
// them up to the last pid given.
func TestArcSinceHoldsThePidsGivenAfterTheMark(t *testing.T) {
	t.Parallel()
	m, ok := markPids()
	require.True(t, ok, "the kernel's counts can be read")
	var pids []int
	for range 5 {
		cmd := exec.Command("/bin/sh", "-c", "exit 0")
		require.NoError(t, cmd.Run())
		pids = append(pids, cmd.Process.Pid)
	}
	arc, ok := arcSince(pids[0], m)
	require.True(t, ok, "a few forks after the mark leave the arc known")
	assert.Equal(t, pids[0], arc[0])
	for _, p := range pids {
		assert.Contains(t, arc, p)
	}
}

// When the counts allow a full turn of the allocator, or cannot be
// trusted, the arc is not known, and a look scans /proc instead.
func TestArcSinceRefusesWhatItCannotKnow(t *testing.T) {
	t.Parallel()
	m, ok := markPids()
	require.True(t, ok)
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	require.NoError(t, cmd.Run())
	first := cmd.Process.Pid
	_, ok = arcSince(first, m)
	require.True(t, ok, "the control: these counts give an arc")

	pidMax, err := readInt("/proc/sys/kernel/pid_max")
	require.NoError(t, err)
	for name, mark := range map[string]pidMark{
		"half a turn of forks since":       {forks: m.forks - uint64(pidMax)/2, tasks: m.tasks},
		"a third of a turn of tasks":       {forks: m.forks, tasks: uint64(pidMax) / 3},
		"a fork count that went backwards": {forks: m.forks + 1<<20, tasks: m.tasks},
	} {
		_, ok := arcSince(first, mark)
		assert.False(t, ok, name)
	}
	_, ok = arcSince(pidMax, m)
	assert.False(t, ok, "a first pid above pid_max")
	_, ok = arcSince(0, m)
	assert.False(t, ok, "no first pid")
}

func TestPidArcWraps(t *testing.T) {
	t.Parallel()
	arc, ok := pidArc(100, 103, 32768)
	require.True(t, ok)
	assert.Equal(t, []int{100, 101, 102, 103}, arc)
	arc, ok = pidArc(32766, 2, 32768)
	require.True(t, ok)
	assert.Equal(t, []int{32766, 32767, 1, 2, 3}, arc, "from 1 after pid_max: a superset of what the kernel gave")
	_, ok = pidArc(100, 100+maxArc, 32768)
	assert.False(t, ok, "an arc longer than maxArc is scanned as /proc")
}

// A process that moved itself out of its session's cgroup, as root may,
// is still found by its cgroup namespace at the session's end, by a look
// at the pids given since the session started rather than a scan of
// /proc.
func TestCgroupNamespaceKillFindsAProcessThatLeftTheCgroup(t *testing.T) {
	t.Parallel()
	root := newTestRoot(t)
	if !root.namespace {
		if os.Getenv("CI") == "true" {
			t.Fatal("no cgroup namespaces for sessions here (needs CAP_SYS_ADMIN)")
		}
		t.Skip("no cgroup namespaces for sessions here (needs CAP_SYS_ADMIN)")
	}
	cg, err := root.NewSession()
	require.NoError(t, err)
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The shell starts a sleep, moves it to the registry's cgroup, and
	// exits; the sleep runs on outside the session's cgroup.
	script := `sleep 300 </dev/null >/dev/null 2>&1 & echo $! > "$2/cgroup.procs" && echo $! > "$1"`
	cmd := exec.Command("/bin/sh", "-c", script, "sh", pidFile, root.Dir())
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: cg.FD(), Unshareflags: unix.CLONE_NEWCGROUP}
	cg.MarkPids()
	require.NoError(t, cmd.Start())
	cg.OpenNamespace(cmd.Process.Pid)
	require.True(t, cg.Namespaced(), "the session's namespace is held")
	require.NoError(t, cmd.Wait())
	cg.CloseFD()
	t.Cleanup(func() {
		cg.ns.close()
		assert.NoError(t, cg.Remove(10*time.Second))
	})
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL) })
	left, err := cg.Procs()
	require.NoError(t, err)
	require.NotContains(t, left, pid, "the sleep left the session's cgroup")

	_, ok := arcSince(cg.ns.first, cg.ns.mark)
	require.True(t, ok, "the look is by the pids given since the session started")
	require.NoError(t, cg.KillNamespace())
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := ReadStat(pid)
		if Gone(err) || err == nil && !st.Live() {
			break
		}
		require.True(t, time.Now().Before(deadline), "the process that left the cgroup still runs")
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkCgroupNamespaceArc is the cost a session end pays to find the
// processes of its cgroup namespace when the pids given since it started
// are known: a look at each of them, whatever the number of processes on
// the machine. BenchmarkCgroupNamespaceScan is the same look over /proc.
func BenchmarkCgroupNamespaceArc(b *testing.B) {
	m, ok := markPids()
	if !ok {
		b.Skip("the kernel's counts cannot be read")
	}
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	n := &namespace{fd: -1, link: "cgroup:[1]", first: cmd.Process.Pid, mark: m, marked: true} // no namespace has inode 1
	if _, ok := arcSince(n.first, n.mark); !ok {
		b.Skip("the machine forked too much since the mark")
	}
	buf := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if found, err := n.killOnce(buf); err != nil || found != 0 {
			b.Fatal(found, err)
		}
	}
}
