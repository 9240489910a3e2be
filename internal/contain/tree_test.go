//go:build linux

package contain

import (
	"os"
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
