package dockerhost

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runSession runs spec on h under the session engine, as the tool layer
// does, and returns the started session; the test's cleanup waits for its
// goroutines.
func runSession(t *testing.T, h *Host, spec *host.Spec, timeout time.Duration) *session.Session {
	t.Helper()
	return runSessionOn(t, h, h, spec, timeout)
}

// runSessionOn is runSession on hh, one of h's scope hosts.
func runSessionOn(t *testing.T, h *Host, hh host.Host, spec *host.Spec, timeout time.Duration) *session.Session {
	t.Helper()
	st := startOn(t, hh, spec)
	var g sync.WaitGroup
	s := session.New(session.Options{
		ID: "t", Command: spec.Command, PTY: spec.PTY, Cols: int(spec.Cols), Rows: int(spec.Rows),
		StartedAt: time.Now(), Timeout: timeout, KillGrace: 2 * time.Second, DrainTimeout: 2 * time.Second,
		MaxChars: 1 << 16, PendingChars: 1 << 16, MemoryLimit: h.cfg.MemoryBytes,
		Proc: st.Process, Outputs: st.Outputs, Stdin: st.Stdin, Goroutines: &g, Pool: &session.ChunkPool{},
	})
	s.Start()
	t.Cleanup(g.Wait)
	return s
}

// ended waits for s to end, within the deadline.
func ended(t *testing.T, s *session.Session) session.Snapshot {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(deadline):
		t.Fatal("the session did not end")
	}
	return s.Snapshot(4096)
}

func TestTimeoutEndsTheSession(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true})
	s := runSession(t, h, &host.Spec{Command: "echo started; sleep 1000"}, time.Second)
	sn := ended(t, s)
	assert.Equal(t, session.ReasonTimeout, sn.Exit.Reason)
	assert.Equal(t, "SIGTERM", sn.Exit.Signal)
	assert.Equal(t, session.Failed, sn.Status)
	assert.Contains(t, sn.Tail, "started")
	assert.NoError(t, sn.Exit.Leftover)
}

func TestKillEndsTheSessionWithItsSignal(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true})
	// A shell that ignores SIGTERM needs the SIGKILL after the grace.
	s := runSession(t, h, &host.Spec{Command: "trap '' TERM; echo ready; while :; do sleep 1; done"}, 0)
	require.Eventually(t, func() bool { return strings.Contains(s.Snapshot(100).Tail, "ready") }, deadline, 20*time.Millisecond)
	require.True(t, s.Kill())
	sn := ended(t, s)
	assert.Equal(t, session.ReasonKilled, sn.Exit.Reason)
	assert.Equal(t, "SIGKILL", sn.Exit.Signal)
}

func TestMemoryLimitEndsTheSessionAsOOM(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true, MemoryBytes: 32 << 20})
	s := runSession(t, h, &host.Spec{Command: "x=a; while :; do x=$x$x; done"}, 0)
	sn := ended(t, s)
	assert.Equal(t, session.ReasonOOM, sn.Exit.Reason, "exit %+v", sn.Exit)
	assert.Equal(t, int64(32<<20), sn.Exit.MemoryLimit)
}

func TestResourcesOfTheSessionsContainer(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true})
	// Two busy processes, one of them in a session of its own, holding
	// 8 MiB of memory between them.
	st := start(t, h, &host.Spec{Command: "setsid sh -c 'while :; do :; done' & x=$(head -c 8388608 /dev/zero | tr '\\0' a); while :; do :; done"})
	p := st.Process.(*process)
	defer endOn(t, st)
	var u *host.Usage
	require.Eventually(t, func() bool {
		u = p.Usage(nil, true, nil)
		return u != nil && u.Tasks >= 2 && u.MemoryBytes >= 8<<20 && u.CPUMs >= 200
	}, deadline, 100*time.Millisecond, "usage %+v", u)
	cached := p.Usage(nil, false, nil)
	require.NotNil(t, cached)
	assert.Equal(t, u.CPUMs, cached.CPUMs, "a view is reused within ResourceTTL")
}

