//go:build linux

package bgexec

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/host/hosttest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noticeLines returns the exit notice lines a result's text starts with.
func noticeLines(res *Result) []string {
	var out []string
	for _, l := range strings.Split(res.Text(), "\n") {
		if !strings.HasPrefix(l, NoticePrefix) {
			break
		}
		out = append(out, l)
	}
	return out
}

// endedInBackground starts command in the background and waits until the
// registry has recorded its end (Done closes after the bookkeeping).
func endedInBackground(t *testing.T, reg *Registry, sc *Scope, command string) string {
	t.Helper()
	id := startBackground(t, sc, &ExecRequest{Command: command})
	s := sessionOf(reg, id)
	require.NotNil(t, s)
	require.NoError(t, awaitEnd(testCtx(t), s))
	return id
}

func TestExitNoticesInResults(t *testing.T) {
	t.Parallel()

	t.Run("the next result of the scope carries the notice once", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder()
		reg := newTestRegistry(t, Config{ExitNoticesInResults: true, Notifier: rec})
		sc, other := reg.Scope("a"), reg.Scope("b")
		id := endedInBackground(t, reg, sc, "echo done")

		res := mustProcess(t, other, &ProcessRequest{Action: "list"})
		assert.Empty(t, noticeLines(res), "another scope's result carries none")

		res = mustExec(t, sc, &ExecRequest{Command: "echo next"})
		want := NoticePrefix + "Exec completed (" + id + ", code 0) :: done"
		assert.Equal(t, want+"\n\nnext", res.Text())
		assert.Equal(t, "next", res.Details.Aggregated, "details keep the call's own output")

		res = mustProcess(t, sc, &ProcessRequest{Action: "list"})
		assert.Empty(t, noticeLines(res), "shown once, never again")
		res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.Empty(t, noticeLines(res))
		assert.Contains(t, res.Text(), "Process exited with code 0.")

		settle(t, reg)
		events, _ := rec.snapshot()
		assert.Equal(t, []string{"a|Exec completed (" + id + ", code 0) :: done"}, events, "the notifier still gets the event")
	})

	t.Run("an exit a call reported is never a notice", func(t *testing.T) {
		t.Parallel()
		reg := newTestRegistry(t, Config{ExitNoticesInResults: true})
		sc := reg.Scope("a")

		polled := endedInBackground(t, reg, sc, "echo polled")
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: polled})
		assert.Empty(t, noticeLines(res), "the poll reports the exit itself")
		assert.Contains(t, res.Text(), "polled\n\nProcess exited with code 0.")

		waited := startBackground(t, sc, &ExecRequest{Command: "sleep 0.3; echo waited"})
		res = waitExit(t, sc, waited)
		assert.Empty(t, noticeLines(res))

		killed := startBackground(t, sc, &ExecRequest{Command: "sleep 300"})
		res = mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: killed})
		assert.Equal(t, "Killed session "+killed+".", res.Text())

		quiet := endedInBackground(t, reg, sc, "true")
		cleared := endedInBackground(t, reg, sc, "echo cleared")
		res = mustProcess(t, sc, &ProcessRequest{Action: "clear", SessionID: cleared})
		assert.Equal(t, "Cleared session "+cleared+".", res.Text(), "a cleared session's notice is dropped")

		res = mustProcess(t, sc, &ProcessRequest{Action: "list"})
		assert.Empty(t, noticeLines(res), "nothing left to tell: %s", res.Text())
		_ = quiet // a silent success is skipped like its event
	})

	t.Run("a result never carries the notice of the session it reports running", func(t *testing.T) {
		t.Parallel()
		reg := newTestRegistry(t, Config{ExitNoticesInResults: true})
		// Each job prints a line and ends as soon as it is started, so its
		// end is often recorded before its exec's result is put together.
		setHost(reg, &hosttest.Host{StartFunc: func(context.Context, *host.Spec) (*host.Started, error) {
			f, sp := hosttest.Started()
			go func() {
				_, _ = f.Write([]byte("job\n")) // until the session reads it
				f.Exit(0)
			}()
			return sp, nil
		}})
		sc := reg.Scope("a")
		const jobs = 500
		shown := map[string]int{}
		note := func(res *Result) {
			for _, l := range noticeLines(res) {
				shown[l]++
			}
		}
		for range jobs {
			res := mustExec(t, sc, &ExecRequest{Command: "echo job", Background: true})
			require.Equal(t, StatusRunning, res.Details.Status, res.Text())
			id := res.Details.SessionID
			for _, l := range noticeLines(res) {
				require.NotContains(t, l, "("+id+",", "the result that reports %s running says it ended:\n%s", id, res.Text())
			}
			note(res)
			require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
		}
		note(mustProcess(t, sc, &ProcessRequest{Action: "list"}))
		assert.Len(t, shown, jobs, "every end is told")
		for l, n := range shown {
			assert.Equal(t, 1, n, "told once: %s", l)
		}
	})

	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		reg := newTestRegistry(t, Config{})
		sc := reg.Scope("a")
		endedInBackground(t, reg, sc, "echo done")
		res := mustProcess(t, sc, &ProcessRequest{Action: "list"})
		assert.Empty(t, noticeLines(res))
	})

	t.Run("concurrent results show each notice exactly once", func(t *testing.T) {
		t.Parallel()
		reg := newTestRegistry(t, Config{ExitNoticesInResults: true})
		sc := reg.Scope("a")
		const sessions, callers = 12, 8
		var mu sync.Mutex
		seen := map[string]int{}
		ids := make([]string, sessions)
		for i := range ids {
			res := mustExec(t, sc, &ExecRequest{Command: "echo job", Background: true})
			ids[i] = res.Details.SessionID
			for _, l := range noticeLines(res) { // an earlier job's end
				seen[l]++
			}
		}
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				for range 10 {
					res, err := sc.Process(testCtx(t), &ProcessRequest{Action: "list"})
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					for _, l := range noticeLines(res) {
						seen[l]++
					}
					mu.Unlock()
				}
			})
		}
		for _, id := range ids {
			require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
		}
		wg.Wait()
		// Whatever the callers did not pick up comes with the next result.
		for _, l := range noticeLines(mustProcess(t, sc, &ProcessRequest{Action: "list"})) {
			seen[l]++
		}
		require.Len(t, seen, sessions)
		for _, id := range ids {
			assert.Equal(t, 1, seen[NoticePrefix+"Exec completed ("+id+", code 0) :: job"], id)
		}
	})
}

