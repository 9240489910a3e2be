//go:build linux

package bgexec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stateShells are the shells shell state must work under: sh (dash
// where it is /bin/sh, as in CI) and bash.
func stateShells(t *testing.T) []string {
	shells := []string{needTool(t, "dash")}
	return append(shells, needTool(t, "bash"))
}

func TestShellState(t *testing.T) {
	t.Parallel()
	for _, shell := range stateShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			t.Parallel()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			reg := newTestRegistry(t, Config{Shell: shell, KeepShellState: true, Workdir: dir})
			sc := reg.Scope("a")
			run := func(t *testing.T, req *ExecRequest) string {
				t.Helper()
				res := mustExec(t, sc, req)
				require.NotEqual(t, StatusRunning, res.Details.Status, res.Text())
				return res.Text()
			}
			t.Run("cd carries, and the output is untouched", func(t *testing.T) {
				assert.Equal(t, "made", run(t, &ExecRequest{Command: "mkdir -p sub/deeper && cd sub && echo made"}))
				assert.Equal(t, filepath.Join(dir, "sub"), run(t, &ExecRequest{Command: "pwd"}))
				assert.Equal(t, filepath.Join(dir, "sub", "deeper"), run(t, &ExecRequest{Command: "cd deeper; pwd"}))
				assert.Equal(t, filepath.Join(dir, "sub", "deeper"), run(t, &ExecRequest{Command: "pwd"}))
			})
			t.Run("a per-call workdir applies to that call only; a relative one is taken from the state", func(t *testing.T) {
				assert.Equal(t, dir, run(t, &ExecRequest{Command: "pwd", Workdir: dir}))
				assert.Equal(t, filepath.Join(dir, "sub", "deeper"), run(t, &ExecRequest{Command: "pwd"}))
				assert.Equal(t, filepath.Join(dir, "sub"), run(t, &ExecRequest{Command: "pwd", Workdir: ".."}))
			})
			t.Run("export and unset carry; a per-call env does not", func(t *testing.T) {
				run(t, &ExecRequest{Command: "export FOO='a b\nc'; export KEEP=1"})
				assert.Equal(t, "a b\nc|1", run(t, &ExecRequest{Command: `printf '%s|%s' "$FOO" "$KEEP"`}))
				run(t, &ExecRequest{Command: "unset FOO"})
				assert.Equal(t, "unset|1", run(t, &ExecRequest{Command: `printf '%s|%s' "${FOO-unset}" "$KEEP"`}))
				assert.Equal(t, "x", run(t, &ExecRequest{Command: `printf '%s' "$BAR"`, Env: map[string]string{"BAR": "x"}}))
				assert.Equal(t, "unset", run(t, &ExecRequest{Command: `printf '%s' "${BAR-unset}"`}))
				run(t, &ExecRequest{Command: `export BAR=changed`, Env: map[string]string{"BAR": "x"}})
				assert.Equal(t, "changed", run(t, &ExecRequest{Command: `printf '%s' "${BAR-unset}"`}))
			})
			t.Run("a failing command still carries its state", func(t *testing.T) {
				res := mustExec(t, sc, &ExecRequest{Command: "cd " + dir + " && export FAILED=yes && false"})
				require.NotNil(t, res.Details.ExitCode)
				assert.Equal(t, 1, *res.Details.ExitCode)
				assert.Equal(t, dir+"|yes", run(t, &ExecRequest{Command: `printf '%s|%s' "$PWD" "$FAILED"`}))
			})
			t.Run("an exec that exits early still carries its state, and keeps its exit code", func(t *testing.T) {
				res := mustExec(t, sc, &ExecRequest{Command: "cd sub; export EARLY=1; exit 7; export EARLY=2"})
				require.NotNil(t, res.Details.ExitCode)
				assert.Equal(t, 7, *res.Details.ExitCode)
				assert.Equal(t, filepath.Join(dir, "sub")+"|1", run(t, &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "$EARLY"`}))
				res = mustExec(t, sc, &ExecRequest{Command: "set -e; cd deeper; false; cd .."})
				assert.Equal(t, 1, *res.Details.ExitCode)
				assert.Equal(t, filepath.Join(dir, "sub", "deeper"), run(t, &ExecRequest{Command: "pwd"}))
			})
			t.Run("variables the environment rules refuse are not carried, and the result says so", func(t *testing.T) {
				res := mustExec(t, sc, &ExecRequest{Command: "export NODE_OPTIONS=--require=/tmp/x.js LD_PRELOAD=/tmp/x.so OK=1; echo set"})
				assert.Equal(t, "set\n\nNote: not carried to the next exec (refused by the environment rules): LD_PRELOAD, NODE_OPTIONS.", res.Text())
				assert.Equal(t, []string{"LD_PRELOAD", "NODE_OPTIONS"}, res.Details.NotCarried)
				assert.Equal(t, "unset|unset|1", run(t, &ExecRequest{Command: `printf '%s|%s|%s' "${NODE_OPTIONS-unset}" "${LD_PRELOAD-unset}" "$OK"`}))
			})
			t.Run("a command that redirects fd 4 itself keeps its file clean", func(t *testing.T) {
				run(t, &ExecRequest{Command: "exec 4>" + dir + "/fd4.txt; echo mine >&4; export FD4=1"})
				b, err := os.ReadFile(filepath.Join(dir, "fd4.txt"))
				require.NoError(t, err)
				assert.Equal(t, "mine\n", string(b))
			})
			t.Run("background sessions leave the state alone", func(t *testing.T) {
				before := run(t, &ExecRequest{Command: "pwd"})
				id := startBackground(t, sc, &ExecRequest{Command: "cd " + dir + "; export BG=1"})
				require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
				assert.Equal(t, before+"|unset", run(t, &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "${BG-unset}"`}))
			})
			t.Run("a scope has its own state", func(t *testing.T) {
				assert.Equal(t, dir+"|unset", strings.TrimSpace(mustExec(t, reg.Scope("b"), &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "${KEEP-unset}"`}).Text()))
			})
			t.Run("reset forgets it: the method, then the process action", func(t *testing.T) {
				had, err := sc.ResetShellState(testCtx(t))
				require.NoError(t, err)
				assert.True(t, had)
				assert.Equal(t, dir+"|unset", run(t, &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "${KEEP-unset}"`}))
				run(t, &ExecRequest{Command: "cd sub; export KEEP=2"})
				res := mustProcess(t, sc, &ProcessRequest{Action: "reset-shell"})
				assert.False(t, res.IsError, res.Text())
				assert.Equal(t, "Shell state reset: the next exec starts in the default workdir with the host's environment.", res.Text())
				assert.Equal(t, dir+"|unset", run(t, &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "${KEEP-unset}"`}))
			})
		})
	}
}

func TestShellStateOffByDefault(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	sc := newTestRegistry(t, Config{Workdir: dir}).Scope("a")
	mustExec(t, sc, &ExecRequest{Command: "mkdir sub; cd sub; export FOO=1"})
	assert.Equal(t, dir+"|unset", mustExec(t, sc, &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "${FOO-unset}"`}).Text())
	res := mustProcess(t, sc, &ProcessRequest{Action: "reset-shell"})
	assert.Contains(t, res.Text(), "Shell state is not kept here")
}

func TestShellStateVenv(t *testing.T) {
	t.Parallel()
	py := needTool(t, "python3")
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	venv := filepath.Join(dir, "venv")
	out, err := runCmd(py, "-m", "venv", "--without-pip", venv)
	require.NoError(t, err, out)
	for _, shell := range stateShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			sc := newTestRegistry(t, Config{Shell: shell, KeepShellState: true, Workdir: dir}).Scope("a")
			res := mustExec(t, sc, &ExecRequest{Command: ". venv/bin/activate"})
			// activate exports VIRTUAL_ENV, which the rules refuse as an
			// override: it is named, and PATH carries all the same.
			assert.Contains(t, res.Details.NotCarried, "VIRTUAL_ENV")
			res = mustExec(t, sc, &ExecRequest{Command: "command -v python"})
			assert.Equal(t, filepath.Join(venv, "bin", "python"), res.Text())
			res = mustExec(t, sc, &ExecRequest{Command: "python -c 'import sys; print(sys.prefix)'"})
			assert.Equal(t, venv, res.Text())
		})
	}
}

