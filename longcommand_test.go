//go:build linux

package bgexec

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// padded returns `: xxx…; tail` of exactly n bytes: a no-op command with a
// long argument, then tail.
func padded(t *testing.T, n int, tail string) string {
	t.Helper()
	head, sep := ": ", "; "
	pad := n - len(head) - len(sep) - len(tail)
	require.Positive(t, pad)
	return head + strings.Repeat("x", pad) + sep + tail
}

// Commands of any length run through the tools, on pipes, on a
// terminal and in the background. How the gateway host hands a long one
// to the shell (a script on fd 3 past local.MaxArgCommand, the same
// behaviour as -c, no descriptor leaked) is tested in
// internal/host/local.
func TestCommandsOfAnyLength(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")

	t.Run("a 10 MB command runs", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: padded(t, 10<<20, "echo ok")})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		assert.Equal(t, "ok", res.Text())
		assert.Equal(t, 0, *res.Details.ExitCode)
	})

	t.Run("a 10 MB command runs through Call, all of it", func(t *testing.T) {
		// A here-document of 10 MB: wc counts what reached the shell.
		line := strings.Repeat("y", 999) + "\n"
		body := strings.Repeat(line, 10<<10)
		args, err := json.Marshal(map[string]string{"command": "wc -c <<'EOF'\n" + body + "EOF\necho ok"})
		require.NoError(t, err)
		// 10 MB of JSON is slow to decode under the race detector on a
		// busy machine: this call gets minutes, not testCtx's 60 s.
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		res, err := sc.Call(ctx, ToolExec, args)
		require.NoError(t, err)
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text()[:min(len(res.Text()), 200)])
		assert.Equal(t, strconv.Itoa(len(body))+"\nok", res.Text())
		assert.Equal(t, 0, *res.Details.ExitCode)
	})

	t.Run("under a PTY too", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: padded(t, 1<<20, "echo ok"), PTY: true})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		assert.Equal(t, "ok", res.Text())
	})

	t.Run("in the background, killed like any other", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: padded(t, 1<<20, "echo ready; sleep 30")})
		waitFor(t, sc, id, `^ready$`)
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		res := waitExit(t, sc, id)
		assert.Equal(t, ExitReasonKilled, res.Details.ExitReason)
	})
}
