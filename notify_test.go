//go:build linux

package bgexec

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a Notifier that records every call.
type recorder struct {
	mu     sync.Mutex
	events []string
	beats  []string
	got    chan struct{} // one send per SystemEvent
	beat   chan struct{} // one send per Heartbeat
}

func newRecorder() *recorder {
	return &recorder{got: make(chan struct{}, 1000), beat: make(chan struct{}, 1000)}
}

func (r *recorder) SystemEvent(scope, text string) {
	r.mu.Lock()
	r.events = append(r.events, scope+"|"+text)
	r.mu.Unlock()
	r.got <- struct{}{}
}

func (r *recorder) Heartbeat(scope, reason string) {
	r.mu.Lock()
	r.beats = append(r.beats, scope+"|"+reason)
	r.mu.Unlock()
	r.beat <- struct{}{}
}

func (r *recorder) snapshot() ([]string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...), append([]string(nil), r.beats...)
}

// settle closes the registry, so every notification that will ever be
// made has been made (Close waits for the notification goroutine).
func settle(t *testing.T, reg *Registry) {
	t.Helper()
	require.NoError(t, reg.Close(testCtx(t)))
}

func TestExitNotifications(t *testing.T) {
	t.Parallel()
	type scenario struct {
		name  string
		cfg   Config
		run   func(t *testing.T, reg *Registry, sc *Scope)
		want  []string // event texts, without the session id part
		beats int
	}
	var lastID string
	start := func(t *testing.T, sc *Scope, req *ExecRequest) string {
		lastID = startBackground(t, sc, req)
		return lastID
	}
	scenarios := []scenario{
		{name: "a background run that prints and exits notifies once", run: func(t *testing.T, reg *Registry, sc *Scope) {
			awaitDone(t, reg, start(t, sc, &ExecRequest{Command: "echo   built   ok; exit 2"}))
		}, want: []string{"Exec completed (%s, code 2) :: built ok"}, beats: 1},
		{name: "an exit during a waiting poll is reported by the poll only", run: func(t *testing.T, reg *Registry, sc *Scope) {
			// No output before the exit: the poll would return with it, and
			// an exit just after would be an event.
			id := start(t, sc, &ExecRequest{Command: "read line; exit 3", Stdin: "pipe"})
			done := make(chan *Result, 1)
			go func() {
				res, _ := sc.Process(context.Background(), &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(20000))})
				done <- res
			}()
			s := sessionOf(reg, id)
			deadline := time.Now().Add(20 * time.Second)
			for s.Waiting() == 0 { // the poll is waiting before the child may end
				require.True(t, time.Now().Before(deadline), "the poll never waited")
				time.Sleep(time.Millisecond)
			}
			mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "\n"})
			var res *Result
			select {
			case res = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the waiting poll did not return")
			}
			for !strings.Contains(res.Text(), "Process exited") {
				require.True(t, time.Now().Before(deadline.Add(20*time.Second)), "no poll reported the exit: %s", res.Text())
				res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(20000))})
			}
		}},
		{name: "a poll after the exit consumes the event", cfg: Config{Notifier: NewQueue()}, run: func(t *testing.T, reg *Registry, sc *Scope) {
			id := start(t, sc, &ExecRequest{Command: "echo hi"})
			awaitDone(t, reg, id)
			mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		}},
		{name: "remove never notifies", run: func(t *testing.T, reg *Registry, sc *Scope) {
			id := start(t, sc, &ExecRequest{Command: "echo x; " + helper("hang")})
			waitFor(t, sc, id, "ready")
			mustProcess(t, sc, &ProcessRequest{Action: "remove", SessionID: id})
		}},
		{name: "the agent's own kill is reported by the kill alone", cfg: Config{KillGrace: 5 * time.Second}, run: func(t *testing.T, reg *Registry, sc *Scope) {
			id := start(t, sc, &ExecRequest{Command: "exec " + helper("hang")})
			mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(20000))})
			res := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
			require.Equal(t, "Killed session "+id+".", res.Text())
			require.Equal(t, "SIGTERM", res.Details.ExitSignal)
		}},
		{name: "a timeout notifies with the timeout label", run: func(t *testing.T, reg *Registry, sc *Scope) {
			awaitDone(t, reg, start(t, sc, &ExecRequest{Command: "echo waiting; sleep 30", Timeout: ptr(3.0)}))
		}, want: []string{"Exec failed (%s, timeout) :: waiting\n\n" + timeoutGuidance}, beats: 1},
		{name: "a quiet success does not notify", run: func(t *testing.T, reg *Registry, sc *Scope) {
			awaitDone(t, reg, start(t, sc, &ExecRequest{Command: "true"}))
		}},
		{name: "a quiet success notifies when configured", cfg: Config{NotifyOnExitEmptySuccess: true}, run: func(t *testing.T, reg *Registry, sc *Scope) {
			awaitDone(t, reg, start(t, sc, &ExecRequest{Command: "true"}))
		}, want: []string{"Exec completed (%s, code 0)"}, beats: 1},
		{name: "a quiet failure notifies", run: func(t *testing.T, reg *Registry, sc *Scope) {
			awaitDone(t, reg, start(t, sc, &ExecRequest{Command: "exit 1"}))
		}, want: []string{"Exec completed (%s, code 1)"}, beats: 1},
		{name: "notifyOnExit false turns them off", cfg: Config{NotifyOnExit: ptr(false)}, run: func(t *testing.T, reg *Registry, sc *Scope) {
			awaitDone(t, reg, start(t, sc, &ExecRequest{Command: "echo hi; exit 3"}))
		}},
		{name: "a foreground run never notifies", run: func(t *testing.T, reg *Registry, sc *Scope) {
			mustExec(t, sc, &ExecRequest{Command: "echo hi; exit 3"})
			lastID = ""
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			rec := newRecorder()
			cfg := sc.cfg
			var q *Queue
			if cfg.Notifier != nil {
				q = cfg.Notifier.(*Queue)
			} else {
				cfg.Notifier = rec
			}
			reg, err := NewRegistry(sandboxed(cfg))
			require.NoError(t, err)
			scope := reg.Scope("agent:x")
			sc.run(t, reg, scope)
			if len(sc.want) > 0 {
				select {
				case <-rec.got:
				case <-time.After(20 * time.Second):
					t.Fatal("no event")
				}
			}
			// A closing registry wakes nobody: the heartbeat that follows
			// the event must be in before Close.
			for range sc.beats {
				select {
				case <-rec.beat:
				case <-time.After(20 * time.Second):
					t.Fatal("no heartbeat")
				}
			}
			settle(t, reg)
			if q != nil {
				assert.Empty(t, q.Drain("agent:x"))
				return
			}
			events, beats := rec.snapshot()
			var want []string
			for _, w := range sc.want {
				want = append(want, "agent:x|"+fmt.Sprintf(w, lastID))
			}
			assert.Equal(t, want, events)
			assert.Len(t, beats, sc.beats)
			if sc.beats > 0 {
				assert.Equal(t, "agent:x|exec:"+lastID+":exit", beats[0])
			}
		})
	}
}