// recordingApprover approves everything and records what it was asked.
type recordingApprover struct {
	mu    sync.Mutex
	asked []string
}

func (a *recordingApprover) Approve(_ context.Context, req *ApprovalRequest) (bool, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req.Command)
	return true, "", nil
}

func (a *recordingApprover) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	got := a.asked
	a.asked = nil
	return got
}

// An attack: a command puts a directory of its own first on the carried
// PATH, with a program named like a listed one. Without the check, the
// next exec's "ls" passed as the listed ls and ran the impostor unasked.
func TestShellStateAllowlistFollowsTheCarriedPath(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	proctest.WriteExecutable(t, filepath.Join(bin, "ls"), []byte("#!/bin/sh\necho impostor\n"), 0o755)
	appr := &recordingApprover{}
	sc := newTestRegistry(t, Config{KeepShellState: true, Workdir: dir, Security: "allowlist", Ask: "on-miss", Allowlist: []string{"ls"}, Approver: appr}).Scope("a")

	assert.NotEqual(t, "impostor", mustExec(t, sc, &ExecRequest{Command: "ls"}).Text())
	assert.Empty(t, appr.take(), "ls is listed: no approval")

	mustExec(t, sc, &ExecRequest{Command: "export PATH=" + bin + ":$PATH"})
	appr.take()

	res := mustExec(t, sc, &ExecRequest{Command: "ls"})
	assert.Equal(t, []string{"ls"}, appr.take(), "the carried PATH resolves ls elsewhere: it is not the listed ls")
	assert.Equal(t, "impostor", res.Text())
}

func runCmd(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