func TestPortOpenInsideTheContainer(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true})
	st := start(t, h, &host.Spec{Command: "nc -l -p 4321 & echo listening; sleep 1000"})
	p := st.Process.(*process)
	defer endOn(t, st)
	require.Eventually(t, func() bool { return p.PortOpen(t.Context(), 4321) }, deadline, 100*time.Millisecond)
	assert.False(t, p.PortOpen(t.Context(), 4322))

	// The resource view lists the socket, and tells the session its ports.
	var noted []string
	u := p.Usage(nil, true, func(ports []string) { noted = ports })
	require.NotNil(t, u)
	require.Len(t, u.Ports, 1, "ports %+v", u.Ports)
	assert.Equal(t, 4321, u.Ports[0].Port)
	assert.Contains(t, []string{"0.0.0.0", "::"}, u.Ports[0].Address)
	assert.Equal(t, []string{":4321"}, noted)
}

func TestNoPortsWhenNothingListens(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true})
	st := start(t, h, &host.Spec{Command: "sleep 1000"})
	p := st.Process.(*process)
	defer endOn(t, st)
	noted := []string{"not called"}
	u := p.Usage(nil, true, func(ports []string) { noted = ports })
	require.NotNil(t, u)
	assert.Empty(t, u.Ports)
	assert.Empty(t, noted)
}

// A daemon killed with SIGKILL while a session runs ends it lost, with a
// text that says so. The test starts a daemon of its own (.ci/dockerd with
// a state directory of its own) so that the other tests keep theirs.
func TestDaemonKilledEndsSessionsLost(t *testing.T) {
	t.Parallel()
	_, image := testDaemon(t)
	if os.Geteuid() != 0 {
		t.Skip("starting a second dockerd needs root")
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", ".ci", "dockerd")
	state := filepath.Join(os.TempDir(), "bgexec-dockerd-lost-"+strconv.Itoa(os.Getpid()))
	env := append(os.Environ(), "BGEXEC_DOCKERD_STATE="+state, "BGEXEC_DOCKERD_OWNER="+strconv.Itoa(os.Getpid()))
	cmd := exec.Command(script, "start")
	cmd.Env = env
	cmd.WaitDelay = deadline
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() {
		stop := exec.Command(script, "stop")
		stop.Env, stop.WaitDelay = env, deadline
		assert.NoError(t, stop.Run())
	})
	daemon := "unix://" + filepath.Join(state, "docker.sock")
	require.Contains(t, string(out), daemon)

	h, err := New(Config{Daemon: daemon, Image: image, NoSpare: true})
	require.NoError(t, err)
	s := runSession(t, h, &host.Spec{Command: "echo started; sleep 1000"}, 0)
	require.Eventually(t, func() bool { return strings.Contains(s.Snapshot(100).Tail, "started") }, deadline, 20*time.Millisecond)

	pidText, err := os.ReadFile(filepath.Join(state, "dockerd.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))

	sn := ended(t, s)
	assert.Equal(t, session.ReasonLost, sn.Exit.Reason)
	assert.Equal(t, session.Failed, sn.Status)
	assert.Contains(t, sn.Exit.Note, "Connection to the Docker daemon at "+daemon+" lost")
	assert.Contains(t, sn.Exit.Note, "may still be running")
	assert.Error(t, h.Close(), "the daemon is gone: its containers cannot be confirmed removed")
}

// The engine reports a signal's end as 128+N; a command that exits with
// such a code itself, with no signal sent to it, keeps its exit code,
// although the session engine sends SIGKILL at every end.
func TestExitCodeAbove128IsAnExit(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true})
	s := runSession(t, h, &host.Spec{Command: "exit 137"}, 0)
	sn := ended(t, s)
	assert.Equal(t, session.ReasonExit, sn.Exit.Reason)
	require.NotNil(t, sn.Exit.Code)
	assert.Equal(t, 137, *sn.Exit.Code)
	assert.Empty(t, sn.Exit.Signal)
}
