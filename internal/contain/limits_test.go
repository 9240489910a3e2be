//go:build linux

package contain

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cgroup v2 path cannot run on this host (its v2 tree has only
// hugetlb), so this checks what it writes, into plain files laid out as
// a v2 registry cgroup and one session cgroup. The kernel side is not
// exercised here.
func TestLimitsV2FilesWritten(t *testing.T) {
	t.Parallel()
	reg := t.TempDir()
	write := func(path, s string) { require.NoError(t, os.WriteFile(path, []byte(s), 0o644)) }
	write(filepath.Join(reg, "cgroup.controllers"), "cpuset cpu io memory pids\n")
	write(filepath.Join(reg, "cgroup.subtree_control"), "")
	for _, c := range []string{"memory", "pids", "cpu"} {
		require.NoError(t, enableV2(reg, c), c)
	}
	err := enableV2(reg, "hugetlb")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not delegated")

	sess := filepath.Join(reg, "s-1")
	require.NoError(t, os.Mkdir(sess, 0o755))
	for _, f := range []string{"memory.max", "memory.swap.max", "pids.max", "cpu.max"} {
		write(filepath.Join(sess, f), "")
	}
	l := &Limiter{lim: Limits{MemoryBytes: 64 << 20, Tasks: 100, CPU: 1.5}, v2: map[string]bool{"memory": true, "pids": true, "cpu": true}}
	require.NoError(t, l.writeV2(sess))
	for f, want := range map[string]string{"memory.max": "67108864", "memory.swap.max": "0", "pids.max": "100", "cpu.max": "150000 100000"} {
		b, err := os.ReadFile(filepath.Join(sess, f))
		require.NoError(t, err)
		assert.Equal(t, want, string(b), f)
	}
}

// OpenDescriptors counts this process's descriptors: ten pipes more are
// twenty more.
func TestOpenDescriptorsCountsWhatIsOpen(t *testing.T) {
	before, err := OpenDescriptors()
	require.NoError(t, err)
	var files []*os.File
	for range 10 {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		files = append(files, r, w)
	}
	after, err := OpenDescriptors()
	require.NoError(t, err)
	for _, f := range files {
		require.NoError(t, f.Close())
	}
	assert.Equal(t, before+20, after)
}
