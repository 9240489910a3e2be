//go:build linux

package bgexec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunningTextShowsTheOutputSoFar(t *testing.T) {
	// Parallel: its sessions are its own; it counts nothing process-wide.
	t.Parallel()
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

func TestRunningTextOnAPTYShowsTheLastLines(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")

	t.Run("a flood shows its last 20 lines and names the log lines before them", func(t *testing.T) {
		// The yield window is the bound: seq prints 3000 lines in
		// milliseconds, even under the race detector on a loaded machine.
		res := mustExec(t, sc, &ExecRequest{Command: "seq 1 3000; exec sleep 30", PTY: true, YieldMs: ptr(5000.0)})
		require.Equal(t, StatusRunning, res.Details.Status, res.Text())
		id := res.Details.SessionID
		defer mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		assert.Len(t, res.Details.Tail, tailChars, "details.tail keeps the last 2000 characters")
		var last []string
		for i := 2981; i <= 3000; i++ {
			last = append(last, itoa(i))
		}
		_, so, ok := strings.Cut(res.Text(), "\n\nOutput so far:\n")
		require.True(t, ok, res.Text())
		assert.Equal(t, "[2980 earlier lines not shown: process log offset 0 limit 2980]\n"+strings.Join(last, "\n"), so)
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(2979), Limit: ptr(2)})
		assert.Equal(t, "2980\n2981", log.Text(), "the named offset and limit end just before the first line shown")
	})

	t.Run("empty lines at the end count as log lines", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: `seq 1 30; printf '\n\n'; exec sleep 30`, PTY: true, YieldMs: ptr(5000.0)})
		require.Equal(t, StatusRunning, res.Details.Status, res.Text())
		id := res.Details.SessionID
		defer mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		_, so, ok := strings.Cut(res.Text(), "\n\nOutput so far:\n")
		require.True(t, ok, res.Text())
		var last []string
		for i := 11; i <= 30; i++ {
			last = append(last, itoa(i))
		}
		assert.Equal(t, "[10 earlier lines not shown: process log offset 0 limit 10]\n"+strings.Join(last, "\n"), so)
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(9), Limit: ptr(2)})
		assert.Equal(t, "10\n11", log.Text())
	})

	t.Run("a pipe session's text keeps the whole tail", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "seq 1 3000; exec sleep 30", YieldMs: ptr(5000.0)})
		require.Equal(t, StatusRunning, res.Details.Status, res.Text())
		defer mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: res.Details.SessionID})
		assert.True(t, strings.HasSuffix(res.Text(), "\n\nOutput so far:\n"+strings.TrimSuffix(res.Details.Tail, "\n")), res.Text())
	})
}
