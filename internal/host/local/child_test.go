//go:build linux

package local

import (
	"os"
	"testing"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Only ESRCH means a process group is gone; a cgroup kill that failed is
// kept for release to report.
func TestProcessGroupChecksFailClosed(t *testing.T) {
	t.Parallel()
	// Above the largest pid_max (2^22): no such group can exist.
	const noGroup = 1<<22 + 1
	t.Run("a group that does not exist is gone", func(t *testing.T) {
		c := &osChild{leader: noGroup}
		assert.NoError(t, c.SignalGroup(unix.SIGKILL))
		assert.NoError(t, c.Release())
	})
	t.Run("a failed cgroup kill is reported by signalGroup and release", func(t *testing.T) {
		root, err := contain.NewRoot()
		if err != nil {
			t.Skip("cgroup v2 containment is not available here:", err)
		}
		defer func() { assert.NoError(t, root.Remove()) }()
		cg, err := root.NewSession()
		require.NoError(t, err)
		cg.CloseFD()
		require.NoError(t, unix.Rmdir(cg.Dir())) // its files are gone
		c := &osChild{leader: noGroup, cg: cg}
		assert.ErrorIs(t, c.SignalGroup(unix.SIGKILL), os.ErrNotExist)
		assert.ErrorIs(t, c.Release(), os.ErrNotExist)
		assert.Len(t, root.Dirty(), 1)
	})
	// The /proc checks themselves are tested in internal/contain.
}
