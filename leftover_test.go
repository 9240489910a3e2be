//go:build linux

package bgexec

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestProcessesLeftBehindAreKept runs the agent idiom `server &`: the exec
// returns at once, names what kept running, and the session lives until
// the last process ends, in both containment modes.
func TestProcessesLeftBehindAreKept(t *testing.T) {
	skipInSandboxSuite(t, "processes the shell leaves running end with the sandbox")
	for _, mode := range []struct {
		name string
		c    Containment
	}{{"with cgroups", ContainmentAuto}, {"with process groups", ContainmentOff}} {
		t.Run(mode.name, func(t *testing.T) {
			q := NewQueue()
			reg := newTestRegistry(t, Config{Containment: mode.c, Notifier: q})
			sc := reg.Scope("a")

			t.Run("a server started with & is kept and named, at once", func(t *testing.T) {
				res := mustExec(t, sc, &ExecRequest{Command: "echo starting; " + helper("hang") + " &"})
				require.Equal(t, StatusRunning, res.Details.Status, res.Text())
				id := res.Details.SessionID
				assert.Regexp(t, regexp.MustCompile(`^The shell exited with code 0; 1 process it started is still running \(pid \d+: [^)]+\), kept as session `+id+`\. Use process`), res.Text())
				waitFor(t, sc, id, "^ready$")
				log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id})
				assert.Equal(t, "starting\nready", log.Text(), "the shell's output and the kept process's, in one session")
				list := mustProcess(t, sc, &ProcessRequest{Action: "list"})
				assert.Contains(t, list.Text(), id+" running")
				kill := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
				assert.Equal(t, "Killed session "+id+".", kill.Text())
				assert.Equal(t, ExitReasonKilled, kill.Details.ExitReason)
				assert.Empty(t, q.Drain("a"), "the agent's own kill sends no event")
			})
			t.Run("the session ends when the last process does, with the shell's code", func(t *testing.T) {
				// A job started with & reads /dev/null, so a FIFO holds it.
				fifo := mkfifo(t)
				res := mustExec(t, sc, &ExecRequest{Command: "(read line < " + fifo + "; echo late) & exit 3"})
				require.Equal(t, StatusRunning, res.Details.Status, res.Text())
				id := res.Details.SessionID
				assert.True(t, strings.HasPrefix(res.Text(), "The shell exited with code 3; 1 process it started is still running"), res.Text())
				release(t, fifo)
				end := waitExit(t, sc, id)
				assert.Contains(t, end.Text(), "late")
				assert.Equal(t, "3", codeString(end.Details.ExitCode))
				assert.Equal(t, ExitReasonExit, end.Details.ExitReason)
			})
			t.Run("a shell that leaves nothing behind is a plain foreground run", func(t *testing.T) {
				res := mustExec(t, sc, &ExecRequest{Command: "(echo sub) ; echo done"})
				assert.Equal(t, StatusCompleted, res.Details.Status)
				assert.Equal(t, "sub\ndone", res.Text())
			})
			t.Run("an unreported end of kept processes is an event", func(t *testing.T) {
				fifo := mkfifo(t)
				res := mustExec(t, sc, &ExecRequest{Command: "(read line < " + fifo + "; echo bye) &"})
				id := res.Details.SessionID
				require.Equal(t, StatusRunning, res.Details.Status, res.Text())
				release(t, fifo)
				awaitDone(t, reg, id)
				assert.Equal(t, []string{"Exec completed (" + id + ", code 0) :: bye"}, awaitEvent(t, q, "a"))
			})
		})
	}
	t.Run("a synchronous run stops what the shell left and says so", func(t *testing.T) {
		reg := newTestRegistry(t, Config{BackgroundDisabled: true})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: helper("hang") + " & echo started"})
		assert.Equal(t, StatusCompleted, res.Details.Status)
		// The helper may print its "ready" before it is stopped.
		assert.Regexp(t, `^Warning: when the shell exited, 1 process it started was still running \(pid \d+: [^)]+\); it was stopped, because background execution is disabled here\.\n\nstarted(\nready)?$`, res.Text())
	})
}

// awaitEvent waits, with a deadline, until q holds an event for scope.
func awaitEvent(t *testing.T, q *Queue, scope string) []string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case <-q.Heartbeats():
			if ev := q.Drain(scope); len(ev) > 0 {
				return ev
			}
		case <-deadline:
			t.Fatalf("no event for %s", scope)
		}
	}
}

// mkfifo makes a FIFO in a temporary directory.
func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, unix.Mkfifo(p, 0o600))
	return p
}

// release writes a line to a FIFO; it blocks until the reader opened it.
func release(t *testing.T, fifo string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- os.WriteFile(fifo, []byte("go\n"), 0o600) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("nobody opened the FIFO")
	}
}
