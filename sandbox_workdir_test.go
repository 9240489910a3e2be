//go:build linux

package bgexec

// A sandboxed call's workdir, attacked: a directory the configuration does
// not expose (the host's /etc, the hidden $HOME, /usr/local/bin), a
// symbolic link the sandbox itself made, a hidden path, and a directory
// swapped for a symbolic link while the call is on its way to bwrap.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bgexec/bgexec/internal/host/sandbox"
	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostFile is a harmless, unique file name in dir that a test removes
// again, whatever happened.
func hostFile(t *testing.T, dir string) string {
	t.Helper()
	f := filepath.Join(dir, "bgexec-workdir-attack-"+newTag(t))
	t.Cleanup(func() { _ = os.Remove(f) })
	return f
}

// assertNotWritten fails when the attack reached the host.
func assertNotWritten(t *testing.T, path string) {
	t.Helper()
	_, err := os.Lstat(path)
	assert.True(t, os.IsNotExist(err), "%s was written on the host", path)
}

func TestSandboxWorkdirOutsideItsPathsIsRefused(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the attack needs a root host: elsewhere the host's permissions stop the write anyway")
	}
	work, marks := t.TempDir(), t.TempDir()
	reg := newSandboxRegistry(t, Config{Workdir: work}, Sandbox{WritablePaths: []string{marks}})
	sc := reg.Scope("a")
	// A symbolic link the sandbox makes itself, in its own workdir.
	res := mustExec(t, sc, &ExecRequest{Command: "ln -s /etc etc-link && echo linked"})
	require.Contains(t, res.Text(), "linked", res.Text())
	// Every sandboxed spawn passes the hook before bwrap is started.
	var spawns atomic.Int32
	setSandboxHook(reg, func(stage string) {
		if stage == sandboxStageChecked {
			spawns.Add(1)
		}
	})
	t.Cleanup(func() { assert.Zero(t, spawns.Load(), "no bwrap was started for a refused workdir") })

	cases := []struct{ name, workdir, hostDir string }{
		{"the host /etc", "/etc", "/etc"},
		{"/usr/local/bin", "/usr/local/bin", "/usr/local/bin"},
		{"a link the sandbox made to /etc", filepath.Join(work, "etc-link"), "/etc"},
		{"the same link, relative", "etc-link", "/etc"},
	}
	if home := sandbox.UserHome(); home != "" && home != "/" && !sandbox.Within(work, home) {
		cases = append(cases, struct{ name, workdir, hostDir string }{"the hidden home", home, home})
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(c.hostDir); err != nil {
				t.Skip(c.hostDir, " does not exist here")
			}
			target := hostFile(t, c.hostDir)
			ran := filepath.Join(marks, "ran-"+string(rune('a'+i)))
			res := mustExec(t, sc, &ExecRequest{Command: "touch " + ran + "; echo x > " + shellQuote(filepath.Base(target)), Workdir: c.workdir})
			assertNotWritten(t, target)
			assert.NoFileExists(t, ran, "nothing may be spawned")
			assert.True(t, res.IsError, res.Text())
			assert.Equal(t, StatusFailed, res.Details.Status, res.Text())
			assert.Contains(t, res.Text(), `is outside the sandbox's paths`, res.Text())
			assert.Contains(t, res.Text(), work, "the failure names the allowed roots: %s", res.Text())
			assert.Contains(t, res.Text(), marks, "the failure names the allowed roots: %s", res.Text())
		})
	}
}

func TestSandboxWorkdirInsideAHiddenPathIsRefused(t *testing.T) {
	t.Parallel()
	work, elsewhere := t.TempDir(), t.TempDir()
	// Stand-ins for /etc/ssh: one below the default workdir, one outside it.
	for _, d := range []string{filepath.Join(work, "ssh"), elsewhere} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "ssh_host_key"), []byte("PRIVATE-KEY-"+filepath.Base(d)+"\n"), 0o600))
	}
	inside := filepath.Join(work, "ssh")
	reg := newSandboxRegistry(t, Config{Workdir: work}, Sandbox{HidePaths: []string{inside, elsewhere}})
	sc := reg.Scope("a")
	// The control: the keys are hidden from the default workdir.
	res := mustExec(t, sc, &ExecRequest{Command: "cat ssh/ssh_host_key " + elsewhere + "/ssh_host_key 2>&1; echo done"})
	require.Contains(t, res.Text(), "done", res.Text())
	require.NotContains(t, res.Text(), "PRIVATE-KEY", res.Text())

	for _, c := range []struct{ name, workdir, want string }{
		{"a hidden path below the workdir", inside, "hidden"},
		{"the same, relative", "ssh", "hidden"},
		{"a hidden path elsewhere", elsewhere, "outside the sandbox's paths"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := mustExec(t, sc, &ExecRequest{Command: "cat ssh_host_key", Workdir: c.workdir})
			assert.NotContains(t, res.Text(), "PRIVATE-KEY", res.Text())
			assert.True(t, res.IsError, res.Text())
			assert.Contains(t, res.Text(), c.want, res.Text())
		})
	}
}