func TestMaxCallWait(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{MaxCallWaitMs: 300})
	sc := reg.Scope("a")

	t.Run("a long yield window returns running at the cap and says so", func(t *testing.T) {
		start := time.Now()
		res := mustExec(t, sc, &ExecRequest{Command: "echo started; exec sleep 300", YieldMs: ptr(120000.0)})
		require.Equal(t, StatusRunning, res.Details.Status, res.Text())
		assert.Less(t, time.Since(start), 20*time.Second)
		assert.Contains(t, res.Text(), "This call returned at the server's limit of 300 ms per call (yieldMs asked for 120000 ms); the command keeps running")
		id := res.Details.SessionID

		mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Pattern: "^started$"})
		res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(120000))})
		assert.Contains(t, res.Text(), "Process still running.\nThis call returned at the server's limit of 300 ms per call (timeout asked for 120000 ms); poll again")

		res = mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Pattern: "never", Timeout: ptr(Number(600000))})
		assert.Equal(t, "timeout", res.Details.Condition)
		assert.True(t, strings.HasPrefix(res.Text(), "The condition did not hold yet. This call returned at the server's limit of 300 ms per call (timeout asked for 600000 ms); call wait again"), res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("a screen whose output never settles returns at the cap and says so", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: "while :; do echo tick; sleep 0.05; done", PTY: true})
		waitFor(t, sc, id, "tick")
		res := mustProcess(t, sc, &ProcessRequest{Action: "screen", SessionID: id, IdleMs: ptr(2000.0), Timeout: ptr(Number(20000))})
		assert.Contains(t, res.Text(), "tick")
		assert.True(t, strings.HasSuffix(res.Text(), "\n\nThis call returned at the server's limit of 300 ms per call (timeout asked for 20000 ms); call screen again to keep waiting for quiet."), res.Text())
		// A screen that needs no quiet wait says nothing of the cap.
		res = mustProcess(t, sc, &ProcessRequest{Action: "screen", SessionID: id})
		assert.NotContains(t, res.Text(), "server's limit")
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("calls within the cap are unchanged", func(t *testing.T) {
		// A cap of its own, long enough for a loaded machine to run echo.
		sc := newTestRegistry(t, Config{MaxCallWaitMs: 20000}).Scope("a")
		res := mustExec(t, sc, &ExecRequest{Command: "echo quick", YieldMs: ptr(120000.0)})
		assert.Equal(t, "quick", res.Text())
		id := startBackground(t, sc, &ExecRequest{Command: "exec sleep 300"})
		res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(100))})
		assert.Equal(t, "(no new output)\n\nProcess still running.", res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
}

// BenchmarkNoticeCheck measures what ExitNoticesInResults adds to a call
// with no notice due (the common case): a list of 10 sessions with the
// option on, against the same list with it off (baseline).
func BenchmarkNoticeCheck(b *testing.B) {
	for _, on := range []bool{true, false} {
		name := "notices-on"
		if !on {
			name = "baseline-off"
		}
		b.Run(name, func(b *testing.B) {
			reg, err := NewRegistry(Config{ExitNoticesInResults: on})
			require.NoError(b, err)
			b.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				require.NoError(b, reg.Close(ctx))
			})
			sc := reg.Scope("a")
			for range 10 {
				res, err := sc.Exec(b.Context(), &ExecRequest{Command: "exec sleep 300", Background: true})
				require.NoError(b, err)
				require.Equal(b, StatusRunning, res.Details.Status)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sc.Process(b.Context(), &ProcessRequest{Action: "list"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
