//go:build linux

package local

import (
	"bytes"
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

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/host"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// newHost returns a host with opts (sh when no shell is given), closed
// when the test ends.
func newHost(t *testing.T, opts Options) *Host {
	t.Helper()
	if opts.Shell == "" {
		opts.Shell = "sh"
	}
	h, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(h.Close)
	return h
}

// ended is what a finished command left: its output (stdout then
// stderr, or the terminal's) and its wait status.
type ended struct {
	out string
	ws  syscall.WaitStatus
}

// run starts spec on h, reads its output to the end (within a minute)
// and reaps it.
func run(t *testing.T, h interface {
	Start(context.Context, *host.Spec) (*host.Started, error)
}, spec *host.Spec) (ended, *host.Started) {
	t.Helper()
	st, err := h.Start(context.Background(), spec)
	require.NoError(t, err)
	return finish(t, st), st
}

// finish reads st's output to the end (within a minute) and reaps it.
func finish(t *testing.T, st *host.Started) ended {
	t.Helper()
	var buf bytes.Buffer
	deadline := time.Now().Add(time.Minute)
	for _, r := range st.Outputs {
		f := r.(*os.File)
		require.NoError(t, f.SetReadDeadline(deadline))
		_, err := io.Copy(&buf, f)
		if err != nil && !errors.Is(err, syscall.EIO) { // EIO: a PTY's end
			require.NoError(t, err)
		}
		require.NoError(t, f.Close())
	}
	if c, ok := st.Stdin.(io.Closer); ok && st.TTYName == "" { // a PTY's stdin is the master, closed above
		require.NoError(t, c.Close())
	}
	p := st.Process
	require.NoError(t, p.AwaitExit())
	ws, err := p.Reap()
	require.NoError(t, err)
	require.NoError(t, p.Release())
	return ended{out: buf.String(), ws: ws}
}

// The shell gets a command up to MaxArgCommand bytes as its -c argument,
// a longer one as a sealed script on fd 3 that its processes do not
// inherit; either way the command behaves as with -c.
func TestLongCommands(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{Containment: ContainmentOff})
	argv := `n=$(wc -c < /proc/$$/cmdline); echo "argv $n"`
	pad := func(n int, tail string) string {
		return ": " + strings.Repeat("x", n-len(": ; ")-len(tail)) + "; " + tail
	}
	argvBytes := func(command string) int {
		e, _ := run(t, h, &host.Spec{Command: command})
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(e.out, "argv ")))
		require.NoError(t, err, e.out)
		return n
	}
	t.Run("a command of exactly the threshold is the -c argument", func(t *testing.T) {
		assert.Greater(t, argvBytes(pad(MaxArgCommand, argv)), MaxArgCommand)
	})
	t.Run("one byte more is a script on fd 3", func(t *testing.T) {
		assert.Less(t, argvBytes(pad(MaxArgCommand+1, argv)), 100)
	})
	t.Run("the script's processes do not inherit it, and exit ends the shell", func(t *testing.T) {
		fds := `ls /proc/self/fd | tr '\n' ' '; exit 7; echo unreachable`
		short, _ := run(t, h, &host.Spec{Command: fds})
		long, _ := run(t, h, &host.Spec{Command: pad(MaxArgCommand+100, fds)})
		assert.Equal(t, short.out, long.out, "the same descriptors (0 1 2 and ls's own)")
		assert.Equal(t, 7, long.ws.ExitStatus())
	})
}

// A command's environment: this process's, then the defaults for keys
// still unset, the caller's overrides, the forced entries and the added
// ones; pagers are cat, and a terminal's size variables are dropped.
func TestEnvironmentLayers(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{Containment: ContainmentOff})
	spec := &host.Spec{
		Command: `echo "$A $B $C $D $PAGER ${COLUMNS-unset}"`,
		PTY:     true, Cols: 80, Rows: 24,
		Env: host.Env{
			Carried:   []string{"A=carried", "B=carried", "COLUMNS=99", "PATH=" + os.Getenv("PATH")},
			Defaults:  []string{"B=default", "C=default"},
			Overrides: map[string]string{"C": "override"},
			Forced:    []string{"D=forced"},
			Added:     []string{"D=added"},
		},
	}
	e, st := run(t, h, spec)
	assert.Equal(t, "carried default override added cat unset", strings.TrimSpace(e.out))
	assert.Contains(t, st.Env, "GIT_PAGER=cat")
	assert.NotEmpty(t, st.TTYName, "it ran on a terminal")
}

// With Carry, the shell's state at its end (its working directory and
// environment) is read back; without keep, nothing is.
func TestShellStateCapture(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{Containment: ContainmentOff})
	dir := t.TempDir()
	_, st := run(t, h, &host.Spec{Command: "cd " + dir + " && export KEPT=yes", Carry: &host.Carry{}})
	require.NotNil(t, st.State)
	state, ok := st.State(true)
	require.True(t, ok)
	assert.Contains(t, string(state), "\x00bgexec-state\x00"+dir+"\n\x00")
	assert.Contains(t, string(state), "\x00KEPT=yes\x00")
	_, st = run(t, h, &host.Spec{Command: "true", Carry: &host.Carry{}})
	state, ok = st.State(false)
	assert.False(t, ok)
	assert.Nil(t, state)
}

