//go:build linux

// Package proctest has helpers for tests that start and watch real
// processes: a sleeper in a group of its own, a check that a process was
// not signalled, a uid nobody runs as, waits on a process's end that
// work for any process (pidfds), each with a deadline, and a writer of
// scripts that parallel tests can run at once (WriteExecutable).
package proctest

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// StartSleeper starts a sleep in a process group of its own, as cred when
// it is not nil, and kills it at the end of the test.
func StartSleeper(t testing.TB, cred *syscall.Credential) int {
	t.Helper()
	cmd := exec.Command("/bin/sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// Untouched reports whether pid still runs and no SIGKILL is pending for
// it: a SIGKILL sent before this call shows in one of the two, even if the
// process has not died of it yet.
func Untouched(t testing.TB, pid int) bool {
	t.Helper()
	exited, err := WaitPidExit(pid, 0)
	require.NoError(t, err)
	if exited {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "SigPnd" && k != "ShdPnd") {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		require.NoError(t, err, line)
		if mask&(1<<(syscall.SIGKILL-1)) != 0 {
			return false
		}
	}
	return true
}

// SpareUID returns a uid no process on this machine runs as.
func SpareUID(t testing.TB) uint32 {
	t.Helper()
	used := map[uint32]bool{}
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				for _, f := range strings.Fields(v) {
					if n, err := strconv.ParseUint(f, 10, 32); err == nil {
						used[uint32(n)] = true
					}
				}
			}
		}
	}
	for uid := uint32(60000); uid < 61000; uid++ {
		if !used[uid] {
			return uid
		}
	}
	t.Skip("no spare uid in 60000-60999")
	return 0
}

// PidGone waits, with a deadline, until pid has exited: a pidfd becomes
// readable when the process ends, for any process, not only our children.
func PidGone(t testing.TB, pid int) bool {
	t.Helper()
	exited, err := WaitPidExit(pid, 10*time.Second)
	return exited || errors.Is(err, unix.ESRCH)
}

// WaitPidExit waits up to d on a pidfd of its own for pid to exit. It
// returns an ESRCH error when pid was already gone before it could look.
func WaitPidExit(pid int, d time.Duration) (bool, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(d.Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0, err
	}
}

// LowerNofileUntil lowers this process's RLIMIT_NOFILE, one descriptor at
// a time from 400 above the descriptors open now, until refused reports
// true, and restores the limit at the end of the test. The limit is
// process-wide: a test that calls it must not run in parallel.
func LowerNofileUntil(t testing.TB, refused func() bool) {
	t.Helper()
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &old))
	t.Cleanup(func() { require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &old)) })
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	open := uint64(len(fds))
	lim := old
	for lim.Cur = min(open+400, old.Max); !refused(); lim.Cur-- {
		require.Greater(t, lim.Cur, open, "never refused")
		require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))
	}
}

// AwaitIgnored waits, with a deadline, until pid ignores sig. A watchdog's
// first command makes it ignore SIGTERM: from then on its shell runs the
// script, and the loader has closed what it opened (before its exec, a
// forked child still holds its parent's descriptors).
func AwaitIgnored(t testing.TB, pid int, sig syscall.Signal) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		require.NoError(t, err)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
				mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				require.NoError(t, err, line)
				if mask&(1<<(sig-1)) != 0 {
					return
				}
			}
		}
		require.True(t, time.Now().Before(deadline), "pid %d did not come to ignore %v", pid, sig)
		time.Sleep(2 * time.Millisecond)
	}
}
