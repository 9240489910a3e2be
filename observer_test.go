package bgexec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evRecorder is an Observer that keeps every event and wakes waiters.
type evRecorder struct {
	mu     sync.Mutex
	events []Event
	kick   chan struct{}
	// gate, when set, holds every Observe until it is closed; entered,
	// when set, hears of each call as it begins.
	gate    chan struct{}
	entered chan struct{}
	// fail, when set, makes ObserveErr fail for the kinds it returns true for.
	fail func(EventKind) bool
}

func newEvRecorder() *evRecorder { return &evRecorder{kick: make(chan struct{}, 1)} }

func (r *evRecorder) Observe(ev Event) { _ = r.ObserveErr(ev) }

func (r *evRecorder) ObserveErr(ev Event) error {
	if r.entered != nil {
		select {
		case r.entered <- struct{}{}:
		default:
		}
	}
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	kick(r.kick)
	if r.fail != nil && r.fail(ev.Kind) {
		return errors.New("audit sink unavailable")
	}
	return nil
}

func (r *evRecorder) snapshot() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// await waits, with a deadline, until cond holds for the events so far.
func (r *evRecorder) await(t *testing.T, what string, cond func([]Event) bool) []Event {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		if evs := r.snapshot(); cond(evs) {
			return evs
		}
		select {
		case <-r.kick:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; events: %+v", what, r.snapshot())
		}
	}
}

// endOf waits for the end event of session id.
func (r *evRecorder) endOf(t *testing.T, id string) []Event {
	t.Helper()
	return r.await(t, "the end of "+id, func(evs []Event) bool {
		return slices.ContainsFunc(evs, func(e Event) bool { return e.Kind == EventEnd && e.SessionID == id })
	})
}

// find returns the index of the first event matching, or -1.
func find(evs []Event, match func(Event) bool) int { return slices.IndexFunc(evs, match) }

func kindOf(k EventKind, id string) func(Event) bool {
	return func(e Event) bool { return e.Kind == k && e.SessionID == id }
}

func TestObserverForegroundSuccess(t *testing.T) {
	rec := newEvRecorder()
	reg := newTestRegistry(t, Config{Observer: rec})
	dir := t.TempDir()
	res := mustExec(t, reg.Scope("agent:a"), &ExecRequest{Command: helper("echo", "quiet-success"), Workdir: dir, Env: map[string]string{"API_TOKEN": "s3cret-value", "A_FLAG": "1"}})
	require.Equal(t, StatusCompleted, res.Details.Status, res.Text())

	evs := rec.await(t, "a spawn and its end", func(evs []Event) bool {
		i := find(evs, func(e Event) bool { return e.Kind == EventSpawn })
		return i >= 0 && find(evs, kindOf(EventEnd, evs[i].SessionID)) >= 0
	})
	dec := find(evs, func(e Event) bool { return e.Kind == EventDecision })
	sp := find(evs, func(e Event) bool { return e.Kind == EventSpawn })
	require.GreaterOrEqual(t, dec, 0, "a decision event")
	id := evs[sp].SessionID
	end := find(evs, kindOf(EventEnd, id))
	assert.Less(t, dec, sp, "the decision comes before the spawn")
	assert.Less(t, sp, end, "the spawn comes before the end")

	d, s, e := evs[dec], evs[sp], evs[end]
	assert.Equal(t, DecisionAllowed, d.Decision)
	assert.Equal(t, DecidedByPolicy, d.DecidedBy)
	assert.Contains(t, d.Reason, "security=full")
	assert.NotEmpty(t, d.CallID)
	assert.Equal(t, d.CallID, s.CallID, "decision and spawn share the call id")
	assert.Equal(t, d.CallID, e.CallID, "the end names the call too")
	assert.Equal(t, "agent:a", s.Scope)
	assert.Equal(t, dir, s.Workdir)
	assert.Contains(t, []string{"gateway", "sandbox"}, s.Host)
	assert.Equal(t, []string{"API_TOKEN", "A_FLAG"}, s.EnvKeys)
	assert.NotEmpty(t, id)
	for _, ev := range evs {
		assert.NotContains(t, ev.Command+ev.Reason+ev.Data+strings.Join(ev.EnvKeys, ","), "s3cret-value", "no env value reaches the observer")
	}
	require.NotNil(t, e.ExitCode)
	assert.Equal(t, 0, *e.ExitCode)
	assert.Equal(t, "exit", e.ExitReason)
	assert.Empty(t, e.Signal)
	assert.GreaterOrEqual(t, e.OutputBytes, int64(len("quiet-success\n")))
	assert.Positive(t, e.Duration)
	assert.False(t, e.Truncated)
}

