//go:build linux

package bgexec

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const nonInteractiveProbe = `printf '%s|%s|%s|%s|%s\n' "${GIT_TERMINAL_PROMPT-unset}" "${GCM_INTERACTIVE-unset}" "${DEBIAN_FRONTEND-unset}" "${PIP_NO_INPUT-unset}" "$PAGER"`

// Not parallel: it sets the keys in the test's environment.
func TestNonInteractiveEnv(t *testing.T) {
	t.Setenv("GIT_TERMINAL_PROMPT", "1")
	t.Setenv("DEBIAN_FRONTEND", "dialog")
	for _, k := range []string{"GCM_INTERACTIVE", "PIP_NO_INPUT"} {
		t.Setenv(k, "")
		require.NoError(t, os.Unsetenv(k))
	}
	t.Run("off by default: inherited values stay, nothing is added", func(t *testing.T) {
		sc := newTestRegistry(t, Config{}).Scope("a")
		res := mustExec(t, sc, &ExecRequest{Command: nonInteractiveProbe})
		assert.Equal(t, "1|unset|dialog|unset|cat", res.Text())
	})
	sc := newTestRegistry(t, Config{NonInteractive: true}).Scope("a")
	t.Run("on: the documented list is set over inherited values", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: nonInteractiveProbe})
		assert.Equal(t, "0|never|noninteractive|1|cat", res.Text())
	})
	t.Run("a per-call env wins", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: nonInteractiveProbe, Env: map[string]string{"DEBIAN_FRONTEND": "readline"}})
		assert.Equal(t, "0|never|readline|1|cat", res.Text())
	})
	t.Run("under a PTY too", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: nonInteractiveProbe, PTY: true})
		assert.Equal(t, "0|never|noninteractive|1|cat", strings.TrimSpace(res.Text()))
	})
	t.Run("git does not prompt for credentials", func(t *testing.T) {
		needTool(t, "git")
		// A URL whose server asks for credentials is not needed: with no
		// helper and no terminal prompt git fails at once on a missing
		// username instead of opening /dev/tty.
		res := mustExec(t, sc, &ExecRequest{Command: `git -c credential.helper= credential fill <<EOF
protocol=https
host=example.invalid

EOF`, PTY: true})
		assert.Contains(t, res.Text(), "terminal prompts disabled")
	})
}

func TestNonInteractiveEnvOnNode(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	reg := nodeRegistry(t, d, Config{NonInteractive: true}, nil)
	sc := reg.Scope("a")
	res := mustExec(t, sc, &ExecRequest{Command: strings.TrimSuffix(nonInteractiveProbe, ` "$PAGER"`) + ` ""`, Env: map[string]string{"PIP_NO_INPUT": "0"}})
	assert.Equal(t, "0|never|noninteractive|0|", strings.TrimSpace(res.Text()))
	require.False(t, res.IsError)
}
