//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/host/local"
	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// sandboxHost returns a sandbox host over a local host (cgroups when this
// machine allows them), with dir as its writable workdir; it skips, or
// fails under CI=true, without bubblewrap.
func sandboxHost(t *testing.T, dir string) (*Host, *local.Host) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bwrap is needed under CI:", err)
		}
		t.Skip("no bwrap here:", err)
	}
	plan, err := New(Config{WritablePaths: []string{dir}}, dir, func(string) string { return dir })
	require.NoError(t, err)
	l, err := local.New(local.Options{Shell: "sh"})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	return NewHost(l, plan, 0), l
}

// readLine reads one line of st's stdout, within a minute.
func readLine(t *testing.T, st *host.Started) string {
	t.Helper()
	f := st.Outputs[0].(*os.File)
	require.NoError(t, f.SetReadDeadline(time.Now().Add(time.Minute)))
	line, err := bufio.NewReader(f).ReadString('\n')
	require.NoError(t, err, "so far %q", line)
	return strings.TrimSpace(line)
}

// end kills what is left of st, reaps it and closes its descriptors.
func end(t *testing.T, st *host.Started) {
	t.Helper()
	require.NoError(t, st.Process.SignalGroup(unix.SIGKILL))
	require.NoError(t, st.Process.AwaitExit())
	_, err := st.Process.Reap()
	require.NoError(t, err)
	assert.NoError(t, st.Process.Release())
	for _, r := range st.Outputs {
		require.NoError(t, r.(*os.File).Close())
	}
}

// The sandbox host starts its commands through the local host, inside
// bubblewrap: the command's pid namespace does not show this process,
// and a SIGTERM the session sends ends the command, not bwrap first, and
// is reported as that signal.
func TestHostWrapsTheLocalHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, l := sandboxHost(t, dir)
	assert.Equal(t, "sandbox", h.Name())
	self := "/proc/" + strconv.Itoa(os.Getpid())
	spec := &host.Spec{Command: "test -d " + self + " && echo on-host || echo inside; exec sleep 600", Dir: dir}
	require.Empty(t, h.Prepare(spec))
	st, err := h.Start(context.Background(), spec)
	require.NoError(t, err)
	assert.Equal(t, "inside", readLine(t, st))
	if l.Cgroups() == nil {
		// Without a cgroup the group's SIGTERM reaches bwrap itself.
		end(t, st)
		t.Skip("no session cgroups here: the signal translation needs one")
	}
	require.NoError(t, st.Process.SignalGroup(unix.SIGTERM))
	require.NoError(t, st.Process.AwaitExit())
	ws, err := st.Process.Reap()
	require.NoError(t, err)
	assert.True(t, ws.Signaled(), "bwrap's 128+15 is the SIGTERM sent: %v", ws)
	assert.Equal(t, unix.SIGTERM, ws.Signal())
	assert.NoError(t, st.Process.Release())
	for _, r := range st.Outputs {
		require.NoError(t, r.(*os.File).Close())
	}
}

// A workdir the sandbox does not expose is refused by Place and Prepare,
// with a text that says what to fix, before anything starts.
func TestHostRefusesAWorkdirOutside(t *testing.T) {
	t.Parallel()
	h, _ := sandboxHost(t, t.TempDir())
	outside := t.TempDir()
	assert.NotEmpty(t, h.Place(outside))
	spec := &host.Spec{Command: "true", Dir: outside}
	assert.NotEmpty(t, h.Prepare(spec))
	_, err := h.Start(context.Background(), spec)
	assert.Error(t, err)
}

// pooledHost is sandboxHost with a pool of size sandboxes, full; the
// host is closed before the local host.
func pooledHost(t *testing.T, dir string, size int) (*Host, *local.Host) {
	t.Helper()
	cold, l := sandboxHost(t, dir)
	h := NewHost(l, cold.plan, size)
	t.Cleanup(h.Close) // runs before l.Close
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, h.AwaitPool(ctx), "the pool fills")
	require.Len(t, h.PoolPids(), size)
	return h, l
}

