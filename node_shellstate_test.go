//go:build linux

package bgexec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Shell state on nodes, against a real sshd on loopback: two nodes on
// the same server, so a state that leaked from one node to the other
// would show.
func TestNodeShellState(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	for _, shell := range stateShells(t) {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			t.Parallel()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755))
			// The state files go to a directory of this test (TMPDIR is
			// set per call), so the test can see that none is left.
			tmp := t.TempDir()
			n := d.node()
			n.Shell, n.Workdir = shell, dir
			cfg := Config{Host: "node", KeepShellState: true, Nodes: map[string]Node{"n1": n, "n2": n}, DefaultNode: "n1"}
			reg := newTestRegistry(t, cfg)
			sc := reg.Scope("a")
			run := func(t *testing.T, req *ExecRequest) string {
				t.Helper()
				env := map[string]string{"TMPDIR": tmp}
				for k, v := range req.Env {
					env[k] = v
				}
				req.Env = env
				res := mustExec(t, sc, req)
				require.NotEqual(t, StatusRunning, res.Details.Status, res.Text())
				return res.Text()
			}
			t.Run("cd carries, and the output is untouched", func(t *testing.T) {
				assert.Equal(t, "moved", run(t, &ExecRequest{Command: "cd sub && echo moved"}))
				assert.Equal(t, filepath.Join(dir, "sub"), run(t, &ExecRequest{Command: "pwd"}))
				assert.Equal(t, filepath.Join(dir, "sub", "deeper"), run(t, &ExecRequest{Command: "cd deeper; pwd"}))
				assert.Equal(t, filepath.Join(dir, "sub", "deeper"), run(t, &ExecRequest{Command: "pwd"}))
				res := mustExec(t, sc, &ExecRequest{Command: "echo out; echo err >&2", Env: map[string]string{"TMPDIR": tmp}})
				// stdout and stderr come over the SSH channel as two streams,
				// so their order is not kept.
				assert.ElementsMatch(t, []string{"out", "err"}, strings.Split(res.Text(), "\n"), "nothing of the state in the output")
			})
			t.Run("a per-call workdir applies to that call only; a relative one is taken from the state", func(t *testing.T) {
				assert.Equal(t, dir, run(t, &ExecRequest{Command: "pwd", Workdir: dir}))
				assert.Equal(t, filepath.Join(dir, "sub", "deeper"), run(t, &ExecRequest{Command: "pwd"}))
				assert.Equal(t, filepath.Join(dir, "sub"), run(t, &ExecRequest{Command: "pwd", Workdir: ".."}))
			})
			t.Run("the state is the node's own: another node, on the same server, starts fresh", func(t *testing.T) {
				run(t, &ExecRequest{Command: "export ONLY_N1=1"})
				assert.Equal(t, dir+"|unset", run(t, &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "${ONLY_N1-unset}"`, Node: "n2"}))
				assert.Equal(t, filepath.Join(dir, "sub", "deeper")+"|1", run(t, &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "${ONLY_N1-unset}"`, Node: "n1"}))
			})
			t.Run("export and unset carry, also of the node's own variables; a per-call env does not", func(t *testing.T) {
				run(t, &ExecRequest{Command: "export FOO='a b\nc'; export KEEP=1"})
				assert.Equal(t, "a b\nc|1", run(t, &ExecRequest{Command: `printf '%s|%s' "$FOO" "$KEEP"`}))
				run(t, &ExecRequest{Command: "unset FOO"})
				assert.Equal(t, "unset|1", run(t, &ExecRequest{Command: `printf '%s|%s' "${FOO-unset}" "$KEEP"`}))
				// SSH_CONNECTION is the server's, set at every login.
				assert.NotEqual(t, "unset", run(t, &ExecRequest{Command: `printf '%s' "${SSH_CONNECTION-unset}"`}))
				run(t, &ExecRequest{Command: "unset SSH_CONNECTION"})
				assert.Equal(t, "unset", run(t, &ExecRequest{Command: `printf '%s' "${SSH_CONNECTION-unset}"`}))
				assert.Equal(t, "x", run(t, &ExecRequest{Command: `printf '%s' "$BAR"`, Env: map[string]string{"BAR": "x"}}))
				assert.Equal(t, "unset", run(t, &ExecRequest{Command: `printf '%s' "${BAR-unset}"`}))
				run(t, &ExecRequest{Command: `export BAR=changed`, Env: map[string]string{"BAR": "x"}})
				assert.Equal(t, "changed", run(t, &ExecRequest{Command: `printf '%s' "${BAR-unset}"`}))
			})
			t.Run("a PATH change carries", func(t *testing.T) {
				bin := filepath.Join(dir, "venv", "bin")
				require.NoError(t, os.MkdirAll(bin, 0o755))
				proctest.WriteExecutable(t, filepath.Join(bin, "venvtool"), []byte("#!/bin/sh\necho from the venv\n"), 0o755)
				run(t, &ExecRequest{Command: `export PATH="` + bin + `:$PATH"`})
				assert.Equal(t, "from the venv", run(t, &ExecRequest{Command: "venvtool"}))
			})
			t.Run("a failing command still carries its state", func(t *testing.T) {
				res := mustExec(t, sc, &ExecRequest{Command: "cd " + dir + " && export FAILED=yes && false", Env: map[string]string{"TMPDIR": tmp}})
				require.NotNil(t, res.Details.ExitCode, res.Text())
				assert.Equal(t, 1, *res.Details.ExitCode)
				assert.Equal(t, dir+"|yes", run(t, &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "$FAILED"`}))
			})
			t.Run("an exec that exits early still carries its state, and keeps its exit code", func(t *testing.T) {
				res := mustExec(t, sc, &ExecRequest{Command: "cd sub; export EARLY=1; exit 7; export EARLY=2", Env: map[string]string{"TMPDIR": tmp}})
				require.NotNil(t, res.Details.ExitCode, res.Text())
				assert.Equal(t, 7, *res.Details.ExitCode)
				assert.Equal(t, filepath.Join(dir, "sub")+"|1", run(t, &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "$EARLY"`}))
				res = mustExec(t, sc, &ExecRequest{Command: "set -e; cd deeper; false; cd ..", Env: map[string]string{"TMPDIR": tmp}})
				require.NotNil(t, res.Details.ExitCode, res.Text())
				assert.Equal(t, 1, *res.Details.ExitCode)
				assert.Equal(t, filepath.Join(dir, "sub", "deeper"), run(t, &ExecRequest{Command: "pwd"}))
			})
			t.Run("variables the environment rules refuse are not carried, and the result says so", func(t *testing.T) {
				res := mustExec(t, sc, &ExecRequest{Command: "export NODE_OPTIONS=--require=/tmp/x.js LD_PRELOAD=/tmp/x.so OK=1; echo set", Env: map[string]string{"TMPDIR": tmp}})
				assert.Equal(t, "set\n\nNote: not carried to the next exec (refused by the environment rules): LD_PRELOAD, NODE_OPTIONS.", res.Text())
				assert.Equal(t, []string{"LD_PRELOAD", "NODE_OPTIONS"}, res.Details.NotCarried)
				assert.Equal(t, "unset|unset|1", run(t, &ExecRequest{Command: `printf '%s|%s|%s' "${NODE_OPTIONS-unset}" "${LD_PRELOAD-unset}" "$OK"`}))
			})
			t.Run("a state directory removed meanwhile gives a warning and the default directory", func(t *testing.T) {
				gone := filepath.Join(dir, "gone")
				run(t, &ExecRequest{Command: "mkdir " + gone + " && cd " + gone})
				require.NoError(t, os.Remove(gone))
				res := mustExec(t, sc, &ExecRequest{Command: "pwd", Env: map[string]string{"TMPDIR": tmp}})
				assert.Contains(t, res.Text(), `Warning: workdir "`+gone+`" (left by the previous exec) is unavailable on node n1; using "`+dir+`".`)
				assert.True(t, strings.HasSuffix(res.Text(), "\n"+dir), res.Text())
				run(t, &ExecRequest{Command: "cd sub/deeper"})
			})
			t.Run("background sessions leave the state alone", func(t *testing.T) {
				before := run(t, &ExecRequest{Command: "pwd"})
				id := startBackground(t, sc, &ExecRequest{Command: "cd " + dir + "; export BG=1", Env: map[string]string{"TMPDIR": tmp}})
				require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
				assert.Equal(t, before+"|unset", run(t, &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "${BG-unset}"`}))
			})
			t.Run("a scope has its own state", func(t *testing.T) {
				res := mustExec(t, reg.Scope("b"), &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "${KEEP-unset}"`})
				assert.Equal(t, dir+"|unset", res.Text())
			})
			t.Run("reset forgets it on every node: the method, then the process action", func(t *testing.T) {
				run(t, &ExecRequest{Command: "cd sub; export KEEP=3", Node: "n2"})
				had, err := sc.ResetShellState(testCtx(t))
				require.NoError(t, err)
				assert.True(t, had)
				for _, node := range []string{"n1", "n2"} {
					assert.Equal(t, dir+"|unset|1", run(t, &ExecRequest{Command: `printf '%s|%s|%s' "$(pwd)" "${KEEP-unset}" "${SSH_CONNECTION:+1}"`, Node: node}), node)
				}
				run(t, &ExecRequest{Command: "cd sub; export KEEP=2"})
				res := mustProcess(t, sc, &ProcessRequest{Action: "reset-shell"})
				assert.False(t, res.IsError, res.Text())
				assert.Equal(t, "Shell state reset: the next exec starts in the default workdir with the host's environment.", res.Text())
				assert.Equal(t, dir+"|unset", run(t, &ExecRequest{Command: `printf '%s|%s' "$(pwd)" "${KEEP-unset}"`}))
			})
			t.Run("no state file is left on the node", func(t *testing.T) {
				left, err := filepath.Glob(filepath.Join(tmp, "bgexec-state-*"))
				require.NoError(t, err)
				assert.Empty(t, left)
			})
		})
	}
}