// Close ends the spawner threads, and with them (Pdeathsig) every child
// they forked that still runs, even one that ignores SIGTERM, whichever
// thread forked it (children started at once, so that every thread
// forks); a start after Close fails.
func TestCloseKillsWhatTheSpawnerForked(t *testing.T) {
	t.Parallel()
	h, err := New(Options{Shell: "sh", Containment: ContainmentOff})
	require.NoError(t, err)
	n := 4 * spawnerThreads()
	started := make([]*host.Started, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started[i], errs[i] = h.Start(context.Background(), &host.Spec{Command: "trap '' TERM; echo ready; exec sleep 600"})
		}()
	}
	wg.Wait()
	for i, st := range started {
		require.NoError(t, errs[i])
		out := st.Outputs[0].(*os.File)
		require.NoError(t, out.SetReadDeadline(time.Now().Add(time.Minute)))
		line := make([]byte, 6)
		_, err = io.ReadFull(out, line)
		require.NoError(t, err)
		require.Equal(t, "ready\n", string(line))
	}
	h.Close()
	h.Close() // idempotent
	for _, st := range started {
		e := finish(t, st)
		assert.True(t, e.ws.Signaled(), "%v", e.ws)
		assert.Equal(t, unix.SIGKILL, e.ws.Signal())
	}
	_, err = h.Start(context.Background(), &host.Spec{Command: "true"})
	assert.ErrorIs(t, err, ErrClosed)
}

// A wrapper's status 128+n after the session sent signal n is that
// signal; other statuses, and any status of an unwrapped command, are
// left as they are.
func TestWrappedStatus(t *testing.T) {
	t.Parallel()
	exit := func(code int) syscall.WaitStatus { return syscall.WaitStatus(code << 8) }
	for _, c := range []struct {
		name    string
		wrapped bool
		sent    syscall.Signal
		ws      syscall.WaitStatus
		signal  syscall.Signal // 0: the status is kept
		exitsAs int
	}{
		{"the signal the session sent", true, unix.SIGTERM, exit(128 + int(unix.SIGTERM)), unix.SIGTERM, 0},
		{"another signal's code", true, unix.SIGTERM, exit(128 + int(unix.SIGINT)), 0, 128 + int(unix.SIGINT)},
		{"no signal sent", true, 0, exit(143), 0, 143},
		{"not wrapped", false, unix.SIGTERM, exit(143), 0, 143},
	} {
		t.Run(c.name, func(t *testing.T) {
			child := &osChild{wrapped: c.wrapped, sent: c.sent}
			ws := child.wrappedStatus(c.ws)
			if c.signal != 0 {
				require.True(t, ws.Signaled())
				assert.Equal(t, c.signal, ws.Signal())
				return
			}
			require.True(t, ws.Exited())
			assert.Equal(t, c.exitsAs, ws.ExitStatus())
		})
	}
}

// ExitStatus tells an exited leader's status, as Reap will, while the
// zombie still holds its pid: exits, signal deaths and core dumps, with
// the CPU time for EndUsage. With a cgroup it declines, and the session
// reaps first.
func TestExitStatusBeforeTheReaping(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{Containment: ContainmentOff})
	dumps := t.TempDir() // where a core dump goes, if the machine writes one
	for _, c := range []struct {
		name    string
		command string
		check   func(t *testing.T, ws syscall.WaitStatus)
	}{
		{"an exit code", "exit 3", func(t *testing.T, ws syscall.WaitStatus) {
			require.True(t, ws.Exited())
			assert.Equal(t, 3, ws.ExitStatus())
		}},
		{"a signal", "kill -TERM $$", func(t *testing.T, ws syscall.WaitStatus) {
			require.True(t, ws.Signaled())
			assert.Equal(t, syscall.SIGTERM, ws.Signal())
			assert.False(t, ws.CoreDump())
		}},
		{"a core dump", "cd " + dumps + " && ulimit -c unlimited 2>/dev/null; kill -QUIT $$", func(t *testing.T, ws syscall.WaitStatus) {
			require.True(t, ws.Signaled())
			assert.Equal(t, syscall.SIGQUIT, ws.Signal())
			if files, _ := os.ReadDir(dumps); len(files) > 0 {
				assert.True(t, ws.CoreDump(), "a core file was written")
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := h.Start(context.Background(), &host.Spec{Command: c.command})
			require.NoError(t, err)
			child := st.Process.(*osChild)
			require.NoError(t, child.AwaitExit())
			ws, ok := child.ExitStatus()
			require.True(t, ok, "a child without a cgroup tells its status")
			c.check(t, ws)
			stat, err := contain.ReadStat(child.Pid())
			require.NoError(t, err, "the zombie is still there")
			assert.Equal(t, byte('Z'), stat.State)
			_, usageOK := child.EndUsage()
			assert.True(t, usageOK, "the CPU time is known before the reaping")

			reaped, err := child.Reap()
			require.NoError(t, err)
			assert.Equal(t, ws, reaped, "Reap finds the same status")
			for _, r := range st.Outputs {
				require.NoError(t, r.(*os.File).Close())
			}
			require.NoError(t, child.Release())
			_, err = contain.ReadStat(child.Pid())
			assert.Error(t, err, "reaped: the pid is free")
		})
	}
	t.Run("not with a cgroup", func(t *testing.T) {
		child := &osChild{cg: &contain.Cgroup{}}
		_, ok := child.ExitStatus()
		assert.False(t, ok)
	})
}