func TestObserverBackgroundKilled(t *testing.T) {
	rec := newEvRecorder()
	reg := newTestRegistry(t, Config{Observer: rec})
	sc := reg.Scope("agent:k")
	id := startBackground(t, sc, &ExecRequest{Command: helper("hang")})
	waitFor(t, sc, id, "ready")
	res := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	require.Contains(t, res.Text(), "Killed session", res.Text())

	evs := rec.endOf(t, id)
	sp, ctl, end := find(evs, kindOf(EventSpawn, id)), find(evs, kindOf(EventControl, id)), find(evs, kindOf(EventEnd, id))
	require.GreaterOrEqual(t, sp, 0)
	require.GreaterOrEqual(t, ctl, 0, "the kill is visible")
	assert.True(t, evs[sp].Background)
	assert.Equal(t, "kill", evs[ctl].Action)
	assert.Less(t, sp, ctl)
	assert.Less(t, ctl, end)
	e := evs[end]
	assert.Equal(t, "killed", e.ExitReason)
	if inSandboxSuite() && e.Signal == "" {
		// The sandbox's init may relay the signal as an exit code.
		assert.NotNil(t, e.ExitCode)
		return
	}
	assert.Nil(t, e.ExitCode)
	assert.Equal(t, "SIGTERM", e.Signal)
}

func TestObserverRemoveAndDecideVisible(t *testing.T) {
	rec := newEvRecorder()
	reg := newTestRegistry(t, Config{Observer: rec})
	sc := reg.Scope("agent:r")
	id := startBackground(t, sc, &ExecRequest{Command: helper("hang")})
	waitFor(t, sc, id, "ready")
	mustProcess(t, sc, &ProcessRequest{Action: "remove", SessionID: id})
	evs := rec.endOf(t, id)
	ctl := find(evs, kindOf(EventControl, id))
	require.GreaterOrEqual(t, ctl, 0, "the remove is visible")
	assert.Equal(t, "remove", evs[ctl].Action)
	e := evs[find(evs, kindOf(EventEnd, id))]
	assert.True(t, e.Removed)
	assert.Equal(t, "killed", e.ExitReason)
}

func TestObserverAllowlistRefusal(t *testing.T) {
	rec := newEvRecorder()
	reg := newTestRegistry(t, Config{Observer: rec, Security: "allowlist", Allowlist: []string{"echo"}})
	sc := reg.Scope("agent:deny")
	marker := filepath.Join(t.TempDir(), "ran")
	res := mustExec(t, sc, &ExecRequest{Command: "touch " + marker})
	require.True(t, res.IsError, res.Text())
	res = mustExec(t, sc, &ExecRequest{Command: "echo allowed"})
	require.Equal(t, StatusCompleted, res.Details.Status, res.Text())

	// Events are delivered in order: once the second call's end is in,
	// everything about the first one is too.
	evs := rec.await(t, "the allowed call's end", func(evs []Event) bool {
		return slices.ContainsFunc(evs, func(e Event) bool { return e.Kind == EventEnd })
	})
	denied := find(evs, func(e Event) bool { return e.Kind == EventDecision && strings.Contains(e.Command, "touch") })
	require.GreaterOrEqual(t, denied, 0)
	d := evs[denied]
	assert.Equal(t, DecisionDenied, d.Decision)
	assert.Equal(t, DecidedByPolicy, d.DecidedBy)
	assert.Contains(t, d.Reason, "security=allowlist")
	assert.Equal(t, -1, find(evs, func(e Event) bool { return e.Kind == EventSpawn && e.CallID == d.CallID }), "nothing spawned for the refusal")
	assert.NoFileExists(t, marker)

	allowed := find(evs, func(e Event) bool { return e.Kind == EventDecision && e.Command == "echo allowed" })
	require.GreaterOrEqual(t, allowed, 0)
	assert.Equal(t, DecisionAllowed, evs[allowed].Decision)
	assert.Equal(t, DecidedByAllowlist, evs[allowed].DecidedBy)
}

