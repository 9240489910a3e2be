//go:build linux

package bgexec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunningTextShowsTheOutputSoFar(t *testing.T) {
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	running := func(d Details) string {
		return "Command still running (session " + d.SessionID + ", pid " + itoa(d.Pid) + "). Use process (list/poll/log/kill/clear/remove) for follow-up." // closed stdin: no write
	}

	t.Run("without output the text is the reference text", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "sleep 30", YieldMs: ptr(200.0)})
		require.Equal(t, StatusRunning, res.Details.Status)
		assert.Equal(t, running(res.Details), res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: res.Details.SessionID})
	})

	t.Run("the tail follows, without its trailing line ends", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: `printf 'started\nstep 1\n\n\n'; sleep 30`, YieldMs: ptr(3000.0)})
		require.Equal(t, StatusRunning, res.Details.Status)
		assert.Equal(t, "started\nstep 1\n\n\n", res.Details.Tail)
		assert.Equal(t, running(res.Details)+"\n\nOutput so far:\nstarted\nstep 1", res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: res.Details.SessionID})
	})

	t.Run("only the last 2000 characters, as in details.tail", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: `head -c 5000 /dev/zero | tr '\0' x; echo; echo end; sleep 30`, YieldMs: ptr(3000.0)})
		require.Equal(t, StatusRunning, res.Details.Status)
		tail := res.Details.Tail
		assert.Len(t, tail, tailChars)
		assert.True(t, strings.HasSuffix(tail, "x\nend\n"), tail)
		assert.Equal(t, running(res.Details)+"\n\nOutput so far:\n"+strings.TrimSuffix(tail, "\n"), res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: res.Details.SessionID})
	})
}
