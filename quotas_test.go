//go:build linux

package bgexec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// An exec beyond a quota is refused before anything is spawned: the
// command's marker file is never created, and no session appears.
func TestQuotasRefuseBeforeSpawn(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{MaxSessions: 3, MaxSessionsPerScope: 2})
	dir := t.TempDir()
	a, b, c := reg.Scope("agent:a"), reg.Scope("agent:b"), reg.Scope("agent:c")
	hold := func(sc *Scope) string {
		res := mustExec(t, sc, &ExecRequest{Command: "sleep 300", Background: true})
		require.Equal(t, StatusRunning, res.Details.Status, res.Text())
		return res.Details.SessionID
	}
	marker := filepath.Join(dir, "spawned")
	refused := func(sc *Scope, want string) {
		t.Helper()
		res := mustExec(t, sc, &ExecRequest{Command: "touch " + marker + "; sleep 300", Background: true})
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.True(t, res.IsError)
		assert.Equal(t, want, res.Text())
		_, err := os.Stat(marker)
		assert.ErrorIs(t, err, os.ErrNotExist, "nothing may be spawned")
	}
	a1 := hold(a)
	hold(a)
	refused(a, "Too many running sessions for this agent (2 of 2). Kill or remove one (process list) and retry.")
	assert.Len(t, mustProcess(t, a, &ProcessRequest{Action: "list"}).Details.Sessions, 2)
	hold(b)
	refused(c, "Too many running sessions on this host (3 of 3). Kill or remove one (process list) and retry.")
	// A foreground run counts too while it runs, and gives its slot back.
	refusedFg := mustExec(t, c, &ExecRequest{Command: "echo hi"})
	assert.Contains(t, refusedFg.Text(), "(3 of 3)")

	// Ending a session frees its slot.
	kill := mustProcess(t, a, &ProcessRequest{Action: "kill", SessionID: a1})
	require.Contains(t, kill.Text(), "Killed session")
	ok := mustExec(t, c, &ExecRequest{Command: "echo hi"})
	assert.Equal(t, "hi", ok.Text())
	hold(a)
}

// Sessions are refused before the host process runs out of descriptors,
// and the host can still open files after the refusals. The test lowers
// RLIMIT_NOFILE, which is process-wide, so it does not run in parallel.
func TestQuotasDescriptorReserve(t *testing.T) {
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &old))
	open, err := contain.OpenDescriptors()
	require.NoError(t, err)
	lim := old
	lim.Cur = uint64(open) + 400
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))
	t.Cleanup(func() { require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &old)) })

	reg := newTestRegistry(t, Config{MaxSessionsPerScope: 1000})
	sc := reg.Scope("agent:fds")
	var refusal string
	started := 0
	for range 400 {
		res := mustExec(t, sc, &ExecRequest{Command: "sleep 300", Background: true})
		if res.Details.Status != StatusRunning {
			refusal = res.Text()
			break
		}
		started++
	}
	t.Logf("%d sessions started, then: %s", started, refusal)
	require.Greater(t, started, 10)
	assert.Regexp(t, `^Too few file descriptors left in the host process for another session \(\d+ of \d+ open, \d+ kept in reserve for the host\)\. Kill or remove a session \(process list\) and retry\.$`, refusal)
	// The host keeps its reserve: it can open files.
	var files []*os.File
	for i := range 40 {
		f, err := os.Open(os.DevNull)
		require.NoError(t, err, "open %d after the refusal", i)
		files = append(files, f)
	}
	for _, f := range files {
		require.NoError(t, f.Close())
	}
	// Freed descriptors make room again, though the cgroups of the killed
	// sessions are kept as spares, whose descriptors, held ready for the
	// next sessions, outnumber what the two sessions held: a session
	// comes first.
	list := mustProcess(t, sc, &ProcessRequest{Action: "list"})
	for _, s := range list.Details.Sessions[:2] {
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: s.SessionID})
	}
	res := mustExec(t, sc, &ExecRequest{Command: "echo again"})
	assert.Equal(t, "again", res.Text())
}