func TestSandboxWorkdirSwappedForALink(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the attack needs a root host: elsewhere the host's permissions stop the write anyway")
	}
	for _, stage := range []string{sandboxStageChecked, sandboxStageOpened} {
		t.Run("after the workdir is "+stage, func(t *testing.T) {
			t.Parallel()
			work := t.TempDir()
			sub := filepath.Join(work, "sub")
			require.NoError(t, os.Mkdir(sub, 0o755))
			reg := newSandboxRegistry(t, Config{Workdir: work}, Sandbox{})
			target := hostFile(t, "/etc")
			var once sync.Once
			var swapErr error
			setSandboxHook(reg, func(at string) {
				if at != stage {
					return
				}
				// What another session could do between the check and the
				// bind: the directory becomes a link to /etc.
				once.Do(func() {
					if swapErr = os.Rename(sub, sub+".old"); swapErr == nil {
						swapErr = os.Symlink("/etc", sub)
					}
				})
			})
			res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo x > " + shellQuote(filepath.Base(target)) + " && echo wrote", Workdir: sub})
			require.NoError(t, swapErr)
			assertNotWritten(t, target)
			if stage == sandboxStageChecked {
				// The open follows no link: the spawn fails.
				assert.NotContains(t, res.Text(), "wrote", res.Text())
				assert.Equal(t, ExitReasonSpawnError, res.Details.ExitReason, res.Text())
				assert.Contains(t, res.Text(), "is not the directory that was checked", res.Text())
				return
			}
			// bwrap binds the directory that was opened, wherever its
			// name now points: the command runs (and writes) there.
			if strings.Contains(res.Text(), "wrote") {
				assert.FileExists(t, filepath.Join(sub+".old", filepath.Base(target)), "the command ran in the directory that was checked")
			}
		})
	}
}

func TestSandboxConfiguredPathSwappedForALink(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the attack needs a root host: elsewhere the host's permissions stop the write anyway")
	}
	t.Run("a writable path turned into a link to /etc", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "cache")
		require.NoError(t, os.Mkdir(dir, 0o755))
		reg := newSandboxRegistry(t, Config{Workdir: t.TempDir()}, Sandbox{WritablePaths: []string{dir}})
		// After NewRegistry the configured path becomes a link (a session
		// outside the sandbox, or one that can write its parent, can).
		require.NoError(t, os.Rename(dir, dir+".old"))
		require.NoError(t, os.Symlink("/etc", dir))
		target := hostFile(t, "/etc")
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo x > " + shellQuote(filepath.Join(dir, filepath.Base(target))) + " && echo wrote"})
		assertNotWritten(t, target)
		assert.NotContains(t, res.Text(), "wrote", res.Text())
		assert.Equal(t, StatusFailed, res.Details.Status, res.Text())
		assert.Contains(t, res.Text(), "its path "+strconv.Quote(dir)+" is no longer the directory it was at NewRegistry", res.Text())
	})
	t.Run("a read-only path turned into a link to a hidden one", func(t *testing.T) {
		t.Parallel()
		hidden, dir := t.TempDir(), filepath.Join(t.TempDir(), "docs")
		require.NoError(t, os.WriteFile(filepath.Join(hidden, "secret"), []byte("s3cret\n"), 0o600))
		require.NoError(t, os.Mkdir(dir, 0o755))
		reg := newSandboxRegistry(t, Config{Workdir: t.TempDir()}, Sandbox{ReadOnlyPaths: []string{dir}, HidePaths: []string{hidden}})
		require.NoError(t, os.Rename(dir, dir+".old"))
		require.NoError(t, os.Symlink(hidden, dir))
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "cat " + dir + "/secret"})
		assert.NotContains(t, res.Text(), "s3cret", res.Text())
		assert.Equal(t, StatusFailed, res.Details.Status, res.Text())
		assert.Contains(t, res.Text(), "its path "+strconv.Quote(dir)+" is no longer the directory it was at NewRegistry", res.Text())
	})
}

