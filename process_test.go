//go:build linux

package bgexec

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProcessFailures(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	cases := []struct {
		name string
		req  ProcessRequest
		text string
	}{
		{"an unknown action", ProcessRequest{Action: "explode", SessionID: "x"}, "Unknown action explode. Expected one of: list, poll, log, write, send-keys, submit, paste, kill, clear, remove, resize, wait, screen, reset-shell"},
		{"a missing sessionId", ProcessRequest{Action: "poll"}, "sessionId is required for this action."},
		{"poll of an unknown session", ProcessRequest{Action: "poll", SessionID: "no-such"}, "No session found for no-such"},
		{"log of an unknown session", ProcessRequest{Action: "log", SessionID: "no-such"}, "No session found for no-such"},
		{"remove of an unknown session", ProcessRequest{Action: "remove", SessionID: "no-such"}, "No session found for no-such"},
		{"clear of an unknown session", ProcessRequest{Action: "clear", SessionID: "no-such"}, "No finished session found for no-such"},
		{"kill of an unknown session", ProcessRequest{Action: "kill", SessionID: "no-such"}, "No active session found for no-such"},
		{"write to an unknown session", ProcessRequest{Action: "write", SessionID: "no-such", Data: "x"}, "No active session found for no-such"},
		{"a path-like session id", ProcessRequest{Action: "poll", SessionID: "../../etc/passwd"}, "No session found for ../../etc/passwd"},
		{"a unicode session id", ProcessRequest{Action: "log", SessionID: "ünï-cødé😀"}, "No session found for ünï-cødé😀"},
		{"a very long session id", ProcessRequest{Action: "poll", SessionID: strings.Repeat("a", 10000)}, "No session found for " + strings.Repeat("a", 10000)},
		{"a blank session id", ProcessRequest{Action: "kill", SessionID: "  "}, "sessionId is required for this action."},
		{"a session id with a NUL", ProcessRequest{Action: "remove", SessionID: "a\x00b"}, "No session found for a\x00b"},
	}
	for _, c := range cases {
		t.Run(c.name+" is a failure result", func(t *testing.T) {
			res := mustProcess(t, sc, &c.req)
			assert.Equal(t, StatusFailed, res.Details.Status)
			assert.Equal(t, c.text, res.Text())
		})
	}
	t.Run("negative and huge paging values", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("lines", "3")})
		waitExit(t, sc, id)
		res := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(-1)})
		assert.Equal(t, "line 0\nline 1\nline 2", res.Text(), "a negative offset is 0")
		res = mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Limit: ptr(-5)})
		assert.Equal(t, "(no output recorded)", res.Text(), "a negative limit returns no lines")
		res = mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(1 << 40)})
		assert.Equal(t, "(no output recorded)", res.Text())
		res = mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Limit: ptr(1 << 40)})
		assert.Equal(t, "line 0\nline 1\nline 2", res.Text())
	})
	t.Run("JSON numeric strings are accepted for the poll timeout", func(t *testing.T) {
		res, err := sc.Call(testCtx(t), "process", json.RawMessage(`{"action":"poll","sessionId":"zz","timeout":"100"}`))
		require.NoError(t, err)
		assert.Equal(t, "No session found for zz", res.Text())
	})
}

func TestProcessScopes(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	mine, other := reg.Scope("agent:main:main"), reg.Scope("agent:main:other")
	id := startBackground(t, mine, &ExecRequest{Command: helper("hang")})
	waitFor(t, mine, id, "ready")

	assert.Equal(t, "No running or recent sessions.", mustProcess(t, other, &ProcessRequest{Action: "list"}).Text())
	assert.Equal(t, "No session found for "+id, mustProcess(t, other, &ProcessRequest{Action: "poll", SessionID: id}).Text())
	assert.Equal(t, "No session found for "+id, mustProcess(t, other, &ProcessRequest{Action: "log", SessionID: id}).Text())
	assert.Equal(t, "No active session found for "+id, mustProcess(t, other, &ProcessRequest{Action: "kill", SessionID: id}).Text())
	assert.Equal(t, "No session found for "+id, mustProcess(t, other, &ProcessRequest{Action: "remove", SessionID: id}).Text())
	assert.Equal(t, "No session found for "+id, mustProcess(t, reg.Scope("agent:main:mai"), &ProcessRequest{Action: "poll", SessionID: id}).Text(), "scopes match exactly")

	poll := mustProcess(t, mine, &ProcessRequest{Action: "poll", SessionID: id})
	assert.Equal(t, StatusRunning, poll.Details.Status, "the other scope's kill did nothing")
	mustProcess(t, mine, &ProcessRequest{Action: "kill", SessionID: id})
}