// MaxTimeoutSec caps every timeout, "none" included, with a warning.
func TestQuotasTimeoutCap(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{MaxTimeoutSec: 1, TimeoutSec: -1, KillGrace: 100 * time.Millisecond})
	sc := reg.Scope("agent:cap")
	for _, tc := range []struct {
		timeout *float64
		warning string
	}{
		{ptr(0.0), "Warning: the timeout is capped at 1 seconds by the host (requested: no timeout).\n\n"},
		{ptr(-5.0), "Warning: the timeout is capped at 1 seconds by the host (requested: no timeout).\n\n"},
		{ptr(100.0), "Warning: the timeout is capped at 1 seconds by the host (requested: 100 seconds).\n\n"},
		// Past the largest timeout (30 days), which a cap makes moot.
		{ptr(1e9), "Warning: the timeout is capped at 1 seconds by the host (requested: 1000000000 seconds).\n\n"},
		{nil, ""}, // the configured "none" is capped without a warning
	} {
		name := "default"
		if tc.timeout != nil {
			name = fmt.Sprint(*tc.timeout)
		}
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			res := mustExec(t, sc, &ExecRequest{Command: "sleep 60", Timeout: tc.timeout})
			assert.Less(t, time.Since(start), 30*time.Second)
			assert.Equal(t, ExitReasonTimeout, res.Details.ExitReason)
			assert.True(t, strings.HasPrefix(res.Text(), tc.warning+"Command timed out after 1 seconds."), res.Text())
		})
	}
	// A timeout within the cap is kept, without a warning. (A cap of its
	// own, long enough for a loaded machine to start the command.)
	roomy := newTestRegistry(t, Config{MaxTimeoutSec: 60}).Scope("agent:cap")
	res := mustExec(t, roomy, &ExecRequest{Command: "echo quick", Timeout: ptr(30.0)})
	assert.Equal(t, "quick", res.Text())
	res = mustExec(t, roomy, &ExecRequest{Command: "sleep 60", Timeout: ptr(0.5)})
	assert.Equal(t, ExitReasonTimeout, res.Details.ExitReason)
	assert.True(t, strings.HasPrefix(res.Text(), "Command timed out after 0.5 seconds."), res.Text())

	// A process wait blocks no longer than the cap either. The session's
	// own timeout is capped to the same second, so it ignores the SIGTERM
	// of its timeout and lives through the kill grace: the wait, not the
	// session's end, is what returns at the cap.
	capped := newTestRegistry(t, Config{MaxTimeoutSec: 1, TimeoutSec: 60, KillGrace: 5 * time.Second})
	csc := capped.Scope("agent:cap")
	bg := mustExec(t, csc, &ExecRequest{Command: "trap '' TERM; sleep 30", Background: true, Timeout: ptr(30.0)})
	start := time.Now()
	w := mustProcess(t, csc, &ProcessRequest{Action: "wait", SessionID: bg.Details.SessionID, Pattern: "never", Timeout: ptr(Number(600000))})
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Equal(t, "timeout", w.Details.Condition)
	assert.True(t, strings.HasPrefix(w.Text(), "Timed out after 1000 ms"), w.Text())
}

// MaxOutputBytes: past the budget, the sessions that ended first lose
// their retained output (down to the tail, with the retention notice);
// a running session's unread output is kept whole.
func TestQuotasOutputBudget(t *testing.T) {
	t.Parallel()
	const budget = 1 << 20
	reg := newTestRegistry(t, Config{MaxOutputBytes: budget, MaxSessionsPerScope: 100})
	sc := reg.Scope("agent:budget")
	// About 200 KB each: the default per-session cap.
	print := "head -c 200000 /dev/zero | tr '\\0' x"
	running := mustExec(t, sc, &ExecRequest{Command: "head -c 150000 /dev/zero | tr '\\0' y; echo; echo end-of-running; sleep 300", Background: true})
	w := mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: running.Details.SessionID, Pattern: "end-of-running", Timeout: ptr(Number(60000))})
	require.Equal(t, "pattern", w.Details.Condition, w.Text())
	var ids []string
	for range 10 {
		res := mustExec(t, sc, &ExecRequest{Command: print, Background: true})
		id := res.Details.SessionID
		require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
		ids = append(ids, id)
	}
	retained := func() int64 {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		var n int64
		for _, s := range reg.sessions {
			n += s.RetainedBytes()
		}
		return n
	}
	require.Eventually(t, func() bool { return retained() <= budget }, 30*time.Second, 20*time.Millisecond,
		"retained %d bytes, budget %d", retained(), budget)
	oldest := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: ids[0]})
	assert.True(t, strings.HasPrefix(oldest.Text(), discardNotice), oldest.Text()[:min(200, len(oldest.Text()))])
	assert.Equal(t, int64(trimKeepChars), *oldest.Details.TotalChars)
	newest := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: ids[len(ids)-1]})
	assert.False(t, *newest.Details.Truncated, "the newest finished sessions keep their output")
	// The running session was not touched: its log keeps all it printed.
	log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: running.Details.SessionID})
	assert.False(t, *log.Details.Truncated)
	assert.Equal(t, int64(150000+len("\nend-of-running\n")), *log.Details.TotalChars)
}
