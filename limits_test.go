//go:build linux

package bgexec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// limitedRegistry returns a registry with lim in force, or skips (fails
// under CI=true) where this host cannot apply it.
func limitedRegistry(t *testing.T, cfg Config) *Registry {
	t.Helper()
	if !cgroupsAvailable(t) {
		if os.Getenv("CI") == "true" {
			t.Fatal("cgroup containment is needed for the limit tests")
		}
		t.Skip("no cgroup containment here")
	}
	cfg.Containment = ContainmentRequired
	return newTestRegistry(t, cfg)
}

func TestLimitsConfigValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"negative memory", Config{Limits: Limits{MemoryBytes: -1}}, "Limits.MemoryBytes -1"},
		{"tiny memory", Config{Limits: Limits{MemoryBytes: 4096}}, "at least 1 MiB"},
		{"tasks below -1", Config{Limits: Limits{Tasks: -2}}, "Limits.Tasks -2"},
		{"negative cpu", Config{Limits: Limits{CPU: -0.5}}, "Limits.CPU -0.5"},
		{"tiny cpu", Config{Limits: Limits{CPU: 0.001}}, "0.01 cores"},
		{"negative max sessions", Config{MaxSessions: -1}, "MaxSessions -1"},
		{"negative per scope", Config{MaxSessionsPerScope: -3}, "MaxSessionsPerScope -3"},
		{"negative timeout cap", Config{MaxTimeoutSec: -1}, "MaxTimeoutSec -1"},
		{"negative output budget", Config{MaxOutputBytes: -1}, "MaxOutputBytes -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewRegistry(tc.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestLimitsContainmentReport(t *testing.T) {
	t.Parallel()
	reg := limitedRegistry(t, Config{Limits: Limits{MemoryBytes: 64 << 20, Tasks: 100, CPU: 0.5}})
	rep := reg.Containment()
	assert.True(t, rep.Cgroup)
	for name, l := range map[string]LimitReport{"memory": rep.Memory, "tasks": rep.Tasks, "cpu": rep.CPU} {
		assert.True(t, l.Applied, "%s: %+v", name, l)
		assert.Regexp(t, `^cgroup[12] `, l.Controller, name)
	}
	assert.Equal(t, "64 MiB", rep.Memory.Requested)
	assert.Equal(t, "100 tasks", rep.Tasks.Requested)
	assert.Equal(t, "0.5 cores", rep.CPU.Requested)
	assert.Empty(t, rep.Warnings)

	// Without cgroups nothing can be applied: a warning, no failure …
	off := newTestRegistry(t, Config{Containment: ContainmentOff, Limits: Limits{MemoryBytes: 64 << 20}})
	rep = off.Containment()
	assert.False(t, rep.Cgroup)
	assert.False(t, rep.Memory.Applied)
	assert.Contains(t, rep.Memory.Reason, "no cgroup")
	require.Len(t, rep.Warnings, 2, "memory and the default task limit: %q", rep.Warnings)
}

// The memory limit is the session's cgroup's: a hog is killed by the
// kernel, and the session says so.
func TestLimitsMemoryHogIsKilled(t *testing.T) {
	t.Parallel()
	py := needTool(t, "python3")
	reg := limitedRegistry(t, Config{Limits: Limits{MemoryBytes: 64 << 20}})
	sc := reg.Scope("agent:oom")
	// Touch every page so the memory is charged, 1 MiB at a time.
	hog := py + ` -c 'import time
b = []
for i in range(2048):
    b.append(bytearray(1<<20))
print("survived")'`
	res := mustExec(t, sc, &ExecRequest{Command: hog})
	assert.Equal(t, StatusFailed, res.Details.Status, res.Text())
	assert.Equal(t, ExitReasonOOM, res.Details.ExitReason, res.Text())
	assert.NotContains(t, res.Text(), "survived")
	assert.Contains(t, res.Text(), "Command killed: out of memory (limit 64 MiB).")

	// Backgrounded: poll and the exit event say it too.
	res = mustExec(t, sc, &ExecRequest{Command: hog, Background: true})
	id := res.Details.SessionID
	s := sessionOf(reg, id)
	require.NotNil(t, s)
	require.NoError(t, awaitEnd(testCtx(t), s))
	poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
	assert.Equal(t, ExitReasonOOM, poll.Details.ExitReason)
	assert.Contains(t, poll.Text(), "Process killed: out of memory (limit 64 MiB).")

	// A command within the limit is not affected.
	ok := mustExec(t, sc, &ExecRequest{Command: py + ` -c 'b = bytearray(16<<20); print("fine")'`})
	assert.Equal(t, StatusCompleted, ok.Details.Status, ok.Text())
	assert.Equal(t, "fine", ok.Text())
}

