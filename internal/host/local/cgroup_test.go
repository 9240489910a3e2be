//go:build linux

package local

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/host"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// limitedHost returns a host whose commands each get a cgroup with
// memory, task and CPU limits, or skips (fails under CI=true) where this
// machine cannot give them one.
func limitedHost(t *testing.T) *Host {
	t.Helper()
	h, err := New(Options{
		Shell:       "sh",
		Containment: ContainmentRequired,
		Limits:      contain.Limits{MemoryBytes: 256 << 20, Tasks: 100, TasksSet: true, CPU: 2},
	})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("cgroup containment is needed for the limit tests:", err)
		}
		t.Skip("no cgroup containment here:", err)
	}
	t.Cleanup(h.Close)
	return h
}

// On a hybrid host the child enters its cgroup v1 directories before its
// first instruction (it is forked from a thread that is in them), so
// even the first process it forks is inside; and no thread of the host
// stays in a session's cgroups afterwards. Not parallel: another test's
// spawn would have a thread in its session's cgroups for a moment.
func TestV1MembershipFromTheForkingThread(t *testing.T) {
	h := limitedHost(t)
	if len(h.Limiter().V1()) == 0 {
		t.Skip("no cgroup v1 hierarchy in use here")
	}
	st, err := h.Start(context.Background(), &host.Spec{Command: "sleep 300 & echo $!; wait"})
	require.NoError(t, err)
	out := st.Outputs[0].(*os.File)
	require.NoError(t, out.SetReadDeadline(time.Now().Add(time.Minute)))
	var line []byte
	for b := make([]byte, 1); !strings.HasSuffix(string(line), "\n"); line = append(line, b[0]) {
		_, err := io.ReadFull(out, b)
		require.NoError(t, err, "the child's pid, so far %q", line)
	}
	// The shell's first fork is born in the session's cgroups. The session
	// sees them as its namespace's root ("/"): look from here.
	b, err := os.ReadFile("/proc/" + strings.TrimSpace(string(line)) + "/cgroup")
	require.NoError(t, err)
	for _, v1 := range h.Limiter().V1() {
		name := filepath.Base(v1.Dir)
		assert.Regexp(t, `(?m)^\d+:([a-z,]*,)?`+v1.Controller+`(,[a-z,]*)?:\S*/`+name+`/s-[0-9a-f]+$`, string(b), v1.Controller)
	}
	require.NoError(t, st.Process.SignalGroup(unix.SIGKILL))
	finish(t, st)
	// Many spawns later, every host thread is back home.
	for range 20 {
		run(t, h, &host.Spec{Command: "true"})
	}
	tasks, err := filepath.Glob("/proc/self/task/*/cgroup")
	require.NoError(t, err)
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		assert.NotContains(t, string(b), "/bgexec-", "%s is still in a session's cgroup", f)
	}
}
