//go:build linux

package bgexec

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWait(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")

	t.Run("a pattern printed in two pieces matches the whole line", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("pieces", "server listen", "ing on 8080"), Stdin: "pipe"})
		waitFor(t, sc, id, "server listen")
		// The first piece alone must not match.
		res := mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Pattern: "listening on \\d+", Timeout: ptr(Number(300))})
		assert.Equal(t, "timeout", res.Details.Condition)
		assert.Equal(t, "Timed out after 300 ms; the condition did not hold.\n\n(no new output)\n\nProcess still running.", res.Text())

		go func() { _, _ = sc.Process(testCtx(t), &ProcessRequest{Action: "write", SessionID: id, Data: "go\n"}) }()
		res = waitFor(t, sc, id, "listening on \\d+")
		assert.Equal(t, "server listening on 8080", res.Details.Matched)
		assert.True(t, strings.HasPrefix(res.Text(), "Pattern matched: server listening on 8080\n\n"), res.Text())
		assert.True(t, strings.HasSuffix(res.Text(), "Process still running."))
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("a port opened after a delay is found", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("listen"), Stdin: "pipe"})
		line := make(chan string, 1)
		go func() {
			_, _ = sc.Process(testCtx(t), &ProcessRequest{Action: "write", SessionID: id, Data: "open\n"})
			r, _ := sc.Process(testCtx(t), &ProcessRequest{Action: "wait", SessionID: id, Pattern: `^port \d+$`, Timeout: ptr(Number(20000))})
			line <- r.Details.Matched
		}()
		port, err := strconv.Atoi(strings.TrimPrefix(<-line, "port "))
		require.NoError(t, err)
		res := mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Port: port, Timeout: ptr(Number(20000))})
		assert.Equal(t, "port", res.Details.Condition)
		assert.Equal(t, port, res.Details.Port)
		assert.True(t, strings.HasPrefix(res.Text(), "Port "+strconv.Itoa(port)+" is accepting connections."))
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("wait without a condition returns on exit with the exit line", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: "sleep 0.2; echo finished; exit 5"})
		res := waitExit(t, sc, id)
		assert.Equal(t, "The process ended.\n\nfinished\n\nProcess exited with code 5.", res.Text())
		require.NotNil(t, res.Details.ExitCode)
		assert.Equal(t, 5, *res.Details.ExitCode)
	})

	t.Run("an exit before the pattern returns at once and says so", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: "echo nope"})
		res := mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Pattern: "never", Timeout: ptr(Number(60000))})
		assert.Equal(t, "exit", res.Details.Condition)
		assert.True(t, strings.HasPrefix(res.Text(), "The process ended before the condition held."), res.Text())
	})

	t.Run("bad conditions are failures", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("hang")})
		res := mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Pattern: "(unclosed"})
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.True(t, strings.HasPrefix(res.Text(), "Invalid pattern: "), res.Text())
		res = mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Port: 70000})
		assert.Equal(t, "Invalid port 70000: pass a TCP port from 1 to 65535.", res.Text())
		res = mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Port: -1})
		assert.Equal(t, "Invalid port -1: pass a TCP port from 1 to 65535.", res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
}
