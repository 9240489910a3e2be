//go:build linux

package bgexec

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const inputWaitLine = `No new output for \d+s; this session may be waiting for input\. Use process write, send-keys, submit, or paste to provide input\.`

// awaitInputWait polls until the log shows the whole prompt (prompt)
// and poll says the session may be waiting for input, and returns that
// poll.
func awaitInputWait(t *testing.T, sc *Scope, id, prompt string) *Result {
	t.Helper()
	var res *Result
	require.Eventually(t, func() bool {
		shown := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text()
		if prompt != "" && !strings.HasPrefix(shown, prompt) {
			return false
		}
		res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		return res.Details.WaitingForInput != nil && *res.Details.WaitingForInput
	}, 20*time.Second, 20*time.Millisecond, "the session was never seen waiting for input")
	return res
}

// listLine returns the list text's line for id.
func listLine(t *testing.T, sc *Scope, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + ` .*$`).FindString(mustProcess(t, sc, &ProcessRequest{Action: "list"}).Text())
	require.NotEmpty(t, m, "no list line for %s", id)
	return m
}

// TestInputWaitFromWhatTheProcessDoes: the input-wait hint is decided by
// the process being blocked reading its stdin or terminal, on pipes and
// PTYs, never by the shape of the output.
func TestInputWaitFromWhatTheProcessDoes(t *testing.T) {
	// Parallel: the blocked read is found in its own sessions' /proc entries.
	t.Parallel()
	reg := newTestRegistry(t, Config{InputWaitIdleMs: 300})
	sc := reg.Scope("a")

	check := func(t *testing.T, id, prompt string) {
		t.Helper()
		res := awaitInputWait(t, sc, id, prompt)
		assert.Regexp(t, `\n\n`+inputWaitLine+`$`, res.Text())
		assert.NotContains(t, res.Text(), "Process still running.")
		d := res.Details
		require.NotNil(t, d.StdinWritable)
		assert.True(t, *d.StdinWritable)
		require.NotNil(t, d.IdleMs)
		assert.GreaterOrEqual(t, *d.IdleMs, int64(300))
		require.NotNil(t, d.LastOutputAt)
		assert.InDelta(t, time.Now().UnixMilli()-*d.IdleMs, *d.LastOutputAt, 5000)
		assert.Regexp(t, ` \[input-wait\] :: `, listLine(t, sc, id))
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id})
		assert.Regexp(t, inputWaitLine+`$`, log.Text())
		require.NotNil(t, log.Details.WaitingForInput)
		assert.True(t, *log.Details.WaitingForInput)
	}

	t.Run("bash read -p on a pipe, which prints nothing, is waiting for input", func(t *testing.T) {
		needTool(t, "bash")
		id := startBackground(t, sc, &ExecRequest{Command: `bash -c 'read -p "Name? " x; echo "got:$x"'`, Stdin: "pipe"})
		check(t, id, "")
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "Ann\n"})
		assert.Contains(t, waitExit(t, sc, id).Text(), "got:Ann")
	})
	t.Run("a python3 input() prompt on a PTY is waiting for input", func(t *testing.T) {
		needTool(t, "python3")
		id := startBackground(t, sc, &ExecRequest{Command: `python3 -c 'x = input("Name? "); print("got:" + x)'`, PTY: true})
		check(t, id, "Name? ")
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "Ann\r"})
		assert.Contains(t, waitExit(t, sc, id).Text(), "got:Ann")
	})
	t.Run("a prompt on a pipe after complete lines is waiting for input", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: `printf '...\n...'; read x; echo "got:$x"`, Stdin: "pipe"})
		check(t, id, "...\n...")
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "Ann\n"})
		assert.Contains(t, waitExit(t, sc, id).Text(), "got:Ann")
	})
	t.Run("a progress bar of dots on a pipe is not waiting for input", func(t *testing.T) {
		// The same output as the prompt above, but the process sleeps.
		id := startBackground(t, sc, &ExecRequest{Command: `printf '...\n...'; sleep 60`, Stdin: "pipe"})
		require.Eventually(t, func() bool {
			return mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text() == "...\n..."
		}, 20*time.Second, 10*time.Millisecond)
		// A poll that waits a second with nothing printed: quiet past both
		// the quick note's 500 ms and the 300 ms threshold.
		mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id}) // drains the dots
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(1000))})
		assert.Equal(t, "(no new output)\n\nProcess still running.", res.Text())
		require.NotNil(t, res.Details.WaitingForInput)
		assert.False(t, *res.Details.WaitingForInput)
		assert.GreaterOrEqual(t, *res.Details.IdleMs, int64(1000))
		assert.NotContains(t, listLine(t, sc, id), "[input-wait]")
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
	t.Run("a quiet PTY program that is not reading is not waiting for input", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: `echo working; sleep 60`, PTY: true})
		require.Eventually(t, func() bool {
			return mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text() == "working"
		}, 20*time.Second, 10*time.Millisecond)
		mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(1000))})
		assert.Equal(t, "(no new output)\n\nProcess still running.", res.Text())
		assert.False(t, *res.Details.WaitingForInput)
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
}