func TestExitSnippet(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "a b c", exitSnippet("  a \n\t b   c \n"))
	long := strings.Repeat("x", 500)
	s := exitSnippet(long)
	assert.Equal(t, 180, len([]rune(s)))
	assert.True(t, strings.HasSuffix(s, "…"))
	assert.Equal(t, strings.Repeat("y", 180), exitSnippet(strings.Repeat("y", 180)), "exactly 180 is not cut")
	assert.Equal(t, "", exitSnippet(" \n "))
}

// blocker is a Notifier whose SystemEvent blocks until released.
type blocker struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blocker) SystemEvent(string, string) {
	b.entered <- struct{}{}
	<-b.release
}
func (b *blocker) Heartbeat(string, string) {}

func TestSlowNotifierDoesNotStallCapture(t *testing.T) {
	t.Parallel()
	b := &blocker{entered: make(chan struct{}, 10), release: make(chan struct{})}
	reg := newTestRegistry(t, Config{Notifier: b})
	sc := reg.Scope("a")
	defer close(b.release)

	first := startBackground(t, sc, &ExecRequest{Command: "echo one"})
	awaitDone(t, reg, first)
	select {
	case <-b.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("notifier not called")
	}
	// The notifier is now stuck; capture and other sessions go on.
	id := startBackground(t, sc, &ExecRequest{Command: helper("lines", "5000") + "; echo end"})
	res := waitExit(t, sc, id)
	assert.Contains(t, res.Text(), "line 4999\nend")
	fg := mustExec(t, sc, &ExecRequest{Command: "echo fg"})
	assert.Equal(t, "fg", fg.Text())
}

