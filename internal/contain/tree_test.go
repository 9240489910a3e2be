//go:build linux

package contain

import (
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Only a /proc entry that is gone means a process is gone; any other
// failure to read it means it may still run.
func TestProcessChecksFailClosed(t *testing.T) {
	t.Parallel()
	// Above the largest pid_max (2^22): no such process can exist.
	const noProc = 1<<22 + 1
	_, err := ReadStat(noProc)
	assert.True(t, Gone(err), "%v", err)
	assert.True(t, Gone(syscall.ESRCH))
	assert.False(t, Gone(&os.PathError{Op: "open", Path: "/proc/1/stat", Err: syscall.EMFILE}))
	alive, err := Proc{Pid: noProc}.Alive()
	assert.Error(t, err)
	assert.False(t, alive)
}

// A process of one thread already in its exit is not live: its output may
// have ended while the kernel has not made it a zombie yet (a heredoc's
// writer, which dash forks, once the reader saw its end, on a loaded
// machine), and the shell's end must not keep it as left behind.
func TestStatLive(t *testing.T) {
	t.Parallel()
	line := func(state string, flags, threads int) string {
		// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss
		return "42 (sh (x)) " + state + " 1 42 42 0 -1 " + itoa(flags) + " 0 0 0 0 1 2 0 0 20 0 " + itoa(threads) + " 0 100 1000 10"
	}
	for _, c := range []struct {
		name          string
		state         string
		flags, thread int
		live          bool
	}{
		{"running", "R", 0x400000, 1, true},
		{"sleeping", "S", 0x400100, 1, true},
		{"in its exit, one thread", "R", 0x400104, 1, false},
		{"in its exit, stuck on I/O", "D", 0x4, 1, false},
		{"main thread exiting, others running", "R", 0x400104, 3, true},
		{"zombie", "Z", 0x40040c, 1, false},
		{"dead", "X", 0x4, 1, false},
	} {
		st, err := parseStat(42, line(c.state, c.flags, c.thread))
		if assert.NoError(t, err, c.name) {
			assert.Equal(t, c.live, st.Live(), c.name)
		}
	}
	self, err := ReadStat(os.Getpid())
	if assert.NoError(t, err) {
		assert.True(t, self.Live(), "this process runs")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
