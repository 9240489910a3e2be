//go:build linux

package bgexec

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deferrer is an Approver that always defers.
type deferrer struct{ calls atomic.Int32 }

func (d *deferrer) Approve(context.Context, *ApprovalRequest) (bool, string, error) {
	d.calls.Add(1)
	return false, "", ErrApprovalDeferred
}

// memStore is an ApprovalStore in memory.
type memStore struct {
	mu    sync.Mutex
	rules []string
}

func (m *memStore) Load(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.rules), nil
}

func (m *memStore) Save(_ context.Context, rule string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rules = append(m.rules, rule)
	return nil
}

// awaitEvents collects the scope's queued events until n have arrived.
func awaitEvents(t *testing.T, q *Queue, scope string, n int) []string {
	t.Helper()
	var got []string
	require.Eventually(t, func() bool {
		got = append(got, q.Drain(scope)...)
		return len(got) >= n
	}, 20*time.Second, 10*time.Millisecond, "events so far: %q", got)
	return got
}

// pendingExec runs command and checks the approval-pending result.
func pendingExec(t *testing.T, sc *Scope, command string) string {
	t.Helper()
	res := mustExec(t, sc, &ExecRequest{Command: command})
	require.Equal(t, StatusApprovalPending, res.Details.Status, res.Text())
	id := res.Details.ApprovalID
	require.Regexp(t, `^approval-[0-9a-f]{12}$`, id)
	assert.Equal(t, "Approval required (id "+id+"): "+command+". Nothing has run yet; the result will follow once it is decided.", res.Text())
	assert.Equal(t, []string{"allow-once", "allow-always", "deny"}, res.Details.AllowedDecisions)
	assert.InDelta(t, time.Now().UnixMilli(), res.Details.ExpiresAtMs, float64(DefaultApprovalTimeout.Milliseconds()+5000))
	assert.False(t, res.IsError)
	return id
}