func TestQueue(t *testing.T) {
	t.Parallel()
	q := NewQueue()
	for i := range 25 {
		q.SystemEvent("s", fmt.Sprintf("e%d", i))
		q.SystemEvent("s", fmt.Sprintf("e%d", i)) // duplicate of the previous one: dropped
	}
	q.SystemEvent("other", "o")
	ev := q.Drain("s")
	require.Len(t, ev, MaxQueuedEvents)
	assert.Equal(t, "e5", ev[0])
	assert.Equal(t, "e24", ev[19])
	assert.Empty(t, q.Drain("s"))
	q.SystemEvent("s", "a")
	q.SystemEvent("s", "b")
	q.SystemEvent("s", "a")
	q.Retract("s", "b")
	assert.Equal(t, []string{"a", "a"}, q.Drain("s"), "only consecutive duplicates are dropped")
	assert.Equal(t, []string{"o"}, q.Drain("other"))
	for range heartbeatBuffer + 10 {
		q.Heartbeat("s", "r") // never blocks
	}
	assert.Equal(t, HeartbeatRequest{ScopeKey: "s", Reason: "r"}, <-q.Heartbeats())

	t.Run("the queue gets exactly one event per background exit", func(t *testing.T) {
		q := NewQueue()
		reg := newTestRegistry(t, Config{Notifier: q})
		sc := reg.Scope("agent:q")
		id := startBackground(t, sc, &ExecRequest{Command: "echo done; exit 4"})
		select {
		case hb := <-q.Heartbeats():
			assert.Equal(t, HeartbeatRequest{ScopeKey: "agent:q", Reason: "exec:" + id + ":exit"}, hb)
		case <-time.After(20 * time.Second):
			t.Fatal("no heartbeat")
		}
		assert.Equal(t, []string{"Exec completed (" + id + ", code 4) :: done"}, q.Drain("agent:q"))
		assert.Empty(t, q.Drain("agent:main"))
	})
}

// stuckNotifier blocks in SystemEvent until released and counts the
// calls that get past it.
type stuckNotifier struct {
	entered    chan struct{}
	release    chan struct{}
	heartbeats atomic.Int32
}

func (n *stuckNotifier) SystemEvent(string, string) {
	n.entered <- struct{}{}
	<-n.release
}
func (n *stuckNotifier) Heartbeat(string, string) { n.heartbeats.Add(1) }