// A session that takes a sandbox of the pool runs in it as in a cold one:
// inside bubblewrap's pid namespace, in the workdir, with exactly the
// session's environment (nothing of the stub's), stdin from /dev/null
// when the session does not write to it; the pool then refills.
func TestHostPooledStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, _ := pooledHost(t, dir, 1)
	spare := h.PoolPids()[0]
	self := "/proc/" + strconv.Itoa(os.Getpid())
	spec := &host.Spec{
		Command: "test -d " + self + " && echo on-host || echo inside; echo pwd=$PWD; echo tag=$POOL_TAG; env | grep -c . ; cat; echo eof",
		Dir:     dir,
		Env:     host.Env{Carried: []string{"PATH=/usr/bin:/bin"}, Added: []string{"POOL_TAG=t1"}},
	}
	require.Empty(t, h.Prepare(spec))
	st, err := h.Start(context.Background(), spec)
	require.NoError(t, err)
	assert.Equal(t, 1, h.PoolTaken(), "the start took the pooled sandbox")
	assert.Equal(t, spare, st.Process.Pid(), "the session's leader is the spare's bwrap")
	assert.Nil(t, st.Stdin, "no stdin pipe: the command reads /dev/null")
	// One reader for the whole output: readLine's own buffer would keep
	// what came with its line.
	f := st.Outputs[0].(*os.File)
	require.NoError(t, f.SetReadDeadline(time.Now().Add(time.Minute)))
	out, err := io.ReadAll(f)
	require.NoError(t, err, "so far %q", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 5, "%q", out)
	assert.Equal(t, []string{"inside", "pwd=" + dir, "tag=t1"}, lines[:3])
	n, err := strconv.Atoi(lines[3])
	require.NoError(t, err)
	// env also lists what the shell exports itself (PWD, and SHLVL or
	// OLDPWD for some shells): compare with the environment handed over.
	assert.LessOrEqual(t, n, len(st.Env)+3, "the command's environment is the session's: %v", st.Env)
	assert.Equal(t, "eof", lines[4], "cat read /dev/null")
	require.NoError(t, st.Process.AwaitExit())
	ws, err := st.Process.Reap()
	require.NoError(t, err)
	assert.True(t, ws.Exited() && ws.ExitStatus() == 0, "%v", ws)
	assert.NoError(t, st.Process.Release())
	for _, r := range st.Outputs {
		require.NoError(t, r.(*os.File).Close())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, h.AwaitPool(ctx), "the pool refills")
	assert.NotEqual(t, spare, h.PoolPids()[0], "a new sandbox replaced the one taken")
}

// Close ends the sandboxes waiting in the pool (reaped: no process of
// theirs is left), and a later start runs cold.
func TestHostCloseEndsThePool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, _ := pooledHost(t, dir, 2)
	pids := h.PoolPids()
	h.Close()
	assert.Zero(t, h.PoolReady())
	for _, pid := range pids {
		// The bwrap leaders were reaped by Close: signal 0 finds none
		// (their pids could be reused only by a later process, which
		// would not be ours to worry about here; ESRCH is what Close
		// leaves at once).
		assert.ErrorIs(t, unix.Kill(pid, 0), unix.ESRCH, "bwrap %d of the pool outlived Close", pid)
	}
	spec := &host.Spec{Command: "echo cold", Dir: dir}
	require.Empty(t, h.Prepare(spec))
	st, err := h.Start(context.Background(), spec)
	require.NoError(t, err)
	assert.Equal(t, "cold", readLine(t, st))
	assert.Zero(t, h.PoolTaken(), "a closed pool serves nothing")
	end(t, st)
}

// The pool starts no sandbox when the host process is short of
// descriptors: a waiting sandbox would hold some of those kept in
// reserve. ShedPool gives the waiting ones up. It lowers RLIMIT_NOFILE,
// process-wide, so it does not run in parallel.
func TestHostPoolKeepsTheDescriptorReserve(t *testing.T) {
	h, _ := pooledHost(t, t.TempDir(), 1)
	proctest.LowerNofileUntil(t, func() bool { return contain.DescriptorRefusal() != "" })
	before, err := contain.OpenDescriptors()
	require.NoError(t, err)
	ws, err := h.startWarm()
	if err == nil {
		ws.discard()
		t.Fatal("a sandbox started into the reserve")
	}
	assert.Contains(t, err.Error(), "Too few file descriptors")
	after, err := contain.OpenDescriptors()
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing opened")
	pid := h.PoolPids()[0]
	assert.Equal(t, 1, h.ShedPool())
	assert.Zero(t, h.PoolReady())
	assert.ErrorIs(t, unix.Kill(pid, 0), unix.ESRCH, "the shed sandbox's bwrap is reaped")
	shed, err := contain.OpenDescriptors()
	require.NoError(t, err)
	assert.Less(t, shed, after, "the shed sandbox's descriptors are closed")
}
