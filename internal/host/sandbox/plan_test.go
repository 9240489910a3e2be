//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestSandboxMountOrder(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	home, work, cache, ro := filepath.Join(root, "home"), filepath.Join(root, "home", "proj"), filepath.Join(root, "cache"), filepath.Join(root, "home", "proj", "vendor")
	for _, d := range []string{work, cache, ro} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	p, err := Resolve(Config{WritablePaths: []string{cache, work}, ReadOnlyPaths: []string{ro}}, home)
	require.NoError(t, err)
	got := p.mounts(work, false)
	assert.Contains(t, p.mounts(ro, true), mountOp{ro, mountReadOnly}, "a workdir in a read-only path is bound read-only")
	want := []mountOp{{home, mountHide}, {cache, mountWritable}, {work, mountWritable}, {ro, mountReadOnly}}
	// Parents first; the workdir, also a writable path, once, and /run
	// hidden without network.
	assert.Equal(t, append([]mountOp{{"/run", mountHide}}, want...), sortedByDepthStable(got), "%v", got)
	assert.Equal(t, "/tmp", p.sandboxHome("/elsewhere", work))
	assert.Equal(t, home, p.sandboxHome(home, work), "a hidden HOME is a writable tmpfs")

	_, err = Resolve(Config{WritablePaths: []string{"/"}}, home)
	assert.ErrorContains(t, err, "is the root directory")
	_, err = Resolve(Config{ReadOnlyPaths: []string{filepath.Join(root, "missing")}}, home)
	assert.ErrorContains(t, err, "no such file")
}

// sortedByDepthStable checks mounts is ordered by depth and returns it.
func sortedByDepthStable(ops []mountOp) []mountOp {
	for i := 1; i < len(ops); i++ {
		if strings.Count(ops[i].path, "/") < strings.Count(ops[i-1].path, "/") {
			return nil
		}
	}
	return ops
}

func TestSandboxOpenFollowsNoLink(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), nil, 0o644))
	require.NoError(t, os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "link")))
	require.NoError(t, os.Symlink("b", filepath.Join(root, "a", "b-link")))
	for _, openat2 := range []bool{true, false} {
		name := "openat2"
		if !openat2 {
			name = "the walk for kernels without openat2"
		}
		t.Run(name, func(t *testing.T) {
			for _, ok := range []string{dir, filepath.Join(dir, "f"), root} {
				f, err := openRealPathWith(ok, openat2)
				require.NoError(t, err, ok)
				got, err := f.Stat()
				require.NoError(t, err)
				want, err := os.Stat(ok)
				require.NoError(t, err)
				assert.True(t, os.SameFile(want, got), ok)
				require.NoError(t, f.Close())
			}
			for _, bad := range []string{filepath.Join(root, "link", "b"), filepath.Join(root, "a", "b-link"), filepath.Join(root, "a", "b-link", "f"), filepath.Join(root, "link")} {
				_, err := openRealPathWith(bad, openat2)
				assert.ErrorIs(t, err, unix.ELOOP, bad)
			}
			_, err := openRealPathWith(dir+"/../b", openat2)
			assert.ErrorContains(t, err, "not an absolute, clean path")
			for _, rel := range []string{"../b", "a/../../x"} {
				fd, err := unix.Open(root, unix.O_PATH|unix.O_CLOEXEC, 0)
				require.NoError(t, err)
				if openat2 {
					_, err = openat2NoLinks(fd, rel)
				} else {
					_, err = walkNoLinks(fd, rel)
				}
				assert.ErrorIs(t, err, unix.EXDEV, "%s escapes its directory", rel)
				require.NoError(t, unix.Close(fd))
			}
			_, err = openRealPathWith(filepath.Join(root, "missing"), openat2)
			assert.ErrorIs(t, err, os.ErrNotExist)
		})
	}
}

func TestSandboxPlaceWorkdir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	work, docs, hidden := filepath.Join(root, "work"), filepath.Join(root, "docs"), filepath.Join(root, "work", "secret")
	for _, d := range []string{filepath.Join(hidden, "x"), filepath.Join(docs, "out", "y")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	p, err := Resolve(Config{
		WritablePaths: []string{work, filepath.Join(docs, "out")},
		ReadOnlyPaths: []string{work, docs},
		HidePaths:     []string{hidden},
	}, "")
	require.NoError(t, err)
	p.workdir = work
	for _, c := range []struct {
		cwd, root string
		readOnly  bool
		msg       string
	}{
		{work, work, false, ""},
		{filepath.Join(docs, "out", "y"), filepath.Join(docs, "out"), false, ""},
		{docs, docs, true, ""},
		{filepath.Join(hidden, "x"), "", false, "is hidden in the sandbox"},
		{hidden, "", false, "is hidden in the sandbox"},
		{root, "", false, "is outside the sandbox's paths"},
		{"/", "", false, `the workdir cannot be "/"`},
	} {
		real, r, msg := p.Place(c.cwd)
		if c.msg != "" {
			assert.Contains(t, msg, c.msg, c.cwd)
			continue
		}
		assert.Empty(t, msg, c.cwd)
		assert.Equal(t, c.cwd, real)
		assert.Equal(t, c.root, r.path, c.cwd)
		assert.Equal(t, c.readOnly, r.readOnly, c.cwd)
	}
	// Each root once, the read-write one where a path is given twice.
	_, _, msg := p.Place(root)
	assert.Contains(t, msg, "Use a directory under "+work+" (the default), "+filepath.Join(docs, "out")+", "+docs+" (read-only), or omit", msg)
}