func TestCloseHonoursContextWhileNotifierBlocks(t *testing.T) {
	t.Parallel()
	n := &stuckNotifier{entered: make(chan struct{}, 1), release: make(chan struct{})}
	reg := newTestRegistry(t, Config{Notifier: n})
	var once sync.Once
	release := func() { once.Do(func() { close(n.release) }) }
	t.Cleanup(release) // before the registry's own Close
	startBackground(t, reg.Scope("a"), &ExecRequest{Command: "echo done"})
	select {
	case <-n.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the notifier was not called")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- reg.Close(ctx) }()
	select {
	case err := <-closed:
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(10 * time.Second):
		release()
		<-closed
		t.Fatal("Close did not return when its context ended while the notifier blocked")
	}

	ended, cancelEnded := context.WithCancel(context.Background())
	cancelEnded()
	assert.ErrorIs(t, reg.Close(ended), context.Canceled, "a later Close does not wait for the blocked call past its context either")

	// Once released, the notifier's goroutine ends without another call,
	// and a later Close waits for it.
	release()
	require.NoError(t, reg.Close(testCtx(t)))
	assert.Zero(t, n.heartbeats.Load(), "no Notifier call after Close returned")
}

// With nothing in flight, Close waits for the notification goroutine even
// when its context has ended already.
func TestCloseWithEndedContextWaitsForIdleNotifier(t *testing.T) {
	t.Parallel()
	reg, err := NewRegistry(sandboxed(Config{Notifier: NewQueue()}))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NoError(t, reg.Close(ctx))
	select {
	case <-reg.notesDone:
	default:
		t.Fatal("the notification goroutine still runs after Close returned")
	}
}

// stuckApprover blocks in Approve until released, then allows.
type stuckApprover struct {
	entered chan struct{}
	release chan struct{}
}

func (a *stuckApprover) Approve(context.Context, *ApprovalRequest) (bool, string, error) {
	a.entered <- struct{}{}
	<-a.release
	return true, "", nil
}

func TestCloseHonoursContextWhileApproverBlocks(t *testing.T) {
	a := &stuckApprover{entered: make(chan struct{}, 1), release: make(chan struct{})}
	reg := newTestRegistry(t, Config{Ask: "always", Approver: a})
	var once sync.Once
	release := func() { once.Do(func() { close(a.release) }) }
	t.Cleanup(release)
	execDone := make(chan error, 1)
	go func() {
		_, err := reg.Scope("a").Exec(context.Background(), &ExecRequest{Command: "echo approved"})
		execDone <- err
	}()
	select {
	case <-a.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the approver was not called")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- reg.Close(ctx) }()
	select {
	case err := <-closed:
		// The approver runs on the exec caller's goroutine: Close need not wait.
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		release()
		<-closed
		t.Fatal("Close did not return while the approver blocked")
	}

	before := children(t)
	release()
	select {
	case err := <-execDone:
		assert.ErrorIs(t, err, ErrClosed, "an approval that ends after Close spawns nothing")
	case <-time.After(20 * time.Second):
		t.Fatal("exec did not return after the approver did")
	}
	assert.ElementsMatch(t, before, children(t))
}

// TestAPollThatReportsAnExitRetractsItsEventBeforeItReturns drains the
// queue right after a poll that reported an exit, as a runtime does at the
// agent's next turn: the event must be gone, never drained as a duplicate
// wake. Before the exit report had one owner, the retraction was queued
// behind the poll and the drain still saw the event in 4 of 5 runs.
func TestAPollThatReportsAnExitRetractsItsEventBeforeItReturns(t *testing.T) {
	t.Parallel()
	q := NewQueue()
	reg := newTestRegistry(t, Config{Notifier: q})
	sc := reg.Scope("agent:r")
	for i := range 40 {
		id := startBackground(t, sc, &ExecRequest{Command: "echo round " + itoa(i)})
		select {
		case <-q.Heartbeats(): // the event was delivered
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: no event", i)
		}
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		require.Contains(t, res.Text(), "Process exited with code 0.")
		require.Empty(t, q.Drain("agent:r"), "round %d: the poll reported the exit, so its event must be retracted already", i)
		mustProcess(t, sc, &ProcessRequest{Action: "clear", SessionID: id})
	}
}

// TestAnExitIsReportedOnceWhatever races polls against exits: across all
// channels (poll texts and queued events) every exit is told once, and the
// queue never holds an event for an exit a poll reported.
func TestAnExitIsReportedOnceWhatever(t *testing.T) {
	t.Parallel()
	q := NewQueue()
	reg := newTestRegistry(t, Config{Notifier: q})
	sc := reg.Scope("agent:once")
	for i := range 60 {
		id := startBackground(t, sc, &ExecRequest{Command: "echo r" + itoa(i)})
		polled := false
		deadline := time.Now().Add(20 * time.Second)
		for !polled {
			require.True(t, time.Now().Before(deadline), "round %d: no poll reported the exit", i)
			res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(i % 3))})
			polled = strings.Contains(res.Text(), "Process exited")
		}
		for _, ev := range q.Drain("agent:once") {
			assert.NotContains(t, ev, id, "round %d: exit reported by a poll and by an event", i)
		}
		mustProcess(t, sc, &ProcessRequest{Action: "clear", SessionID: id})
	}
}
