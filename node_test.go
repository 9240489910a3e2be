//go:build linux

package bgexec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNodeForeground(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	reg := nodeRegistry(t, d, Config{}, nil)
	sc := reg.Scope("agent:main:main")

	t.Run("output of both streams and the exit code come from the node", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "echo out; echo err >&2; exit 3"})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		require.NotNil(t, res.Details.ExitCode)
		assert.Equal(t, 3, *res.Details.ExitCode)
		assert.Contains(t, res.Text(), "out")
		assert.Contains(t, res.Text(), "err")
		assert.NotContains(t, res.Text(), "bgexec1")
	})
	t.Run("a signal's name comes from the node", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "kill -s TERM $$"})
		assert.Equal(t, StatusFailed, res.Details.Status, res.Text())
		assert.Equal(t, "SIGTERM", res.Details.ExitSignal, res.Text())
		assert.Equal(t, ExitReasonSignal, res.Details.ExitReason)
	})
	t.Run("env and markers are set on the node", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: `printf '%s|%s|%s\n' "$FOO" "$OPENCLAW_SHELL" "$OPENCLAW_CLI"`, Env: map[string]string{"FOO": "a b'c\\d"}})
		assert.Equal(t, "a b'c\\d|exec|1", strings.TrimSpace(res.Text()))
	})
}