// A fork bomb in one session meets its own task limit: its forks fail,
// and other sessions' execs all succeed meanwhile.
func TestLimitsForkBombStaysInItsSession(t *testing.T) {
	t.Parallel()
	// The CPU quota keeps the bomb's retries from starving the machine.
	reg := limitedRegistry(t, Config{Limits: Limits{Tasks: 64, CPU: 0.5}})
	bombScope := reg.Scope("agent:bomb")
	// Each shell forks two copies of itself until fork fails, which the
	// shells report on stderr. dash exits when a fork fails, so the bomb
	// may burn out; the sleep, started before it, keeps the session
	// running until the kill below.
	bomb := `sleep 600 & (b() { b & b & wait; }; b); wait`
	res := mustExec(t, bombScope, &ExecRequest{Command: bomb, Background: true})
	id := res.Details.SessionID
	w := mustProcess(t, bombScope, &ProcessRequest{Action: "wait", SessionID: id, Pattern: "fork|Resource temporarily unavailable", Timeout: ptr(Number(60000))})
	require.Equal(t, "pattern", w.Details.Condition, "the bomb's own forks must fail at its task limit: %s", w.Text())

	// Meanwhile 17 execs in other sessions all run.
	var wg sync.WaitGroup
	errs := make(chan string, 17)
	for i := range 17 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := reg.Scope(fmt.Sprintf("agent:other-%d", i%3))
			r, err := sc.Exec(testCtx(t), &ExecRequest{Command: "echo ok-" + strconv.Itoa(i) + "; sh -c 'echo child'"})
			if err != nil || r.Details.Status != StatusCompleted || !strings.Contains(r.Text(), "child") {
				errs <- fmt.Sprintf("exec %d: %v %q", i, err, r.Text())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	kill := mustProcess(t, bombScope, &ProcessRequest{Action: "kill", SessionID: id})
	assert.Contains(t, kill.Text(), "Killed session "+id)
	// The host can still fork.
	require.NoError(t, exec.Command("true").Run())
}

// A CPU hog under a quota of 0.2 cores is throttled: its cgroup's CPU
// time stays far below the wall time it ran.
func TestLimitsCPUHogIsThrottled(t *testing.T) {
	t.Parallel()
	reg := limitedRegistry(t, Config{Limits: Limits{CPU: 0.2}})
	sc := reg.Scope("agent:cpu")
	res := mustExec(t, sc, &ExecRequest{Command: "while :; do :; done", Background: true})
	id := res.Details.SessionID
	s := sessionOf(reg, id)
	require.NotNil(t, s)
	start := time.Now()
	cpu0 := sessionResources(s).CPUMs
	// Wait on the clock for wall time to pass: the thing measured.
	time.Sleep(2 * time.Second)
	wall := time.Since(start).Milliseconds()
	r := sessionResources(s)
	used := r.CPUMs - cpu0
	t.Logf("cpu %d ms in %d ms wall (quota 0.2 cores)", used, wall)
	assert.Greater(t, used, int64(0), "the hog ran")
	assert.Less(t, used, wall*35/100, "quota 0.2 cores: well under 0.35 of wall time")
	// Throttling shows once the hog got more than its quota in some
	// period, which a machine busy with other work may delay.
	deadline := time.Now().Add(20 * time.Second)
	for throttledPeriods(t, s) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // the counter gives no event to wait on
	}
	assert.Greater(t, throttledPeriods(t, s), int64(0), "nr_throttled")
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
}

// throttledPeriods reads nr_throttled of the session's CPU controller.
func throttledPeriods(t *testing.T, s *session.Session) int64 {
	t.Helper()
	cg := cgroupOf(s)
	require.NotNil(t, cg)
	dir := cg.ControllerDir("cpu")
	require.NotEmpty(t, dir, "the session's cgroup has a CPU controller")
	return contain.ReadKey(filepath.Join(dir, "cpu.stat"), "nr_throttled")
}

// The cgroup v1 directories of a registry whose host died (the watchdog
// empties only its v2 cgroup) are removed by the next registry.
func TestLimitsStaleV1DirectoriesRemoved(t *testing.T) {
	t.Parallel()
	reg := limitedRegistry(t, Config{})
	if len(limiterOf(reg).V1()) == 0 {
		t.Skip("no cgroup v1 hierarchy in use here")
	}
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	home := filepath.Dir(limiterOf(reg).V1()[0].Dir)
	stale := filepath.Join(home, fmt.Sprintf("bgexec-%d-deadbeef", dead.Process.Pid))
	require.NoError(t, os.Mkdir(stale, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(stale, "s-0123"), 0o755))
	next := limitedRegistry(t, Config{})
	require.NotEmpty(t, limiterOf(next).V1())
	_, err := os.Stat(stale)
	assert.ErrorIs(t, err, os.ErrNotExist, "the dead host's directory is removed")
	// And a registry's own directories go with its Close.
	dirs := []string{}
	for _, h := range limiterOf(next).V1() {
		dirs = append(dirs, h.Dir)
	}
	mustExec(t, next.Scope("a"), &ExecRequest{Command: "true"})
	require.NoError(t, next.Close(testCtx(t)))
	for _, d := range dirs {
		_, err := os.Stat(d)
		assert.ErrorIs(t, err, os.ErrNotExist, d)
	}
}

func TestLimitsTexts(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		900: "900 B", 64 << 20: "64 MiB", 1536 << 20: "1.5 GiB", 412 << 20: "412 MiB",
		100000000: "95.4 MiB", 3 << 10: "3 KiB",
	} {
		assert.Equal(t, want, formatBytes(n), n)
	}
	assert.Equal(t, "Command killed: out of memory (limit 64 MiB).", oomText(64<<20))
	assert.Equal(t, "Exec failed (warm-falcon, out of memory)",
		exitEventText("warm-falcon", &session.Exit{Reason: session.ReasonOOM, Signal: "SIGKILL", MemoryLimit: 64 << 20}, ""))
	r := &Resources{MemoryBytes: 412 << 20, Ports: []Listener{{3000, "0.0.0.0"}, {3000, "::"}, {5173, "127.0.0.1"}}}
	assert.Equal(t, "  [:3000, :5173, 412 MiB]", r.listSuffix())
	assert.Equal(t, "", (&Resources{Ports: []Listener{}}).listSuffix())
	assert.Equal(t, " Its listening ports :3000, :5173 are closed.", closedPortsNote(r.portNames()))
}