func TestApprovalsCanWait(t *testing.T) {
	cfg := func(d *deferrer, q *Queue) Config {
		return Config{Security: "allowlist", Ask: "on-miss", Allowlist: []string{"echo"}, Approver: d, Notifier: q}
	}
	t.Run("a deferred approval runs nothing until allow-once, then runs it in the background", func(t *testing.T) {
		d, q := &deferrer{}, NewQueue()
		sc := newTestRegistry(t, cfg(d, q)).Scope("a")
		marker := filepath.Join(t.TempDir(), "ran")
		cmd := "touch " + marker + " && printf 'ran\\n'"
		id := pendingExec(t, sc, cmd)
		assert.NoFileExists(t, marker, "nothing has run yet")
		require.NoError(t, sc.Decide(testCtx(t), id, DecisionAllowOnce))
		events := awaitEvents(t, q, "a", 2)
		require.Len(t, events, 2)
		m := regexp.MustCompile(`^Exec approved \(approval ` + id + `\): running as session (\S+): ` + regexp.QuoteMeta(cmd) + `$`).FindStringSubmatch(events[0])
		require.NotNil(t, m, events[0])
		assert.Equal(t, "Exec completed ("+m[1]+", code 0) :: ran", events[1])
		assert.FileExists(t, marker)
		assert.Equal(t, int32(1), d.calls.Load(), "the decided run is not asked about again")
		assert.ErrorIs(t, sc.Decide(testCtx(t), id, DecisionAllowOnce), ErrUnknownApproval, "decided once")
	})
	t.Run("deny refuses it, and the agent hears so", func(t *testing.T) {
		d, q := &deferrer{}, NewQueue()
		sc := newTestRegistry(t, cfg(d, q)).Scope("a")
		marker := filepath.Join(t.TempDir(), "ran")
		id := pendingExec(t, sc, "touch "+marker)
		require.NoError(t, sc.Decide(testCtx(t), id, DecisionDeny))
		assert.Equal(t, []string{"Exec denied (approval " + id + "): not approved; nothing ran: touch " + marker}, awaitEvents(t, q, "a", 1))
		assert.NoFileExists(t, marker)
	})
	t.Run("an approval not decided in time expires as a denial", func(t *testing.T) {
		d, q := &deferrer{}, NewQueue()
		c := cfg(d, q)
		c.ApprovalTimeout = 200 * time.Millisecond
		sc := newTestRegistry(t, c).Scope("a")
		marker := filepath.Join(t.TempDir(), "ran")
		res := mustExec(t, sc, &ExecRequest{Command: "touch " + marker})
		require.Equal(t, StatusApprovalPending, res.Details.Status)
		id := res.Details.ApprovalID
		assert.Equal(t, []string{"Exec denied (approval " + id + "): the approval expired after 200ms; nothing ran: touch " + marker}, awaitEvents(t, q, "a", 1))
		assert.ErrorIs(t, sc.Decide(testCtx(t), id, DecisionAllowOnce), ErrUnknownApproval)
		assert.NoFileExists(t, marker)
	})
	t.Run("allow-always adds a lasting rule: the command then runs without asking, also after a restart", func(t *testing.T) {
		d, q, store := &deferrer{}, NewQueue(), &memStore{}
		c := cfg(d, q)
		c.ApprovalStore = store
		sc := newTestRegistry(t, c).Scope("a")
		id := pendingExec(t, sc, "uname")
		require.NoError(t, sc.Decide(testCtx(t), id, DecisionAllowAlways))
		awaitEvents(t, q, "a", 1)
		assert.Equal(t, []string{"uname"}, store.rules)
		res := mustExec(t, sc, &ExecRequest{Command: "uname"})
		assert.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		assert.Equal(t, int32(1), d.calls.Load(), "not asked again")
		check, err := sc.Check(testCtx(t), &ExecRequest{Command: "uname"})
		require.NoError(t, err)
		assert.Equal(t, "run", check.Decision)

		d2 := &deferrer{}
		c2 := cfg(d2, NewQueue())
		c2.ApprovalStore = store
		res = mustExec(t, newTestRegistry(t, c2).Scope("a"), &ExecRequest{Command: "uname"})
		assert.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		assert.Zero(t, d2.calls.Load(), "a new registry loads the rule")
	})
	t.Run("Check says what exec would do without asking or running", func(t *testing.T) {
		d := &deferrer{}
		sc := newTestRegistry(t, cfg(d, NewQueue())).Scope("a")
		marker := filepath.Join(t.TempDir(), "ran")
		host := "gateway"
		if inSandboxSuite() {
			host = "sandbox"
		}
		for _, tc := range []struct {
			req      ExecRequest
			decision string
			reason   string
		}{
			{ExecRequest{Command: "echo hi"}, "run", ""},
			{ExecRequest{Command: "touch " + marker}, "approval", `approval required: "touch" is not on the allowlist (ask=on-miss)`},
			{ExecRequest{Command: "echo hi", Security: "deny"}, "refuse", "exec denied: host=" + host + " security=deny"},
			{ExecRequest{Command: "echo hi", Host: "node"}, "refuse", "exec host not allowed (requested node; configure tools.exec.host=node to allow)."},
			{ExecRequest{Command: " "}, "refuse", "Provide a command to start."},
			{ExecRequest{Command: "echo (", Ask: "always"}, "refuse", ""},
		} {
			got, err := sc.Check(testCtx(t), &tc.req)
			require.NoError(t, err)
			assert.Equal(t, tc.decision, got.Decision, tc.req.Command)
			if tc.reason != "" {
				assert.Equal(t, tc.reason, got.Reason, tc.req.Command)
			}
		}
		assert.Zero(t, d.calls.Load(), "Check never calls the approver")
		assert.NoFileExists(t, marker)
		got, err := newTestRegistry(t, Config{Ask: "always"}).Scope("a").Check(testCtx(t), &ExecRequest{Command: "echo hi"})
		require.NoError(t, err)
		assert.Equal(t, CheckResult{Decision: "refuse", Reason: "exec denied: approval required but no approver is configured."}, *got)
	})
	t.Run("an unknown id, another scope's id and a bad decision are refused", func(t *testing.T) {
		d, q := &deferrer{}, NewQueue()
		reg := newTestRegistry(t, cfg(d, q))
		sc, other := reg.Scope("a"), reg.Scope("b")
		id := pendingExec(t, sc, "printf 'mine\\n'")
		assert.ErrorIs(t, sc.Decide(testCtx(t), "approval-000000000000", DecisionAllowOnce), ErrUnknownApproval)
		assert.ErrorIs(t, other.Decide(testCtx(t), id, DecisionAllowOnce), ErrUnknownApproval)
		assert.ErrorContains(t, sc.Decide(testCtx(t), id, "yes"), `decision "yes" is not one of allow-once, allow-always, deny`)
		require.NoError(t, sc.Decide(testCtx(t), id, DecisionAllowOnce), "still pending for its own scope")
		assert.Len(t, awaitEvents(t, q, "a", 2), 2)
		assert.Empty(t, q.Drain("b"))
	})
	t.Run("without a notifier the outcome comes with the next result", func(t *testing.T) {
		d := &deferrer{}
		c := cfg(d, nil)
		c.Notifier, c.ExitNoticesInResults = nil, true
		sc := newTestRegistry(t, c).Scope("a")
		id := pendingExec(t, sc, "printf 'x\\n'")
		require.NoError(t, sc.Decide(testCtx(t), id, DecisionDeny))
		notice := NoticePrefix + "Exec denied (approval " + id + "): not approved; nothing ran: printf 'x\\n'"
		lost := mustProcess(t, sc, &ProcessRequest{Action: "list"})
		assert.Contains(t, lost.Text(), notice)
		require.NoError(t, sc.Undelivered(testCtx(t), lost))
		res := mustProcess(t, sc, &ProcessRequest{Action: "list"})
		assert.Contains(t, res.Text(), notice, "a notice that never reached the model comes again")
		res = mustProcess(t, sc, &ProcessRequest{Action: "list"})
		assert.NotContains(t, res.Text(), notice)
	})
	t.Run("Close ends pending approvals without events", func(t *testing.T) {
		d, q := &deferrer{}, NewQueue()
		c := cfg(d, q)
		c.ApprovalTimeout = 100 * time.Millisecond
		reg, err := NewRegistry(c)
		require.NoError(t, err)
		sc := reg.Scope("a")
		pendingExecNoCheck := mustExec(t, sc, &ExecRequest{Command: "printf 'x\\n'"})
		require.Equal(t, StatusApprovalPending, pendingExecNoCheck.Details.Status)
		require.NoError(t, reg.Close(testCtx(t)))
		assert.ErrorIs(t, sc.Decide(testCtx(t), pendingExecNoCheck.Details.ApprovalID, DecisionAllowOnce), ErrClosed)
	})
}