func TestProcessListPollLog(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")

	// The env prefix makes the derived name the same whichever binary runs
	// the helper.
	done := startBackground(t, sc, &ExecRequest{Command: "env LIST_TEST=1 " + helper("lines", "250")})
	awaitDone(t, reg, done)
	running := startBackground(t, sc, &ExecRequest{Command: "python3 -u x.py 2>/dev/null; " + helper("hang")})

	t.Run("list shows running then finished sessions with derived names", func(t *testing.T) {
		res := mustProcess(t, sc, &ProcessRequest{Action: "list"})
		lines := strings.Split(res.Text(), "\n")
		require.Len(t, lines, 2)
		assert.Regexp(t, `^`+running+` running   \d+(ms|s) :: python3 x.py(  \[[^]]*\])?$`, lines[0], "a running line may end with its resources")
		assert.Regexp(t, `^`+done+` completed \d+(ms|s) :: `+regexp.QuoteMeta("env LIST_TEST=1")+`$`, lines[1])
		require.Len(t, res.Details.Sessions, 2)
		s := res.Details.Sessions[1]
		assert.Equal(t, done, s.SessionID)
		assert.Equal(t, StatusCompleted, s.Status)
		require.NotNil(t, s.ExitCode)
		assert.Positive(t, s.EndedAt)
		assert.Contains(t, s.Tail, "line 249")
		assert.Equal(t, StatusRunning, res.Details.Sessions[0].Status)
		assert.Nil(t, res.Details.Sessions[0].ExitCode)
	})

	t.Run("poll drains and then reports nothing new", func(t *testing.T) {
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: done})
		assert.True(t, strings.HasPrefix(res.Text(), "line 0\nline 1\n"))
		assert.True(t, strings.HasSuffix(res.Text(), "line 249\n\nProcess exited with code 0."), res.Text())
		res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: done})
		assert.Equal(t, "(no new output)\n\nProcess exited with code 0.", res.Text())
		assert.Equal(t, StatusCompleted, res.Details.Status, "a poll never changes a finished status")
		assert.Nil(t, res.Details.RetryInMs)
	})

	t.Run("poll of a running session backs off retryInMs", func(t *testing.T) {
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: running, Timeout: ptr(Number(20000))})
		assert.Equal(t, "ready\n\nProcess still running.", res.Text())
		assert.Equal(t, int64(5000), *res.Details.RetryInMs)
		var got []int64
		for range 4 {
			res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: running})
			assert.Equal(t, "(no new output)\n\nProcess still running.", res.Text())
			got = append(got, *res.Details.RetryInMs)
		}
		assert.Equal(t, []int64{10000, 30000, 60000, 60000}, got, "the empty polls after a poll with output go on from its 5000")
	})

	t.Run("a poll with a timeout returns when output arrives", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("pieces", "first", "second"), Stdin: "pipe"})
		waitFor(t, sc, id, "first")
		mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		go func() {
			_, _ = sc.Process(testCtx(t), &ProcessRequest{Action: "write", SessionID: id, Data: "go\n"})
		}()
		start := time.Now()
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(60000))})
		assert.Less(t, time.Since(start), 30*time.Second)
		assert.Equal(t, "second\n\nProcess still running.", res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("log pages by lines", func(t *testing.T) {
		res := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: done})
		lines := strings.Split(res.Text(), "\n")
		assert.Equal(t, "line 50", lines[0])
		assert.True(t, strings.HasSuffix(res.Text(), "line 249\n\n[showing last 200 of 250 lines; pass offset/limit to page]"))
		assert.Equal(t, 250, *res.Details.TotalLines)
		assert.False(t, *res.Details.Truncated)

		res = mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: done, Limit: ptr(2)})
		assert.Equal(t, "line 248\nline 249", res.Text())
		res = mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: done, Offset: ptr(10), Limit: ptr(2)})
		assert.Equal(t, "line 10\nline 11", res.Text())
		res = mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: done, Offset: ptr(5)})
		assert.Len(t, strings.Split(res.Text(), "\n"), 245, "offset without limit has no 200-line cap")
	})

	t.Run("log of a quiet session", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: "sleep 0.2"})
		assert.Equal(t, "(no output yet)", mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text())
		waitExit(t, sc, id)
		assert.Equal(t, "(no output recorded)", mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text())
	})
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: running})
}

