//go:build linux

package bgexec

// Regression tests: each failed (or panicked) before the fix it names.

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/host/hosttest"
	"github.com/bgexec/bgexec/internal/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCloseWhileExecCallsSpawn(t *testing.T) {
	t.Parallel()
	for round := range 50 {
		reg, err := NewRegistry(sandboxed(Config{YieldMs: MaxYieldMs}))
		require.NoError(t, err)
		dir := ""
		if cgroupRoot(reg) != nil {
			dir = cgroupRoot(reg).Dir()
		}
		sc := reg.Scope("a")
		var wg sync.WaitGroup
		var n atomic.Int64
		going := make(chan struct{})
		var once sync.Once
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					res, err := sc.Exec(context.Background(), &ExecRequest{Command: "true"})
					if errors.Is(err, ErrClosed) {
						return
					}
					if !assert.NoError(t, err) || !assert.NotEqual(t, ExitReasonSpawnError, res.Details.ExitReason, "round %d: %s", round, res.Text()) {
						return
					}
					if n.Add(1) == 8 {
						once.Do(func() { close(going) })
					}
				}
			}()
		}
		select {
		case <-going:
		case <-time.After(60 * time.Second):
			_ = reg.Close(context.Background())
			wg.Wait()
			t.Fatalf("round %d: the workers did not get going", round)
		}
		require.NoError(t, reg.Close(context.Background())) // panicked: WaitGroup is reused before previous Wait has returned
		wg.Wait()
		if dir != "" {
			_, err := os.Stat(dir)
			require.True(t, os.IsNotExist(err), "round %d: registry cgroup %s left behind", round, dir)
		}
	}
}

func TestCloseGivesTheGracePeriod(t *testing.T) {
	t.Parallel()
	reg, err := NewRegistry(sandboxed(Config{YieldMs: MaxYieldMs, KillGrace: 5 * time.Second}))
	require.NoError(t, err)
	sc := reg.Scope("a")
	var ss []*session.Session
	for range 4 {
		id := startBackground(t, sc, &ExecRequest{Command: "exec " + helper("trap-exit0")})
		waitFor(t, sc, id, "ready")
		ss = append(ss, sessionOf(reg, id))
	}
	require.NoError(t, reg.Close(testCtx(t)))
	for _, s := range ss {
		e := s.Snapshot(0).Exit
		assert.Empty(t, e.Signal, "session %s got SIGTERM and exited 0, not SIGKILL", s.ID())
		assert.Equal(t, "0", codeString(e.Code), "session %s", s.ID())
		assert.Equal(t, ExitReasonKilled, reasonOf(e.Reason), "session %s", s.ID())
	}
}

// TestSessionIDsAreNotReissued: ids are the registry's, so the commands
// run on a fake host that ends each one at once (300 real processes would
// only cost CPU).
func TestSessionIDsAreNotReissued(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	setHost(reg, exitingHost())
	sc := reg.Scope("a")
	seen := map[string]int{}
	for i := range 300 {
		id := startBackground(t, sc, &ExecRequest{Command: "true"})
		waitExit(t, sc, id)
		mustProcess(t, sc, &ProcessRequest{Action: "clear", SessionID: id})
		j, dup := seen[id]
		require.False(t, dup, "session id %q of session #%d reissued to session #%d", id, j, i)
		seen[id] = i
	}
}

// TestBackgroundAlwaysReturnsRunning starts commands that have already
// exited by the time Exec marks them: background:true must still return
// "running" and keep the session, never a foreground "completed" result.
func TestBackgroundAlwaysReturnsRunning(t *testing.T) {
	t.Parallel()
	reg, err := NewRegistry(sandboxed(Config{JobTTLMs: 60000}))
	require.NoError(t, err)
	defer reg.Close(context.Background())
	setHost(reg, exitingHost()) // each command is gone before its session is even started
	sc := reg.Scope("a")
	for i := range 2000 {
		res := mustExec(t, sc, &ExecRequest{Command: "fake", Background: true})
		require.Equal(t, StatusRunning, res.Details.Status, "exec #%d: %s", i, res.Text())
		require.NotEmpty(t, res.Details.SessionID, "exec #%d", i)
		mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: res.Details.SessionID, Timeout: ptr(Number(20000))})
		mustProcess(t, sc, &ProcessRequest{Action: "clear", SessionID: res.Details.SessionID})
	}
}

// TestClearedSessionsLeaveTheExpiryHeap: a cleared or removed session must
// not stay reachable until its TTL passes (an agent that starts and clears
// sessions in a loop would otherwise pin hours of their buffers).
func TestClearedSessionsLeaveTheExpiryHeap(t *testing.T) {
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	for range 20 {
		id := startBackground(t, sc, &ExecRequest{Command: "echo x"})
		waitExit(t, sc, id)
		mustProcess(t, sc, &ProcessRequest{Action: "clear", SessionID: id})
	}
	id := startBackground(t, sc, &ExecRequest{Command: "echo kept"})
	waitExit(t, sc, id)
	// wait returns once the end is recorded; the registry's bookkeeping
	// (the expiry) is done by the time Done closes.
	require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
	reg.mu.Lock()
	defer reg.mu.Unlock()
	require.Len(t, reg.expiry, 1, "only the session not cleared waits for its TTL")
	assert.Equal(t, id, reg.expiry[0].s.ID())
	assert.Len(t, reg.expiryOf, 1)
}

// exitingHost is a fake host whose every command has exited by the time
// Start returns, with code 0: for what the registry does with sessions,
// without the cost of processes.
func exitingHost() *hosttest.Host {
	return &hosttest.Host{StartFunc: func(context.Context, *host.Spec) (*host.Started, error) {
		f, sp := hosttest.Started()
		f.Exit(0)
		return sp, nil
	}}
}