// An attack on a node: a command puts a directory of its own first on
// the node's carried PATH, with a program named like a listed one.
// Without the check, the next exec's "ls" passed as the listed ls and
// ran the impostor on the node unasked.
func TestNodeShellStateAllowlistCarriedPath(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	proctest.WriteExecutable(t, filepath.Join(bin, "ls"), []byte("#!/bin/sh\necho impostor\n"), 0o755)
	appr := &recordingApprover{}
	reg := nodeRegistry(t, d, Config{KeepShellState: true, Security: "allowlist", Ask: "on-miss", Allowlist: []string{"ls"}, Approver: appr}, func(n *Node) { n.Workdir = dir })
	sc := reg.Scope("a")

	assert.NotEqual(t, "impostor", mustExec(t, sc, &ExecRequest{Command: "ls"}).Text())
	assert.Empty(t, appr.take(), "ls is listed: no approval")

	mustExec(t, sc, &ExecRequest{Command: "export PATH=" + bin + ":$PATH"})
	appr.take()

	res := mustExec(t, sc, &ExecRequest{Command: "ls"})
	assert.Equal(t, []string{"ls"}, appr.take(), "the carried PATH is the node's: ls is not taken for the listed ls")
	assert.Equal(t, "impostor", res.Text(), "the approved command ran on the carried PATH")

	mustProcess(t, sc, &ProcessRequest{Action: "reset-shell"})
	assert.NotEqual(t, "impostor", mustExec(t, sc, &ExecRequest{Command: "ls"}).Text())
	assert.Empty(t, appr.take(), "after reset-shell ls is the listed ls again")
}