func TestProcessKillClearRemove(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{KillGrace: 300 * time.Millisecond})
	sc := reg.Scope("a")

	t.Run("kill ends the whole process group and is never a success", func(t *testing.T) {
		skipInSandboxSuite(t, "the test reads pids the command printed, which are those of its pid namespace")
		id := startBackground(t, sc, &ExecRequest{Command: helper("grandchild")})
		res := waitFor(t, sc, id, `^grandchild \d+$`)
		gpid := atoi(strings.TrimPrefix(res.Details.Matched, "grandchild "))
		kill := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		assert.Equal(t, "Killed session "+id+".", kill.Text())
		assert.Equal(t, ExitReasonKilled, kill.Details.ExitReason)
		assert.Equal(t, StatusFailed, kill.Details.Status)
		assert.True(t, pidGone(t, gpid))
		again := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		assert.Equal(t, "No active session found for "+id, again.Text())
	})

	t.Run("a child that exits 0 on SIGTERM is still reported killed", func(t *testing.T) {
		sc := newTestRegistry(t, Config{KillGrace: 10 * time.Second}).Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: "exec " + helper("trap-exit0")})
		waitFor(t, sc, id, "ready")
		kill := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		assert.Equal(t, ExitReasonKilled, kill.Details.ExitReason)
		assert.Equal(t, StatusFailed, kill.Details.Status)
		require.NotNil(t, kill.Details.ExitCode, "%+v", kill.Details)
		assert.Equal(t, 0, *kill.Details.ExitCode)
	})

	t.Run("kill escalates to SIGKILL after the grace period", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: "exec " + helper("ignore-term")})
		waitFor(t, sc, id, "ready")
		kill := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		assert.Equal(t, "Killed session "+id+".", kill.Text())
		assert.Equal(t, "SIGKILL", kill.Details.ExitSignal)
	})

	t.Run("clear refuses a running session and deletes a finished one", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("hang")})
		assert.Equal(t, "No finished session found for "+id, mustProcess(t, sc, &ProcessRequest{Action: "clear", SessionID: id}).Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		assert.Equal(t, "Cleared session "+id+".", mustProcess(t, sc, &ProcessRequest{Action: "clear", SessionID: id}).Text())
		assert.Equal(t, "No session found for "+id, mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id}).Text())
	})

	t.Run("remove kills a running session and forgets it at once", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("hang")})
		waitFor(t, sc, id, "ready")
		list := mustProcess(t, sc, &ProcessRequest{Action: "list"})
		require.Len(t, list.Details.Sessions, 1+countFinished(list))
		pid := sessionPid(list, id)
		assert.Equal(t, "Removed session "+id+".", mustProcess(t, sc, &ProcessRequest{Action: "remove", SessionID: id}).Text())
		assert.Equal(t, "No session found for "+id, mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id}).Text())
		assert.NotContains(t, mustProcess(t, sc, &ProcessRequest{Action: "list"}).Text(), id)
		assert.True(t, pidGone(t, pid))
	})

	t.Run("remove deletes a finished session", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: "true"})
		waitExit(t, sc, id)
		assert.Equal(t, "Removed session "+id+".", mustProcess(t, sc, &ProcessRequest{Action: "remove", SessionID: id}).Text())
		assert.Equal(t, "No session found for "+id, mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text())
	})
}

func countFinished(r *Result) int {
	n := 0
	for _, s := range r.Details.Sessions {
		if s.Status != StatusRunning {
			n++
		}
	}
	return n
}

func sessionPid(r *Result, id string) int {
	for _, s := range r.Details.Sessions {
		if s.SessionID == id {
			return s.Pid
		}
	}
	return 0
}

func TestCloseEndsEverything(t *testing.T) {
	skipInSandboxSuite(t, "the test reads pids the command printed, which are those of its pid namespace")
	fds := openFDs(t)
	reg, err := NewRegistry(sandboxed(Config{KillGrace: 200 * time.Millisecond}))
	require.NoError(t, err)
	sc := reg.Scope("a")
	var gpids []int
	for range 3 {
		id := startBackground(t, sc, &ExecRequest{Command: helper("grandchild") + " & " + helper("ignore-term")})
		res := waitFor(t, sc, id, `^grandchild \d+$`)
		gpids = append(gpids, atoi(strings.TrimPrefix(res.Details.Matched, "grandchild ")))
	}
	require.NoError(t, reg.Close(testCtx(t)))
	require.NoError(t, reg.Close(testCtx(t)), "Close is idempotent")
	for _, p := range gpids {
		assert.True(t, pidGone(t, p), "grandchild %d outlived Close", p)
	}
	assert.Empty(t, children(t), "no child process (or zombie) is left")
	assert.Equal(t, fds, openFDs(t), "no descriptor leaks")
	_, err = sc.Exec(testCtx(t), &ExecRequest{Command: "true"})
	assert.ErrorIs(t, err, ErrClosed)
	_, err = sc.Process(testCtx(t), &ProcessRequest{Action: "list"})
	assert.ErrorIs(t, err, ErrClosed)
}

// awaitDone waits for a session's end without draining its output.
func awaitDone(t *testing.T, reg *Registry, id string) {
	t.Helper()
	reg.mu.Lock()
	s := reg.sessions[id]
	reg.mu.Unlock()
	require.NotNil(t, s)
	select {
	case <-s.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("session %s did not end", id)
	}
}

func TestCloseAfterItsContextEndsKillsAtOnce(t *testing.T) {
	t.Parallel()
	reg, err := NewRegistry(sandboxed(Config{KillGrace: time.Hour}))
	require.NoError(t, err)
	sc := reg.Scope("a")
	id := startBackground(t, sc, &ExecRequest{Command: "exec " + helper("ignore-term")})
	waitFor(t, sc, id, "ready")
	pid := sessionPid(mustProcess(t, sc, &ProcessRequest{Action: "list"}), id)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, reg.Close(ctx), context.DeadlineExceeded, "the grace period (1 h) outlived the context")
	assert.True(t, pidGone(t, pid), "SIGKILLed once the context ended")
}
