//go:build linux

package sshhost

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runLocal runs a node's exec request line with /bin/sh on this machine,
// as the login shell on a node would, in a process group of its own (as
// the SSH server starts it), in /, with env as its environment. It returns
// stdout and stderr.
func runLocal(t *testing.T, line string, env []string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	c.Env, c.Dir = env, "/" // an SSH server starts commands in the home directory
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	require.NoError(t, c.Run(), "stderr: %s", errb.String())
	return out.String(), errb.String()
}

// parseReport splits stderr into the wrapper's report and the rest.
func parseReport(t *testing.T, stderr string) (f []string, rest string) {
	t.Helper()
	line, rest, _ := strings.Cut(stderr, "\n")
	require.True(t, strings.HasPrefix(line, nodeHeader), "no report in %q", stderr)
	f = strings.SplitN(strings.TrimPrefix(line, nodeHeader), " ", 5)
	require.Len(t, f, 5, line)
	return f, rest
}

func TestEncodeNodeArgRoundTrips(t *testing.T) {
	t.Parallel()
	var all strings.Builder
	for c := 1; c < 256; c++ {
		all.WriteByte(byte(c))
	}
	for _, s := range []string{
		"", "plain", "two words", "it's", `back\slash`, `\0101`, "new\nline", "trailing\n\n",
		"$HOME `id` $(id) !x", "-n", "%s %b", "ünïcødé ✓", all.String(),
	} {
		enc := encodeNodeArg(s)
		assert.NotContains(t, enc[1:len(enc)-1], "'", "one single-quoted word")
		out, _ := runLocal(t, `d() { v=$(printf %bx "$1"); v=${v%x}; }; d `+enc+`; printf %s "$v"`, nil)
		assert.Equal(t, s, out, "decoded %q", enc)
	}
}

func TestNodeEnvLayers(t *testing.T) {
	t.Parallel()
	got := nodeEnv(host.Env{
		Carried:   []string{"KEPT=1", "GONE"},
		Defaults:  []string{"PAGER=cat", "LANG=C.UTF-8"},
		Overrides: map[string]string{"LANG": "fr_FR.UTF-8", "B": "2", "A": "1"},
		Forced:    []string{"TERM=xterm-256color"},
		Added:     []string{"TRACEPARENT=00-x", "TERM=dumb"},
	})
	assert.Equal(t, []string{
		"KEPT=1", "GONE", // carried first
		"PAGER=cat",                      // a default the call does not override
		"A=1", "B=2", "LANG=fr_FR.UTF-8", // the overrides, sorted
		"TRACEPARENT=00-x", "TERM=dumb", // added entries replace their keys
	}, got)
	carried := make([]string, 1, 4)
	carried[0] = "KEPT=1"
	nodeEnv(host.Env{Carried: carried, Forced: []string{"X=1"}})
	assert.Equal(t, []string{"KEPT=1", "", "", ""}, carried[:4], "the caller's Carried is not written to")
}

