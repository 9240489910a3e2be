//go:build linux

package contain

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A session process that moved itself out of its session cgroup (into
// another cgroup) but is still in the session's cgroup namespace is killed
// at the session's end by the root's reaper: KillNamespace returns at once,
// Remove returns only once none of the namespace's processes is left, and
// the namespace is released (the watchdog told to forget it) only then.
func TestNamespaceReaperKillsWhatLeftTheCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("moving a process between cgroups and a cgroup namespace need root")
	}
	t.Parallel()
	root, err := NewRoot()
	if err != nil {
		t.Skip("cgroup v2 containment is not available here:", err)
	}
	removed := false
	// Beside the registry's cgroup, so that Remove finds its own empty.
	outside := root.Dir() + "-outside"
	t.Cleanup(func() {
		if !removed {
			_ = root.Remove()
		}
	})
	if !root.namespace {
		t.Skip("no cgroup namespaces here")
	}
	require.NoError(t, os.Mkdir(outside, 0o755))
	t.Cleanup(func() { _ = unix.Rmdir(outside) })

	cg, err := root.NewSession()
	require.NoError(t, err)
	// The escaper writes itself into the other cgroup, says so, and sleeps;
	// the shell waits for its input to end.
	script := `setsid sh -c 'echo $$ > "$1/cgroup.procs" && echo moved $$ && exec sleep 300 >/dev/null' sh "$1" &
read x || exit 0`
	cmd := exec.Command("/bin/sh", "-c", script, "sh", outside)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: cg.FD(), Unshareflags: unix.CLONE_NEWCGROUP}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	cg.OpenNamespace(cmd.Process.Pid)
	require.True(t, cg.Namespaced(), "the session holds its namespace")

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var escaper int
	select {
	case line := <-lines:
		p, ok := strings.CutPrefix(line, "moved ")
		require.True(t, ok, "the escaper moved: %q", line)
		escaper, err = strconv.Atoi(p)
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the escaper did not report within 30s")
	}
	t.Cleanup(func() { _ = unix.Kill(escaper, unix.SIGKILL) })
	inNamespace := func() bool {
		l, err := os.Readlink("/proc/" + strconv.Itoa(escaper) + "/ns/cgroup")
		return err == nil && l == cg.ns.link
	}
	require.True(t, inNamespace(), "the escaper left the cgroup, not the namespace")

	// The session's end, as the local host does it.
	_ = stdin.Close()
	require.NoError(t, cmd.Wait())
	require.NoError(t, cg.KillLeft())
	start := time.Now()
	require.NoError(t, cg.KillNamespace())
	t.Logf("KillNamespace returned after %v", time.Since(start))
	var mu sync.Mutex
	var aliveAtRelease []bool
	root.reaper.after(cg.ns, func() {
		mu.Lock()
		defer mu.Unlock()
		aliveAtRelease = append(aliveAtRelease, inNamespace())
	})
	require.NoError(t, cg.Remove(10*time.Second))
	assert.False(t, inNamespace(), "the escaper is gone once Remove returned")
	mu.Lock()
	assert.Equal(t, []bool{false}, aliveAtRelease, "the namespace was released once, after its last process was gone")
	mu.Unlock()
	assert.Equal(t, -1, cg.ns.fd, "Remove closed the namespace")

	require.NoError(t, root.Remove(), "the reaper ends with the root")
	removed = true
}

// Without a root (or once it is being removed) KillNamespace looks on the
// caller's path, and after runs at once for a namespace nobody looks for.
func TestNamespaceReaperAfterRunsAtOnceWhenIdle(t *testing.T) {
	t.Parallel()
	var r nsReaper
	ran := false
	r.after(&namespace{fd: -1}, func() { ran = true })
	assert.True(t, ran)
	require.NoError(t, r.close())
	assert.False(t, r.enqueue(&namespace{fd: -1, link: "cgroup:[1]"}), "a closed reaper takes no namespace")
}