// TestInputWaitQuickNote: the quick "(waiting for input?)" note of a pipe
// session (before the input-wait threshold) is decided by the blocked read
// too.
func TestInputWaitQuickNote(t *testing.T) {
	// Parallel: the blocked read is found in its own sessions' /proc entries.
	t.Parallel()
	reg := newTestRegistry(t, Config{}) // the 15 s threshold is far away
	sc := reg.Scope("a")
	t.Run("an unfinished line from a process reading stdin gets the note", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: `printf 'Continue? '; read x; echo "got:$x"`, Stdin: "pipe"})
		var res *Result
		require.Eventually(t, func() bool {
			res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(600))})
			return regexp.MustCompile(`\(waiting for input\?\)`).MatchString(res.Text())
		}, 20*time.Second, 10*time.Millisecond)
		assert.Regexp(t, `\(waiting for input\?\)\n\nProcess still running\.$`, res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "y\n"})
		assert.Contains(t, waitExit(t, sc, id).Text(), "got:y")
	})
	t.Run("bash read -p on a pipe, which prints nothing, gets the note", func(t *testing.T) {
		needTool(t, "bash")
		id := startBackground(t, sc, &ExecRequest{Command: `bash -c 'read -p "Name? " x; echo "got:$x"'`, Stdin: "pipe"})
		var res *Result
		require.Eventually(t, func() bool {
			res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(600))})
			return regexp.MustCompile(`\(waiting for input\?\)`).MatchString(res.Text())
		}, 20*time.Second, 10*time.Millisecond)
		assert.Regexp(t, `^\(no new output\)\n\(waiting for input\?\)\n\nProcess still running\.$`, res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "Ann\n"})
		assert.Contains(t, waitExit(t, sc, id).Text(), "got:Ann")
	})
	t.Run("a line of dots printed slowly by a process that does not read gets no note", func(t *testing.T) {
		// Dots every 100 ms, then quiet: the poll sees an unfinished line
		// quiet past the note's 500 ms, and the process is sleeping.
		id := startBackground(t, sc, &ExecRequest{Command: `for i in 1 2 3 4 5; do printf .; sleep 0.1; done; sleep 60`, Stdin: "pipe"})
		require.Eventually(t, func() bool {
			return mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text() == "....."
		}, 20*time.Second, 10*time.Millisecond)
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(1000))})
		assert.NotContains(t, res.Text(), "waiting for input")
		res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(1000))})
		assert.Equal(t, "(no new output)\n\nProcess still running.", res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
	t.Run("an unfinished line of dots from a sleeping process does not", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: `printf 'Working...'; sleep 60`, Stdin: "pipe"})
		require.Eventually(t, func() bool {
			return mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text() == "Working..."
		}, 20*time.Second, 10*time.Millisecond)
		mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(1000))})
		assert.Equal(t, "(no new output)\n\nProcess still running.", res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
}

// TestInputWaitFromEnv: the threshold's environment name.
func TestInputWaitFromEnv(t *testing.T) {
	c := ConfigFromEnv(func(k string) string {
		if k == "OPENCLAW_PROCESS_INPUT_WAIT_IDLE_MS" {
			return "2500"
		}
		return ""
	})
	assert.Equal(t, 2500, c.InputWaitIdleMs)
}

// TestInputWaitInTheSandbox: the blocked read is found inside the sandbox
// too (its processes are matched to the session's pipe and terminal by
// device and inode, not by path).
func TestInputWaitInTheSandbox(t *testing.T) {
	// Parallel: the blocked read is found in its own sessions' /proc entries.
	t.Parallel()
	reg := newSandboxRegistry(t, Config{InputWaitIdleMs: 300}, Sandbox{})
	sc := reg.Scope("a")
	for _, pty := range []bool{false, true} {
		name := map[bool]string{false: "on a pipe", true: "on a PTY"}[pty]
		t.Run("a read "+name+" is waiting for input", func(t *testing.T) {
			req := &ExecRequest{Command: `printf 'Name? '; read x; echo "got:$x"`, PTY: pty}
			if !pty {
				req.Stdin = "pipe"
			}
			id := startBackground(t, sc, req)
			res := awaitInputWait(t, sc, id, "Name? ")
			assert.Regexp(t, inputWaitLine+`$`, res.Text())
			mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "Ann\n"})
			assert.Contains(t, waitExit(t, sc, id).Text(), "got:Ann")
		})
	}
	t.Run("a sleeping command is not", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: `printf 'Name? '; sleep 60`, Stdin: "pipe"})
		awaitLog(t, sc, id, "Name? ")
		mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(1000))})
		assert.Equal(t, "(no new output)\n\nProcess still running.", res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
}
