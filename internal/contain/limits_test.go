//go:build linux

package contain

import (
	"os"
	"path/filepath"
	"strings"
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

// ReadKey finds "key N" lines of flat-keyed files, not keys it is a
// prefix of, in files of any size, and -1 when it cannot.
func TestReadKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
		return path
	}
	oom := write("memory.oom_control", "oom_kill_disable 1\nunder_oom 0\noom_kill 7\n")
	assert.Equal(t, int64(7), ReadKey(oom, "oom_kill"), "not oom_kill_disable")
	assert.Equal(t, int64(1), ReadKey(oom, "oom_kill_disable"))
	assert.Equal(t, int64(-1), ReadKey(oom, "oom"))
	big := write("memory.stat", strings.Repeat("padding_key 1\n", 200)+"usage_usec 42\n")
	assert.Equal(t, int64(42), ReadKey(big, "usage_usec"), "a file larger than the stack buffer")
	assert.Equal(t, int64(-1), ReadKey(write("bad", "usage_usec x\n"), "usage_usec"))
	assert.Equal(t, int64(-1), ReadKey(filepath.Join(dir, "missing"), "usage_usec"))
	assert.Equal(t, int64(3), ReadKey(write("nonl", "a 1\nusage_usec 3"), "usage_usec"), "no final newline")
}