// reasonApprover approves everything with a reason.
type reasonApprover struct{}

func (reasonApprover) Approve(context.Context, *ApprovalRequest) (bool, string, error) {
	return true, "ok by the on-call human", nil
}

func TestObserverApproval(t *testing.T) {
	rec := newEvRecorder()
	reg := newTestRegistry(t, Config{Observer: rec, Ask: "always", Approver: reasonApprover{}})
	res := mustExec(t, reg.Scope("agent:ap"), &ExecRequest{Command: helper("echo", "approved")})
	require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
	evs := rec.await(t, "the end", func(evs []Event) bool {
		return slices.ContainsFunc(evs, func(e Event) bool { return e.Kind == EventEnd })
	})
	dec := find(evs, func(e Event) bool { return e.Kind == EventDecision })
	require.GreaterOrEqual(t, dec, 0)
	assert.Equal(t, DecisionApproved, evs[dec].Decision)
	assert.Equal(t, DecidedByApprover, evs[dec].DecidedBy)
	assert.Equal(t, "ok by the on-call human", evs[dec].Reason)
	assert.Less(t, dec, find(evs, func(e Event) bool { return e.Kind == EventSpawn }))
}

func TestObserverDeferredApprovalDecided(t *testing.T) {
	rec := newEvRecorder()
	reg := newTestRegistry(t, Config{Observer: rec, Ask: "always", Approver: &deferrer{}})
	sc := reg.Scope("agent:later")
	res := mustExec(t, sc, &ExecRequest{Command: helper("echo", "later")})
	require.Equal(t, StatusApprovalPending, res.Details.Status, res.Text())
	require.NoError(t, sc.Decide(testCtx(t), res.Details.ApprovalID, DecisionDeny))
	res = mustExec(t, sc, &ExecRequest{Command: helper("echo", "again")})
	second := res.Details.ApprovalID
	require.NoError(t, sc.Decide(testCtx(t), second, DecisionAllowOnce))
	evs := rec.await(t, "the approved run's end", func(evs []Event) bool {
		return slices.ContainsFunc(evs, func(e Event) bool { return e.Kind == EventEnd })
	})
	var got []string
	for _, e := range evs {
		if e.Kind == EventDecision {
			got = append(got, e.Decision+" by "+e.DecidedBy)
		}
	}
	assert.Equal(t, []string{"pending by approver", "denied by decide", "pending by approver", "approved by decide"}, got)
	first := evs[find(evs, func(e Event) bool { return e.Kind == EventDecision })]
	assert.NotEmpty(t, first.ApprovalID, "a pending decision names its approval")
	last := evs[find(evs, func(e Event) bool { return e.Kind == EventDecision && e.Decision == DecisionApproved })]
	assert.Equal(t, second, last.ApprovalID)
	assert.Equal(t, DecisionAllowOnce, last.Reason)
	sp := find(evs, func(e Event) bool { return e.Kind == EventSpawn })
	require.GreaterOrEqual(t, sp, 0)
	assert.Equal(t, last.CallID, evs[sp].CallID, "the approved run's spawn follows its decision")
}

func TestObserverStdinWrite(t *testing.T) {
	for _, withData := range []bool{false, true} {
		name := "a write carries its size only"
		if withData {
			name = "with ObserveInputData a write carries its bytes"
		}
		t.Run(name, func(t *testing.T) {
			rec := newEvRecorder()
			reg := newTestRegistry(t, Config{Observer: rec, ObserveInputData: withData})
			sc := reg.Scope("agent:w")
			id := startBackground(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe"})
			mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "hello secret\n", EOF: true})
			waitExit(t, sc, id)
			evs := rec.endOf(t, id)
			in := find(evs, func(e Event) bool { return e.Kind == EventInput && e.Action == "write" })
			eof := find(evs, func(e Event) bool { return e.Kind == EventInput && e.Action == "eof" })
			require.GreaterOrEqual(t, in, 0)
			require.GreaterOrEqual(t, eof, 0)
			assert.Equal(t, id, evs[in].SessionID)
			assert.Equal(t, len("hello secret\n"), evs[in].Bytes)
			if withData {
				assert.Equal(t, "hello secret\n", evs[in].Data)
			} else {
				assert.Empty(t, evs[in].Data)
			}
			sp, end := find(evs, kindOf(EventSpawn, id)), find(evs, kindOf(EventEnd, id))
			assert.Less(t, sp, in)
			assert.Less(t, in, eof)
			assert.Less(t, eof, end)
		})
	}
}