// The wrapper, run by a local sh as a node's login shell would run it:
// the report, the environment it applies, and the workdir fallbacks.
func TestNodeWrapper(t *testing.T) {
	t.Parallel()
	base := []string{"PATH=" + os.Getenv("PATH"), "SHELL=/bin/sh", "UNSETME=x", "HOME=/"}
	def, asked := t.TempDir(), t.TempDir()
	missing := filepath.Join(def, "missing")
	show := `printf "%s|%s|%s|%s\n" "$FOO" "${UNSETME-unset}" "$` + nodeTagKey + `" "$(pwd)"`
	env := []string{"FOO=bar baz 'q'", "UNSETME", nodeTagKey + "=0123456789abcdef"}

	t.Run("it reports the shell and applies the environment", func(t *testing.T) {
		out, stderr := runLocal(t, nodeCommand("", def, "", asked, show+"; echo err >&2", "c", "-", "-", env), base)
		f, rest := parseReport(t, stderr)
		assert.Equal(t, f[0], f[1], "the shell leads its process group")
		assert.Equal(t, "0", f[2])
		assert.Equal(t, "-", f[3], "no state file without a tag")
		assert.Equal(t, asked, f[4])
		assert.Equal(t, "bar baz 'q'|unset|0123456789abcdef|"+asked+"\n", out)
		assert.Equal(t, "err\n", rest)
	})
	t.Run("a relative workdir is taken from the default", func(t *testing.T) {
		require.NoError(t, os.Mkdir(filepath.Join(def, "sub"), 0o755))
		_, stderr := runLocal(t, nodeCommand("", def, "", "sub", "true", "c", "-", "-", nil), base)
		f, _ := parseReport(t, stderr)
		assert.Equal(t, []string{"0", filepath.Join(def, "sub")}, []string{f[2], f[4]})
	})
	for _, tc := range []struct {
		name                  string
		defDir, stateDir, dir string
		code, cwd             string
	}{
		{"a missing default workdir is reported as 1", missing, "", "", "1", "/"},
		{"a missing asked workdir is reported as 2", def, "", missing, "2", def},
		{"a missing kept workdir is reported as 3", def, missing, "", "3", def},
		{"the kept workdir is used when none is asked", def, asked, "", "0", asked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr := runLocal(t, nodeCommand("", tc.defDir, tc.stateDir, tc.dir, "true", "c", "-", "-", nil), base)
			f, _ := parseReport(t, stderr)
			assert.Equal(t, []string{tc.code, tc.cwd}, []string{f[2], f[4]})
		})
	}
	t.Run("an uploaded command is read from its file, which is removed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "script")
		require.NoError(t, os.WriteFile(path, []byte(scriptPrefix+"echo from file; readlink /proc/$$/fd/3 || echo closed"), 0o600))
		out, _ := runLocal(t, nodeCommand("", def, "", "", path, "f", "-", "-", nil), base)
		assert.Equal(t, "from file\nclosed\n", out, "fd 3 is closed before the command runs")
		assert.NoFileExists(t, path)
	})
	t.Run("fish is replaced by sh", func(t *testing.T) {
		out, _ := runLocal(t, nodeCommand("/usr/bin/fish", def, "", "", "echo ok", "c", "-", "-", nil), base)
		assert.Equal(t, "ok\n", out)
	})
}

// The node side of kept shell state, run locally: the wrapper makes the
// state file, the prologue's trap fills it, and the control script reads
// it back in hex and removes it.
func TestNodeStateFile(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	const tag = "0123456789abcde3" // each test its own: the kill tests kill every process with theirs
	base := []string{"PATH=" + os.Getenv("PATH"), "SHELL=/bin/sh", "TMPDIR=" + tmp, "HOME=/"}
	cmd := StatePrologue(tag) + "cd " + tmp + "; export NEWVAR='a b'"
	_, stderr := runLocal(t, nodeCommand("", "", "", "", cmd, "c", "-", tag, nil), base)
	f, _ := parseReport(t, stderr)
	path := f[3]
	require.True(t, validStatePath(path, tag), path)
	assert.False(t, validStatePath(path, "fedcba9876543210"), "another session's tag")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(data, []byte("\x00bgexec-start\x00")), "the environment the shell started with comes first")
	assert.Contains(t, string(data), "\x00bgexec-started\x00")
	assert.Contains(t, string(data), "\x00bgexec-state\x00"+tmp+"\n\x00")
	assert.Contains(t, string(data), "\x00NEWVAR=a b\x00")
	assert.True(t, bytes.HasSuffix(data, []byte("\x00bgexec-end\x00")))

	out, _ := runLocal(t, stateFileScript(path, true), base)
	got, ok := parseStateDump(strings.Split(strings.TrimRight(out, "\n"), "\n"))
	require.True(t, ok, out)
	assert.Equal(t, data, got)
	assert.NoFileExists(t, path, "read and removed")
}

func TestValidStatePath(t *testing.T) {
	t.Parallel()
	const tag = "0123456789abcde4" // each test its own: the kill tests kill every process with theirs
	for path, want := range map[string]bool{
		"/tmp/bgexec-state-" + tag + ".Ab12_x":      true,
		"-":                                         false,
		"tmp/bgexec-state-" + tag + ".x":            false, // relative
		"/tmp/bgexec-state-fedcba9876543210.x":      false, // another tag
		"/tmp/bgexec-state-" + tag + ".x; rm -rf /": false,
		"/tmp/bgexec-state-" + tag + ".$(id)":       false,
		"/tmp/x y/bgexec-state-" + tag + ".x":       false,
	} {
		assert.Equal(t, want, validStatePath(path, tag), path)
	}
}

func TestParseStateDump(t *testing.T) {
	t.Parallel()
	got, ok := parseStateDump([]string{"login noise", "S00616263ff", "later"})
	require.True(t, ok)
	assert.Equal(t, []byte{0, 'a', 'b', 'c', 0xff}, got)
	_, ok = parseStateDump([]string{"nothing"})
	assert.False(t, ok, "no state line: too large, or no file")
	_, ok = parseStateDump([]string{"Szz"})
	assert.False(t, ok, "not hex")
}
