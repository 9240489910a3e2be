package dockerhost

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startOn starts spec on hh (a scope's host), failing the test on error.
func startOn(t *testing.T, hh host.Host, spec *host.Spec) *host.Started {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	st, err := hh.Start(ctx, spec)
	require.NoError(t, err)
	return st
}

// runOn runs command on hh to its end and returns its stdout.
func runOn(t *testing.T, hh host.Host, command string) string {
	t.Helper()
	st := startOn(t, hh, &host.Spec{Command: command})
	out := readAll(t, st)
	_, err := awaitExit(t, st.Process)
	require.NoError(t, err)
	require.NoError(t, st.Process.Release())
	return out[0]
}

// endOn kills a running session and releases it.
func endOn(t *testing.T, st *host.Started) {
	t.Helper()
	require.NoError(t, st.Process.SignalGroup(syscall.SIGKILL))
	readAll(t, st)
	_, _ = awaitExit(t, st.Process)
	require.NoError(t, st.Process.Release())
}

// hasProcess reports whether a process of cid's container has needle
// (spaces as "_") in its command line.
func (h *Host) hasProcess(t *testing.T, cid, needle string) bool {
	p := &process{h: h, cid: cid}
	for _, l := range p.processes(t) {
		if strings.Contains(l, needle) {
			return true
		}
	}
	return false
}

func TestPerScopeSessionsShareTheirScopesContainer(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{PerScope: true})
	a, b := h.ForScope("a"), h.ForScope("b")
	assert.Empty(t, runOn(t, a, "echo kept >/tmp/f"))
	assert.Equal(t, "kept\n", runOn(t, a, "cat /tmp/f"), "the scope's next session sees the file")
	assert.Equal(t, "none\n", runOn(t, b, "cat /tmp/f 2>/dev/null || echo none"), "another scope has a container of its own")
	assert.Len(t, h.listContainers(t), 2, "one container per scope, and no spare")
	assert.Same(t, h, h.ForScope("a").(*scopeHost).Host)
	plain := &Host{}
	assert.Same(t, plain, plain.ForScope("a"), "without PerScope the host is its own scope's host")
}

func TestPerScopeKillReachesOnlyItsSession(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{PerScope: true})
	sc := h.ForScope("a")
	// One session with a setsid escaper, another beside it.
	one := startOn(t, sc, &host.Spec{Command: "setsid sh -c 'exec sleep 1001' & exec sleep 1002"})
	two := startOn(t, sc, &host.Spec{Command: "exec sleep 1003"})
	cid := one.Process.(*process).cid
	require.Equal(t, cid, two.Process.(*process).cid)
	require.Eventually(t, func() bool {
		return h.hasProcess(t, cid, "sleep_1001") && h.hasProcess(t, cid, "sleep_1002") && h.hasProcess(t, cid, "sleep_1003")
	}, deadline, 50*time.Millisecond)

	require.NoError(t, one.Process.SignalGroup(syscall.SIGKILL))
	readAll(t, one)
	ws, err := awaitExit(t, one.Process)
	require.NoError(t, err)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the killed session ends by SIGKILL: %v", ws)
	require.NoError(t, one.Process.Release())
	assert.False(t, h.hasProcess(t, cid, "sleep_1001"), "the setsid escaper is gone")
	assert.False(t, h.hasProcess(t, cid, "sleep_1002"))
	assert.True(t, h.hasProcess(t, cid, "sleep_1003"), "the other session of the scope runs on")
	endOn(t, two)
}

func TestPerScopeEndOfASessionEndsWhatItLeft(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{PerScope: true})
	sc := h.ForScope("a")
	st := startOn(t, sc, &host.Spec{Command: "setsid sh -c 'exec sleep 1004' >/dev/null 2>&1 & echo started"})
	cid := st.Process.(*process).cid
	assert.Equal(t, "started\n", readAll(t, st)[0])
	ws, err := awaitExit(t, st.Process)
	require.NoError(t, err)
	assert.Equal(t, 0, ws.ExitStatus())
	assert.True(t, h.hasProcess(t, cid, "sleep_1004"), "the leftover runs until the session is released")
	require.NoError(t, st.Process.Release())
	assert.False(t, h.hasProcess(t, cid, "sleep_1004"), "Release ends what the session left")
	assert.Equal(t, "still here\n", runOn(t, sc, "echo still here"), "the container serves the scope's next session")
}

func TestPerScopeResourcesAreTheSessions(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{PerScope: true})
	sc := h.ForScope("a")
	busy := startOn(t, sc, &host.Spec{Command: "nc -l -p 4323 & while :; do :; done"})
	idle := startOn(t, sc, &host.Spec{Command: "exec sleep 1005"})
	defer endOn(t, busy)
	defer endOn(t, idle)
	var u *host.Usage
	require.Eventually(t, func() bool {
		u = busy.Process.(host.UsageReader).Usage(nil, true, nil)
		return u != nil && u.Tasks == 2 && u.CPUMs >= 200 && len(u.Ports) == 1
	}, deadline, 100*time.Millisecond, "usage %+v", u)
	assert.Equal(t, 4323, u.Ports[0].Port)
	var noted []string
	v := idle.Process.(host.UsageReader).Usage(nil, true, func(ports []string) { noted = ports })
	require.NotNil(t, v)
	assert.Equal(t, 1, v.Tasks, "the idle session's own process only")
	assert.Empty(t, v.Ports)
	assert.Empty(t, noted)
	assert.Less(t, v.CPUMs, u.CPUMs)
}

// The cap is the scope's: a session the OOM killer ended is "oom", and the
// scope's next session, which the killer did not touch, is not.
func TestPerScopeOOMIsTheSessionsThatHitTheCap(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{PerScope: true, MemoryBytes: 32 << 20})
	sc := h.ForScope("a")
	hog := ended(t, runSessionOn(t, h, sc, &host.Spec{Command: "x=a; while :; do x=$x$x; done"}, 0))
	assert.Equal(t, session.ReasonOOM, hog.Exit.Reason, "exit %+v", hog.Exit)
	next := ended(t, runSessionOn(t, h, sc, &host.Spec{Command: "exit 0"}, 0))
	require.NotNil(t, next.Exit.Code, "exit %+v", next.Exit)
	assert.Equal(t, 0, *next.Exit.Code)
	assert.NotEqual(t, session.ReasonOOM, next.Exit.Reason)
}

// A scope whose container went away (removed behind the host's back) gets
// a new one: the exec that finds it gone fails, and the next one runs.
// With a memory cap the first look at the container is the OOM count's.
func TestPerScopeContainerThatWentAwayIsMadeAgain(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"no cap": {PerScope: true},
		"a cap":  {PerScope: true, MemoryBytes: 64 << 20},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newTestHost(t, cfg)
			sc := h.ForScope("a")
			st := startOn(t, sc, &host.Spec{Command: "exec sleep 1006"})
			cid := st.Process.(*process).cid
			endOn(t, st)
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			_, err := h.api.ContainerRemove(ctx, cid, client.ContainerRemoveOptions{Force: true})
			require.NoError(t, err)
			_, err = sc.Start(ctx, &host.Spec{Command: "true"})
			require.Error(t, err, "the exec finds the container gone")
			assert.Equal(t, "again\n", runOn(t, sc, "echo again"), "the next exec has a new container")
			assert.Len(t, h.listContainers(t), 1)
		})
	}
}