func TestSandboxWorkdirInsideItsPaths(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	work := filepath.Join(root, "home", "proj")
	vendor := filepath.Join(work, "vendor")
	data, out := filepath.Join(root, "data"), filepath.Join(root, "data", "out")
	cache := filepath.Join(root, "cache")
	for _, d := range []string{filepath.Join(work, "sub"), vendor, out, filepath.Join(data, "in"), cache} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.Symlink("sub", filepath.Join(work, "sub-link")))
	require.NoError(t, os.Symlink(cache, filepath.Join(work, "cache-link")))
	sb := Sandbox{
		WritablePaths: []string{cache, out},
		ReadOnlyPaths: []string{data, vendor},
		// The default workdir lies in a hidden path: it shows through.
		HidePaths: []string{filepath.Join(root, "home")},
	}
	sc := newSandboxRegistry(t, Config{Workdir: work}, sb).Scope("a")
	const probe = `pwd; touch probe 2>&1 && echo wrote`
	for _, c := range []struct {
		name, workdir, real string
		writable            bool
	}{
		{"the default", "", work, true},
		{"a directory below the default", filepath.Join(work, "sub"), filepath.Join(work, "sub"), true},
		{"a relative one, below the default", "sub", filepath.Join(work, "sub"), true},
		{"a link below the default to a directory there", "sub-link", filepath.Join(work, "sub"), true},
		{"a link below the default to a writable path", "cache-link", cache, true},
		{"a writable path", cache, cache, true},
		{"a read-only path below the default", vendor, vendor, false},
		{"a directory in a read-only path", filepath.Join(data, "in"), filepath.Join(data, "in"), false},
		{"a writable path in a read-only one", out, out, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := mustExec(t, sc, &ExecRequest{Command: probe, Workdir: c.workdir})
			require.False(t, res.IsError, res.Text())
			assert.True(t, strings.HasPrefix(res.Text(), c.real+"\n"), "runs in %s: %s", c.real, res.Text())
			if c.writable {
				assert.Contains(t, res.Text(), "wrote", res.Text())
				assert.FileExists(t, filepath.Join(c.real, "probe"))
				return
			}
			assert.Contains(t, res.Text(), "Read-only file system", res.Text())
			assert.Contains(t, res.Text(), "Its working directory, "+c.workdir+", lies in a read-only path", res.Text())
			assert.NoFileExists(t, filepath.Join(c.real, "probe"))
		})
	}
	// A descriptor of a bound directory left open inside would reach the
	// host's tree around it (openat(fd, "..")): bwrap must close them all.
	res := mustExec(t, sc, &ExecRequest{Command: "ls /proc/self/fd | tr '\\n' ' '", Workdir: filepath.Join(data, "in")})
	assert.Equal(t, "0 1 2 3", strings.TrimSpace(res.Text()), "only stdio and ls's own directory")
}

func TestSandboxWorkdirRefusalText(t *testing.T) {
	t.Parallel()
	work, cache, docs := t.TempDir(), t.TempDir(), t.TempDir()
	sc := newSandboxRegistry(t, Config{Workdir: work}, Sandbox{WritablePaths: []string{cache}, ReadOnlyPaths: []string{docs}}).Scope("a")
	// newSandboxRegistry shows the test binary (and the helper binary).
	self := strings.Join(testBinaryDirs(), " (read-only), ")
	roots := work + " (the default), " + cache + ", " + docs + " (read-only), " + self + " (read-only)"
	res := mustExec(t, sc, &ExecRequest{Command: "true", Workdir: "/etc"})
	assert.Equal(t, `workdir "/etc" is outside the sandbox's paths: command was not executed. Use a directory under `+roots+`, or omit workdir for the default.`, res.Text())
	assert.Equal(t, StatusFailed, res.Details.Status)
	assert.Empty(t, res.Details.SessionID, "no session was made")

	require.NoError(t, os.Symlink("/usr", filepath.Join(work, "usr-link")))
	res = mustExec(t, sc, &ExecRequest{Command: "true", Workdir: "usr-link"})
	assert.Equal(t, `workdir "`+filepath.Join(work, "usr-link")+`" ("/usr" on the host) is outside the sandbox's paths: command was not executed. Use a directory under `+roots+`, or omit workdir for the default.`, res.Text())

	d := sc.reg.ToolDefinitions()[0].Description
	assert.Contains(t, d, "A workdir must lie in the default working directory, "+cache+", "+docs+" (read-only), "+self+" (read-only).", d)
}

func TestSandboxNeedsBindFD(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	// A bwrap without --bind-fd (before 0.10.0, unpatched).
	fake := filepath.Join(t.TempDir(), "bwrap")
	proctest.WriteExecutable(t, fake, []byte("#!/bin/sh\nif [ \"$1\" = --help ]; then bwrap --help | grep -v -- -bind-fd; exit 0; fi\nexec bwrap \"$@\"\n"), 0o755)
	_, err := NewRegistry(Config{Sandbox: &Sandbox{Bwrap: fake}})
	assert.ErrorContains(t, err, "has no --bind-fd and --ro-bind-fd")
}