// TestObserverOrderPerSession runs sessions side by side, each taking
// several writes: every session's events arrive spawn, inputs in the
// order written, end.
func TestObserverOrderPerSession(t *testing.T) {
	rec := newEvRecorder()
	reg := newTestRegistry(t, Config{Observer: rec, ObserveInputData: true})
	sc := reg.Scope("agent:order")
	const n = 4
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		ids[i] = startBackground(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe"})
	}
	for _, id := range ids {
		wg.Go(func() {
			for j := range 3 {
				_, _ = sc.Process(testCtx(t), &ProcessRequest{Action: "write", SessionID: id, Data: strings.Repeat("x", j+1) + "\n", EOF: j == 2})
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		waitExit(t, sc, id)
		rec.endOf(t, id)
	}
	evs := rec.snapshot()
	for _, id := range ids {
		var seq []string
		for _, e := range evs {
			if e.SessionID == id {
				seq = append(seq, string(e.Kind)+":"+e.Data)
			}
		}
		assert.Equal(t, []string{"spawn:", "result:", "input:x\n", "input:xx\n", "input:xxx\n", "input:", "end:"}, seq, "session %s", id)
	}
}

// TestObserverSlowNeverBlocks holds the observer while a burst of execs
// runs: none waits for it, the queue overflows and the drops are counted;
// after Close every event is delivered or counted.
func TestObserverSlowNeverBlocks(t *testing.T) {
	rec := newEvRecorder()
	rec.gate = make(chan struct{})
	reg, err := NewRegistry(sandboxed(Config{Observer: rec, ObserverQueue: 4, YieldMs: MaxYieldMs}))
	require.NoError(t, err)
	sc := reg.Scope("agent:burst")
	const calls = 12
	for range calls {
		res := mustExec(t, sc, &ExecRequest{Command: "exit 0"}) // bounded by testCtx
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
	}
	st := reg.ObserverStats()
	assert.Positive(t, st.Dropped, "a full queue drops")
	close(rec.gate)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, reg.Close(ctx))
	st = reg.ObserverStats()
	// Each call sends a decision, a spawn, an end and its result.
	assert.Equal(t, uint64(4*calls), st.Delivered+st.Dropped, "%+v", st)
	assert.Equal(t, int(st.Delivered), len(rec.snapshot()))
}

func TestObserverRequiredRefuses(t *testing.T) {
	for _, failing := range []EventKind{EventDecision, EventSpawn} {
		t.Run("a failing "+string(failing)+" event refuses the exec", func(t *testing.T) {
			rec := newEvRecorder()
			rec.fail = func(k EventKind) bool { return k == failing }
			reg := newTestRegistry(t, Config{Observer: rec, ObserverRequired: true})
			sc := reg.Scope("agent:req")
			marker := filepath.Join(t.TempDir(), "ran")
			res := mustExec(t, sc, &ExecRequest{Command: "touch " + marker})
			require.True(t, res.IsError, res.Text())
			assert.Contains(t, res.Text(), "audit observer failed")
			assert.Contains(t, res.Text(), "audit sink unavailable")
			assert.NoFileExists(t, marker)
			assert.Equal(t, -1, find(rec.snapshot(), func(e Event) bool { return e.Kind == EventEnd }), "no session ran")
			reg.mu.Lock()
			assert.Empty(t, reg.sessions, "no session was registered")
			assert.Empty(t, reg.reserved, "the reserved id was released")
			reg.mu.Unlock()
		})
	}
	t.Run("a working observer lets it run and ends are delivered", func(t *testing.T) {
		rec := newEvRecorder()
		reg := newTestRegistry(t, Config{Observer: rec, ObserverRequired: true})
		res := mustExec(t, reg.Scope("agent:req"), &ExecRequest{Command: helper("echo", "ran")})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		rec.await(t, "the end", func(evs []Event) bool {
			return slices.ContainsFunc(evs, func(e Event) bool { return e.Kind == EventEnd })
		})
	})
	t.Run("without an observer NewRegistry fails", func(t *testing.T) {
		_, err := NewRegistry(Config{ObserverRequired: true})
		require.ErrorContains(t, err, "ObserverRequired")
	})
}

// slowEvRecorder takes a little time over each event.
type slowEvRecorder struct{ *evRecorder }

func (s slowEvRecorder) Observe(ev Event) {
	time.Sleep(5 * time.Millisecond)
	s.evRecorder.Observe(ev)
}

// TestObserverCloseDrains checks that Close delivers every queued event,
// the ends of the sessions it kills included, before it returns.
func TestObserverCloseDrains(t *testing.T) {
	rec := newEvRecorder()
	reg, err := NewRegistry(sandboxed(Config{Observer: slowEvRecorder{rec}}))
	require.NoError(t, err)
	sc := reg.Scope("agent:close")
	var ids []string
	for range 3 {
		id := startBackground(t, sc, &ExecRequest{Command: helper("hang")})
		waitFor(t, sc, id, "ready")
		ids = append(ids, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, reg.Close(ctx))
	evs := rec.snapshot()
	for _, id := range ids {
		end := find(evs, kindOf(EventEnd, id))
		require.GreaterOrEqual(t, end, 0, "the end of %s was delivered before Close returned", id)
		assert.Equal(t, "killed", evs[end].ExitReason)
	}
	st := reg.ObserverStats()
	assert.Zero(t, st.Dropped)
	assert.Equal(t, uint64(len(evs)), st.Delivered)
	// goleak in TestMain checks that the delivery goroutine ended.
}

func TestAuditLogLines(t *testing.T) {
	var buf bytes.Buffer
	reg, err := NewRegistry(sandboxed(Config{Observer: NewAuditLog(&buf), YieldMs: MaxYieldMs}))
	require.NoError(t, err)
	sc := reg.Scope("agent:log")
	res := mustExec(t, sc, &ExecRequest{Command: helper("echo", "hi"), Env: map[string]string{"TOKEN": "never-logged"}})
	require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
	res = mustExec(t, sc, &ExecRequest{Command: "echo refused", Security: "deny"})
	require.True(t, res.IsError)
	id := startBackground(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe"})
	mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "abc\n"})
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, reg.Close(ctx))

	assert.NotContains(t, buf.String(), "never-logged")
	kinds := map[string][]map[string]json.RawMessage{}
	sc2 := bufio.NewScanner(&buf)
	for sc2.Scan() {
		var line map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(sc2.Bytes(), &line), sc2.Text())
		for _, k := range []string{"event", "time", "scope", "sessionId"} {
			require.Contains(t, line, k, sc2.Text())
		}
		var ev string
		require.NoError(t, json.Unmarshal(line["event"], &ev))
		var ts string
		require.NoError(t, json.Unmarshal(line["time"], &ts))
		_, err := time.Parse(time.RFC3339Nano, ts)
		require.NoError(t, err)
		kinds[ev] = append(kinds[ev], line)
	}
	want := map[string][]string{
		"spawn":    {"command", "workdir", "envKeys"},
		"decision": {"command", "decision", "decidedBy", "reason"},
		"input":    {"action", "bytes"},
		"control":  {"action"},
		"end":      {"exitCode", "signal", "exitReason", "durationMs", "outputBytes", "truncated"},
	}
	for kind, keys := range want {
		require.NotEmpty(t, kinds[kind], "a %s line", kind)
		for _, line := range kinds[kind] {
			for _, k := range keys {
				assert.Contains(t, line, k, "%s line", kind)
			}
		}
	}
	assert.JSONEq(t, `["TOKEN"]`, string(kinds["spawn"][0]["envKeys"]))
	assert.NotContains(t, kinds["input"][0], "data", "input data is off by default")
	var denied bool
	for _, d := range kinds["decision"] {
		denied = denied || string(d["decision"]) == `"denied"`
	}
	assert.True(t, denied, "the refusal is logged")
	var killed map[string]json.RawMessage
	for _, e := range kinds["end"] {
		if string(e["sessionId"]) == `"`+id+`"` {
			killed = e
		}
	}
	require.NotNil(t, killed, "the killed session's end")
	assert.Equal(t, `"killed"`, string(killed["exitReason"]))
	// A signal ends it, or (in the sandbox, whose init relays it) an
	// exit code after the termination request: one of the two is set.
	if string(killed["signal"]) == `""` {
		assert.NotEqual(t, "null", string(killed["exitCode"]))
	} else {
		assert.Equal(t, "null", string(killed["exitCode"]))
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestAuditLogRequiredWriteFailure(t *testing.T) {
	reg := newTestRegistry(t, Config{Observer: NewAuditLog(failingWriter{}), ObserverRequired: true})
	marker := filepath.Join(t.TempDir(), "ran")
	res := mustExec(t, reg.Scope("agent:f"), &ExecRequest{Command: "touch " + marker})
	require.True(t, res.IsError, res.Text())
	assert.Contains(t, res.Text(), "file already closed")
	assert.NoFileExists(t, marker)
}

// TestObserverRequiredStuckObserverClose: an exec waiting for a required
// observer that never returns does not hold Close, and Close's deadline
// releases the exec, which spawns nothing.
func TestObserverRequiredStuckObserverClose(t *testing.T) {
	rec := newEvRecorder()
	rec.gate, rec.entered = make(chan struct{}), make(chan struct{}, 1)
	defer close(rec.gate) // lets the abandoned delivery finish for goleak
	reg, err := NewRegistry(sandboxed(Config{Observer: rec, ObserverRequired: true}))
	require.NoError(t, err)
	marker := filepath.Join(t.TempDir(), "ran")
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := reg.Scope("agent:stuck").Exec(context.Background(), &ExecRequest{Command: "touch " + marker})
		done <- outcome{res, err}
	}()
	select {
	case <-rec.entered: // the exec's decision event is in the observer
	case <-time.After(20 * time.Second):
		t.Fatal("the observer was never called")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, reg.Close(ctx), context.DeadlineExceeded, "the observer is still in a call")
	select {
	case o := <-done:
		require.NoError(t, o.err)
		require.True(t, o.res.IsError, o.res.Text())
		assert.Contains(t, o.res.Text(), "registry is closing")
	case <-time.After(20 * time.Second):
		t.Fatal("the exec still waits for the observer after Close gave up on it")
	}
	assert.NoFileExists(t, marker)
}

func TestObserverEndUsage(t *testing.T) {
	needTool(t, "python3")
	rec := newEvRecorder()
	reg := newTestRegistry(t, Config{Observer: rec})
	// Some CPU time in a grandchild of the shell.
	res := mustExec(t, reg.Scope("agent:a"), &ExecRequest{Command: `python3 -c 'print(sum(range(5000000)))'; true`})
	require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
	evs := rec.await(t, "the end", func(evs []Event) bool {
		return find(evs, func(e Event) bool { return e.Kind == EventEnd }) >= 0
	})
	e := evs[find(evs, func(e Event) bool { return e.Kind == EventEnd })]
	if inSandboxSuite() {
		assert.Equal(t, int64(-1), e.CPUMs, "bubblewrap does not account its command's time")
	} else {
		assert.GreaterOrEqual(t, e.CPUMs, int64(10), "the CPU time of the reaped processes (python's sum takes well over 10 ms)")
	}

	var buf bytes.Buffer
	log := NewAuditLog(&buf)
	log.Observe(e)
	assert.Contains(t, buf.String(), fmt.Sprintf(`"cpuMs":%d`, e.CPUMs))
}

// The end event carries the session cgroup's peak memory, counted from
// the session's start: a session that reuses the cgroup of one that held
// 80 MiB reports its own small peak.
func TestObserverEndPeakMemory(t *testing.T) {
	needTool(t, "python3")
	rec := newEvRecorder()
	const limit = 512 << 20
	reg := newTestRegistry(t, Config{Observer: rec, Limits: Limits{MemoryBytes: limit}})
	sc := reg.Scope("agent:a")
	ends := func(n int) []Event {
		evs := rec.await(t, "the ends", func(evs []Event) bool {
			c := 0
			for _, e := range evs {
				if e.Kind == EventEnd {
					c++
				}
			}
			return c >= n
		})
		var out []Event
		for _, e := range evs {
			if e.Kind == EventEnd {
				out = append(out, e)
			}
		}
		return out
	}
	res := mustExec(t, sc, &ExecRequest{Command: `python3 -c 'b = b"x" * (80 << 20); print(len(b))'`})
	require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
	big := ends(1)[0]
	res = mustExec(t, sc, &ExecRequest{Command: `true`})
	require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
	small := ends(2)[1]
	t.Logf("peaks: %d and %d bytes (memory limit applied: %v)", big.PeakMemoryBytes, small.PeakMemoryBytes, reg.Containment().Memory.Applied)
	if !reg.Containment().Memory.Applied {
		assert.Equal(t, int64(-1), big.PeakMemoryBytes, "no memory controller reaches the session")
		assert.Equal(t, int64(-1), small.PeakMemoryBytes)
		return
	}
	assert.GreaterOrEqual(t, big.PeakMemoryBytes, int64(80<<20), "python held 80 MiB")
	assert.Less(t, big.PeakMemoryBytes, int64(limit))
	assert.Greater(t, small.PeakMemoryBytes, int64(0))
	assert.Less(t, small.PeakMemoryBytes, int64(40<<20), "the next session's peak is its own")

	var buf bytes.Buffer
	NewAuditLog(&buf).Observe(big)
	assert.Contains(t, buf.String(), fmt.Sprintf(`"peakMemoryBytes":%d`, big.PeakMemoryBytes))
}

// Every exec call ends with a result event: its status, the session it
// started, and the call's own duration, under the call id its decision
// and spawn events carry.
func TestObserverResultEvent(t *testing.T) {
	rec := newEvRecorder()
	reg := newTestRegistry(t, Config{Observer: rec})
	sc := reg.Scope("agent:r")
	fg := mustExec(t, sc, &ExecRequest{Command: "echo hi"})
	require.Equal(t, StatusCompleted, fg.Details.Status, fg.Text())
	bg := mustExec(t, sc, &ExecRequest{Command: "sleep 30", Background: true})
	require.Equal(t, StatusRunning, bg.Details.Status, bg.Text())
	refused := mustExec(t, sc, &ExecRequest{Command: "echo no", Security: "deny"})
	require.True(t, refused.IsError, refused.Text())
	_, err := sc.Exec(canceledCtx(), &ExecRequest{Command: "echo late"})
	require.Error(t, err)

	evs := rec.await(t, "four results", func(evs []Event) bool {
		n := 0
		for _, e := range evs {
			if e.Kind == EventResult {
				n++
			}
		}
		return n >= 4
	})
	var results []Event
	for _, e := range evs {
		if e.Kind == EventResult {
			results = append(results, e)
		}
	}
	want := []struct {
		status     string
		hasSession bool
	}{{"completed", true}, {"running", true}, {"failed", false}, {"error", false}}
	for i, w := range want {
		r := results[i]
		assert.Equal(t, w.status, r.Status, "result %d", i)
		assert.Equal(t, w.hasSession, r.SessionID != "", "result %d names the session it started", i)
		assert.Equal(t, "agent:r", r.Scope)
		assert.Greater(t, r.Duration, time.Duration(0))
		assert.NotEmpty(t, r.CallID)
	}
	for _, i := range []int{0, 1} {
		j := find(evs, kindOf(EventSpawn, results[i].SessionID))
		require.GreaterOrEqual(t, j, 0, "the spawn of %+v among %+v", results[i], evs)
		spawn := evs[j]
		assert.Equal(t, spawn.CallID, results[i].CallID, "the spawn and the result share the call id")
	}
	dec := evs[find(evs, func(e Event) bool { return e.Kind == EventDecision && e.Decision == DecisionDenied })]
	assert.Equal(t, dec.CallID, results[2].CallID, "the refusal and its result share the call id")

	assert.Equal(t, bg.Details.SessionID, results[1].SessionID)

	var buf bytes.Buffer
	NewAuditLog(&buf).Observe(results[0])
	assert.Contains(t, buf.String(), `"event":"result"`)
	assert.Contains(t, buf.String(), `"status":"completed"`)
	assert.Contains(t, buf.String(), `"durationMs":`)
}

// canceledCtx is a context that has ended.
func canceledCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
