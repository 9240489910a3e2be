//go:build linux

package bgexec

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startSleeper starts a sleep in a process group of its own (see
// proctest.StartSleeper).
func startSleeper(t *testing.T, cred *syscall.Credential) int {
	return proctest.StartSleeper(t, cred)
}

// untouched reports whether pid still runs with no SIGKILL pending (see
// proctest.Untouched).
func untouched(t *testing.T, pid int) bool { return proctest.Untouched(t, pid) }

// A session runs as the host's user, so it can find the watchdog in /proc.
// It tries to write orders into every descriptor of the watchdog: a line
// that would inject a command, one that lists a process group outside the
// registry, and "+ 1", which would make the watchdog kill every process
// the user may signal. None of it may reach the watchdog.
func TestWatchdogTakesNoOrdersFromSessions(t *testing.T) {
	skipInSandboxSuite(t, "the test reads pids the command printed, which are those of its pid namespace")
	marker := filepath.Join(t.TempDir(), "injected")
	sibling := startSleeper(t, nil) // outside the registry
	// A descriptor the host inherited without close-on-exec.
	inherited, err := syscall.Open(os.DevNull, syscall.O_WRONLY, 0)
	require.NoError(t, err)
	defer syscall.Close(inherited)
	reg, err := NewRegistry(sandboxed(Config{YieldMs: MaxYieldMs}))
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = reg.Close(context.Background())
		}
	})
	for i := range contain.WatchdogCount {
		wd := watchdogOf(reg).PidOf(i)
		require.NotZero(t, wd)
		watchdogTakesNoOrders(t, reg, wd, marker, sibling)
	}

	// Close ends the watchdogs and reaps them: whatever they were going
	// to do, they have done.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, reg.Close(ctx))
	closed = true
	assert.NoFileExists(t, marker, "no injected command ran")
	assert.True(t, untouched(t, sibling), "the process outside the registry was not killed")
}

// watchdogTakesNoOrders checks one watchdog process of reg and attacks it.
func watchdogTakesNoOrders(t *testing.T, reg *Registry, wd int, marker string, sibling int) {
	t.Run("its environment, argv, directory and descriptors are its own", func(t *testing.T) {
		// Until its shell runs, the dynamic loader may hold a file open.
		proctest.AwaitIgnored(t, wd, syscall.SIGTERM)
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(wd) + "/fd")
		require.NoError(t, err)
		var fds []string
		for _, e := range ents {
			fds = append(fds, e.Name())
		}
		// fd 3 is the list of sessions the host shares with it, sealed
		// (see the attack below), where the kernel has the seal it needs.
		list, _ := os.Readlink("/proc/" + strconv.Itoa(wd) + "/fd/3")
		want := []string{"0", "1", "2"}
		if list != "" {
			assert.Contains(t, list, "memfd:bgexec-watchlist", "fd 3")
			want = append(want, "3")
		}
		assert.ElementsMatch(t, want, fds, "nothing of the host's is open in the watchdog")
		env, err := os.ReadFile("/proc/" + strconv.Itoa(wd) + "/environ")
		require.NoError(t, err)
		assert.Equal(t, contain.WatchdogEnvPath+"\x00", string(env))
		argv, err := os.ReadFile("/proc/" + strconv.Itoa(wd) + "/cmdline")
		require.NoError(t, err)
		cgroupDir := ""
		if cgroupRoot(reg) != nil {
			cgroupDir = cgroupRoot(reg).Dir()
		}
		wantArgv := []string{"/bin/sh", "-c", contain.WatchdogScript, "bgexec-watchdog", cgroupDir}
		if list != "" {
			wantArgv = append(wantArgv, "list")
		}
		assert.Equal(t, strings.Join(wantArgv, "\x00")+"\x00", string(argv))
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(wd) + "/cwd")
		require.NoError(t, err)
		assert.Equal(t, "/", cwd)
	})

	payload := []string{"+ 1;touch " + marker + ";:", "+ " + strconv.Itoa(sibling)} // OLD-CODE RUN
	var quoted []string
	for _, l := range payload {
		quoted = append(quoted, shellQuote(l))
	}
	attack := `for f in /proc/` + strconv.Itoa(wd) + `/fd/*; do
	if (printf '%s\n' ` + strings.Join(quoted, " ") + ` >"$f") 2>/dev/null; then echo "wrote $f"; else echo "refused $f"; fi
	if (printf '#' 1<>"$f") 2>/dev/null; then echo "overwrote $f"; else echo "refused in place $f"; fi
done
echo attacked`
	res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: attack})
	require.Contains(t, res.Text(), "attacked", res.Text())
	assert.Contains(t, res.Text(), "refused /proc/"+strconv.Itoa(wd)+"/fd/0", "the lifeline cannot be opened")
	assert.NotContains(t, res.Text(), "overwrote /proc/"+strconv.Itoa(wd)+"/fd/3", "the list cannot be changed in place")
	assert.NotContains(t, res.Text(), "wrote /proc/"+strconv.Itoa(wd)+"/fd/3", "nor written")
}
