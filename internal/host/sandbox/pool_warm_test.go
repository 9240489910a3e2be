//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runWarm starts a warm sandbox of p with bwrap run directly, hands it
// argv and env, and returns what it printed and its exit code.
//
// bwrap --die-with-parent dies with the thread that forked it, and the Go
// runtime ends a thread when a goroutine locked to it exits: the spawner
// threads of the hosts other tests close do. The test's goroutine keeps
// the forking thread locked until bwrap has ended, so no other goroutine
// can take it over and end it (what the hosts' own spawner threads do).
// Before that, bwrap was once seen SIGKILLed in CI after its command had
// printed everything.
func runWarm(t *testing.T, p *Plan, argv, env []string) (string, int) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w, err := p.NewWarm()
	require.NoError(t, err)
	defer w.Close()
	state, err := os.CreateTemp(t.TempDir(), "state")
	require.NoError(t, err)
	defer state.Close()
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	defer outR.Close()
	// As the local host lays them out (local.Wrap.MoveStdio): the
	// script's place, the state file, then the command's stdin (none:
	// it reads /dev/null), stdout and stderr; bwrap's own are /dev/null.
	path, args, files, owned, err := w.Command(nil, w.Dir(), w.ReadOnly(), false, []*os.File{nil, state, nil, outW, os.Stderr})
	require.NoError(t, err)
	cmd := &exec.Cmd{Path: path, Args: args, Dir: w.Dir(), Env: []string{}, ExtraFiles: files,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	require.NoError(t, cmd.Start())
	_ = outW.Close()
	for _, f := range owned {
		_ = f.Close()
	}
	defer func() { _ = cmd.Process.Kill() }() // Best effort: it has exited when the test passed.
	require.NoError(t, w.AwaitReady(outR, 20*time.Second))
	require.NoError(t, w.Exec(argv, env, false, false))
	require.NoError(t, outR.SetReadDeadline(time.Now().Add(20*time.Second)))
	var out bytes.Buffer
	_, err = out.ReadFrom(outR)
	require.NoError(t, err)
	err = cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// Say which signal ended bwrap, should it happen again.
			t.Logf("bwrap ended by signal %v after printing %q", ws.Signal(), out.String())
		}
	} else {
		require.NoError(t, err)
	}
	return out.String(), code
}

// sortedLines sorts the lines of s the way the cases list them.
func sortedLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "")
}

func TestWarmSandboxPassesTheEnvironmentExactly(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap not installed")
	}
	p, err := New(Config{}, t.TempDir(), nil)
	require.NoError(t, err)
	// The shell's own environment, as exec gave it: a shell drops names
	// it cannot hold from what it passes on.
	argv := []string{"/bin/sh", "-c", "tr '\\0' '\\n' </proc/$$/environ; exit 3"}
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"shell names (exported by the stub)", []string{"A=1", "B=it's \"x\" $(no) `no`", "EMPTY="}},
		{"a name no shell exports (through env -i)", []string{"A=1", "odd.name-x=2"}},
		{"no variables at all", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, code := runWarm(t, p, argv, c.env)
			assert.Equal(t, 3, code)
			want := ""
			for _, kv := range c.env {
				want += kv + "\n"
			}
			assert.Equal(t, want, sortedLines(out), "exactly the variables given")
			assert.NotContains(t, out, "/dev/fd/3", "nothing of the stub")
		})
	}
}
