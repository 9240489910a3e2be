//go:build linux

package bgexec

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// awaitLog waits until the session's log is exactly want.
func awaitLog(t *testing.T, sc *Scope, id, want string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text() == want
	}, 20*time.Second, 10*time.Millisecond, "log never became %q", want)
}

// TestUndeliveredResultsComeAgain: output and exit reports a poll took
// into a result that never reached the model come again, before newer
// output.
func TestUndeliveredResultsComeAgain(t *testing.T) {
	t.Run("drained output comes again before newer output", func(t *testing.T) {
		sc := newTestRegistry(t, Config{}).Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe"})
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "one\n"})
		awaitLog(t, sc, id, "one")
		lost := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		require.Equal(t, "one\n\nProcess still running.", lost.Text())
		require.NoError(t, sc.Undelivered(testCtx(t), lost))
		require.NoError(t, sc.Undelivered(testCtx(t), lost), "a second call gives nothing back twice")
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "two\n"})
		awaitLog(t, sc, id, "one\ntwo")
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.Equal(t, "one\ntwo\n\nProcess still running.", res.Text())
		res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.Equal(t, "(no new output)\n\nProcess still running.", res.Text(), "a delivered poll is committed")
	})
	t.Run("a poll whose context ended before it returned gives its output back", func(t *testing.T) {
		sc := newTestRegistry(t, Config{}).Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe"})
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "one\n"})
		awaitLog(t, sc, id, "one")
		// The poll waits for a quiet spell it will never see in time; the
		// request is cancelled meanwhile, as an MCP client cancels it.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		lost, err := sc.Call(ctx, ToolProcess, []byte(`{"action":"poll","sessionId":"`+id+`","timeout":30000,"idleMs":20000}`))
		require.NoError(t, err)
		require.Error(t, ctx.Err())
		assert.Contains(t, lost.Text(), "one")
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.Equal(t, "one\n\nProcess still running.", res.Text())
	})
	t.Run("a wait whose request was cancelled gives its output back", func(t *testing.T) {
		sc := newTestRegistry(t, Config{}).Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe"})
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "one\n"})
		awaitLog(t, sc, id, "one")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		lost, err := sc.Process(ctx, &ProcessRequest{Action: "wait", SessionID: id, Pattern: "^never$", Timeout: ptr(Number(30000))})
		require.NoError(t, err)
		require.Error(t, ctx.Err())
		assert.Contains(t, lost.Text(), "one")
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.Equal(t, "one\n\nProcess still running.", res.Text())
	})
	t.Run("an exit report comes again, by the next poll", func(t *testing.T) {
		q := NewQueue()
		sc := newTestRegistry(t, Config{Notifier: q}).Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe"})
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "bye\n", EOF: true})
		lost := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(20000))})
		for !strings.HasSuffix(lost.Text(), "Process exited with code 0.") {
			lost = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(20000))})
		}
		assert.Empty(t, q.Drain("a"), "the poll reported the exit: no event")
		require.NoError(t, sc.Undelivered(testCtx(t), lost))
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.Equal(t, lost.Text(), res.Text())
	})
	t.Run("an exit report that never arrived becomes an event", func(t *testing.T) {
		q := NewQueue()
		reg := newTestRegistry(t, Config{Notifier: q})
		sc := reg.Scope("a")
		id := endedInBackground(t, reg, sc, "echo done")
		lost := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		require.Equal(t, "done\n\nProcess exited with code 0.", lost.Text())
		assert.Empty(t, q.Drain("a"), "the poll took the exit over: its event was withdrawn")
		require.NoError(t, sc.Undelivered(testCtx(t), lost))
		var events []string
		require.Eventually(t, func() bool { events = append(events, q.Drain("a")...); return len(events) > 0 }, 20*time.Second, 10*time.Millisecond)
		assert.Equal(t, []string{"Exec completed (" + id + ", code 0) :: done"}, events)
	})
	t.Run("exit notices a lost result carried come with the next result", func(t *testing.T) {
		reg := newTestRegistry(t, Config{ExitNoticesInResults: true})
		sc := reg.Scope("a")
		id := endedInBackground(t, reg, sc, "echo finished")
		lost := mustProcess(t, sc, &ProcessRequest{Action: "list"})
		require.Contains(t, lost.Text(), NoticePrefix+"Exec completed ("+id)
		require.NoError(t, sc.Undelivered(testCtx(t), lost))
		res := mustProcess(t, sc, &ProcessRequest{Action: "list"})
		assert.Contains(t, res.Text(), NoticePrefix+"Exec completed ("+id)
		res = mustProcess(t, sc, &ProcessRequest{Action: "list"})
		assert.NotContains(t, res.Text(), NoticePrefix)
	})
	t.Run("given-back output stays within the pending cap", func(t *testing.T) {
		sc := newTestRegistry(t, Config{PendingMaxOutputChars: 1000}).Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe"})
		a, b := strings.Repeat("a", 799), strings.Repeat("b", 799)
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: a + "\n"})
		awaitLog(t, sc, id, a)
		lost := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: b + "\n"})
		awaitLog(t, sc, id, a+"\n"+b)
		require.NoError(t, sc.Undelivered(testCtx(t), lost))
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		text := res.Text()
		assert.Contains(t, text, b+"\n\nProcess still running.")
		assert.Contains(t, text, strings.Repeat("a", 199)+"\n"+b, "the newest 1000 characters are kept")
		assert.NotContains(t, text, strings.Repeat("a", 201))
		assert.Contains(t, text, "dropped from the poll buffer", "the drop is said")
	})
	t.Run("another scope cannot give back a result", func(t *testing.T) {
		reg := newTestRegistry(t, Config{})
		sc, other := reg.Scope("a"), reg.Scope("b")
		id := startBackground(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe"})
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "one\n"})
		awaitLog(t, sc, id, "one")
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		require.NoError(t, other.Undelivered(testCtx(t), res))
		res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.Equal(t, "(no new output)\n\nProcess still running.", res.Text())
	})
}
