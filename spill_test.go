//go:build linux

package bgexec

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spillFiles lists the files in dir.
func spillFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// requireSpilled checks that res names a complete spill file in dir that
// holds lines 0 … n-1 of numberedLines, and returns its path.
func requireSpilled(t *testing.T, res *Result, dir string, n int) string {
	t.Helper()
	path := res.Details.OutputFile
	require.NotEmpty(t, path, res.Text())
	assert.Equal(t, dir, filepath.Dir(path))
	assert.Contains(t, res.Text(), "[The full output, with what this text leaves out, is in the file "+path+" (")
	require.NotNil(t, res.Details.OutputFileTruncated)
	assert.False(t, *res.Details.OutputFileTruncated)
	assert.Empty(t, res.Details.OutputFileIncomplete)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "line 0000\n"), "the first line is kept")
	assert.True(t, strings.HasSuffix(string(b), lineRun(n-1, n-1)+"\n"), "the last line is kept")
	assert.Equal(t, lineRun(0, n-1)+"\n", string(b))
	return path
}

func requireGone(t *testing.T, path string) {
	t.Helper()
	_, err := os.Stat(path)
	require.ErrorIs(t, err, fs.ErrNotExist, "the spill file %s is left over", path)
}

func TestSpillConfig(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"a missing directory", Config{SpillDir: filepath.Join(t.TempDir(), "nope")}, "is not an existing directory"},
		{"a file", Config{SpillDir: file}, "is not an existing directory"},
		{"a directory that takes no file", Config{SpillDir: "/proc"}, "is not writable"},
		{"a negative session quota", Config{SpillDir: t.TempDir(), SpillMaxBytesPerSession: -1}, "Config.SpillMaxBytesPerSession -1"},
		{"a negative registry quota", Config{SpillMaxBytes: -5}, "Config.SpillMaxBytes -5"},
	} {
		t.Run(c.name+" fails NewRegistry", func(t *testing.T) {
			reg, err := NewRegistry(c.cfg)
			if err == nil {
				require.NoError(t, reg.Close(context.Background()))
			}
			require.ErrorContains(t, err, c.want)
			if strings.Contains(c.want, "directory") || strings.Contains(c.want, "writable") {
				require.ErrorContains(t, err, "Config.SpillDir")
			}
		})
	}
	t.Run("a usable directory is left empty by the check", func(t *testing.T) {
		dir := t.TempDir()
		newTestRegistry(t, Config{SpillDir: dir})
		assert.Empty(t, spillFiles(t, dir))
	})
}

func TestSpillOffByDefault(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{MaxOutputChars: 1000})
	sc := reg.Scope("a")
	res := mustExec(t, sc, &ExecRequest{Command: numberedLines(500)})
	require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
	assert.Empty(t, res.Details.OutputFile)
	assert.Nil(t, res.Details.OutputFileTruncated)
	b, err := json.Marshal(res.Details)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "outputFile")
	assert.NotContains(t, res.Text(), "full output")

	id := startBackground(t, sc, &ExecRequest{Command: numberedLines(500)})
	require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
	assert.False(t, sessionOf(reg, id).Spill().On)
	log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id})
	assert.Empty(t, log.Details.OutputFile)
	assert.NotContains(t, log.Text(), "full output")
}

func TestSpillExec(t *testing.T) {
	t.Parallel()
	t.Run("a cut exec result names the file, which holds the whole output", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: numberedLines(3000)})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		path := requireSpilled(t, res, dir, 3000)
		assert.Contains(t, res.Text(), "(30000 bytes). It is deleted in 30 minutes.]")
		// The foreground run is forgotten; its file stays for the TTL.
		assert.Greater(t, reg.spills.reap(time.Now()), 29*time.Minute)
		_, err := os.Stat(path)
		require.NoError(t, err)
		reg.spills.reap(time.Now().Add(DefaultJobTTLMs*time.Millisecond + time.Second))
		requireGone(t, path)
		assert.Empty(t, spillFiles(t, dir))
	})
	t.Run("output within the cap names no file and leaves none", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: numberedLines(50)})
		assert.Empty(t, res.Details.OutputFile)
		assert.Nil(t, res.Details.OutputFileTruncated)
		assert.NotContains(t, res.Text(), "full output")
		assert.Empty(t, spillFiles(t, dir))
	})
	t.Run("an exec its context ends leaves no file", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000})
		sc := reg.Scope("a")
		ctx, cancel := context.WithCancel(testCtx(t))
		defer cancel()
		go func() {
			// Cancel once the whole flood is in the file (so the text was cut).
			full := func() bool {
				ents, _ := os.ReadDir(dir)
				for _, e := range ents {
					if fi, err := e.Info(); err == nil && fi.Size() == 20000 {
						return true
					}
				}
				return false
			}
			for ctx.Err() == nil && !full() {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		_, err := sc.Exec(ctx, &ExecRequest{Command: numberedLines(2000) + "; exec sleep 60"})
		require.ErrorIs(t, err, context.Canceled)
		assert.Empty(t, spillFiles(t, dir))
	})
	t.Run("a cut running result names the file", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000})
		sc := reg.Scope("a")
		// The flood takes milliseconds; the yield window ends while sleep runs.
		res := mustExec(t, sc, &ExecRequest{Command: numberedLines(2000) + "; echo printed; exec sleep 60", YieldMs: ptr(5000.0)})
		require.Equal(t, StatusRunning, res.Details.Status, res.Text())
		require.Contains(t, res.Details.Tail, "printed\n", "the flood ended within the yield window")
		path := res.Details.OutputFile
		require.NotEmpty(t, path, res.Text())
		assert.Contains(t, res.Text(), "[The full output, with what this text leaves out, is in the file "+path+" (20008 bytes). It is deleted with the session.]")
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, lineRun(0, 1999)+"\nprinted\n", string(b))
		mustProcess(t, sc, &ProcessRequest{Action: "remove", SessionID: res.Details.SessionID})
		requireGone(t, path)
	})
}

func TestSpillProcess(t *testing.T) {
	t.Parallel()
	t.Run("poll and log name the file; remove deletes it", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000})
		sc := reg.Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: numberedLines(2000)})
		require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
		poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		path := requireSpilled(t, poll, dir, 2000)
		assert.Contains(t, poll.Text(), "It is deleted with the session.]")
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id})
		assert.Equal(t, path, requireSpilled(t, log, dir, 2000))
		// A second poll lost nothing: its text is not cut.
		again := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.Empty(t, again.Details.OutputFile, again.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "remove", SessionID: id})
		requireGone(t, path)
		assert.Empty(t, spillFiles(t, dir))
	})
	t.Run("a wait whose text lost output names the file", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000})
		sc := reg.Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: numberedLines(2000)})
		requireSpilled(t, waitExit(t, sc, id), dir, 2000)
	})
	t.Run("removing a running session deletes its file at once", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000})
		sc := reg.Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: numberedLines(2000) + "; echo printed; exec sleep 60"})
		waitFor(t, sc, id, "printed")
		s := sessionOf(reg, id)
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id})
		path := log.Details.OutputFile
		require.NotEmpty(t, path, log.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "remove", SessionID: id})
		requireGone(t, path)
		require.NoError(t, awaitEnd(testCtx(t), s))
		assert.Empty(t, spillFiles(t, dir))
	})
	t.Run("removing a session mid-flood leaves no file and frees its quota", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000})
		sc := reg.Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: "yes 0123456789"})
		waitFor(t, sc, id, "0123456789")
		s := sessionOf(reg, id)
		mustProcess(t, sc, &ProcessRequest{Action: "remove", SessionID: id})
		require.NoError(t, awaitEnd(testCtx(t), s))
		assert.Empty(t, spillFiles(t, dir))
		assert.Zero(t, reg.spills.quota.Used())
		assert.True(t, s.Spill().Removed)
	})
	t.Run("the TTL reaper and Close delete every file", func(t *testing.T) {
		dir := t.TempDir()
		reg, err := NewRegistry(sandboxed(Config{SpillDir: dir, MaxOutputChars: 1000, YieldMs: MaxYieldMs}))
		require.NoError(t, err)
		closed := false
		defer func() {
			if !closed {
				require.NoError(t, reg.Close(context.Background()))
			}
		}()
		sc := reg.Scope("a")
		reaped := startBackground(t, sc, &ExecRequest{Command: numberedLines(2000)})
		running := startBackground(t, sc, &ExecRequest{Command: numberedLines(2000) + "; echo printed; exec sleep 60"})
		ended := startBackground(t, sc, &ExecRequest{Command: numberedLines(2000)})
		fg := mustExec(t, sc, &ExecRequest{Command: numberedLines(2000)})
		require.NotEmpty(t, fg.Details.OutputFile, fg.Text())
		require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, reaped)))
		require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, ended)))
		waitFor(t, sc, running, "printed")
		files := map[string]string{}
		for _, id := range []string{reaped, running, ended} {
			log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id})
			require.NotEmpty(t, log.Details.OutputFile, log.Text())
			files[id] = log.Details.OutputFile
		}
		require.Len(t, spillFiles(t, dir), 4)

		// The reaper forgets the ended sessions once their TTL is over.
		reg.reapExpired(time.Now().Add(DefaultJobTTLMs*time.Millisecond + time.Minute))
		requireGone(t, files[reaped])
		requireGone(t, files[ended])
		_, err = os.Stat(files[running])
		require.NoError(t, err, "a running session keeps its file")

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		closed = true
		require.NoError(t, reg.Close(ctx))
		assert.Empty(t, spillFiles(t, dir), "Close leaves no spill file")
	})
}

func TestSpillQuotas(t *testing.T) {
	t.Parallel()
	t.Run("the per-session quota stops the file and is reported", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000, SpillMaxBytesPerSession: 5000})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: numberedLines(2000)})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		path := res.Details.OutputFile
		require.NotEmpty(t, path, res.Text())
		require.NotNil(t, res.Details.OutputFileTruncated)
		assert.True(t, *res.Details.OutputFileTruncated)
		assert.Equal(t, "the per-session spill quota (5000 bytes) was reached", res.Details.OutputFileIncomplete)
		assert.Contains(t, res.Text(), "[The output file "+path+" is incomplete: it holds the first 5000 bytes of the output; the per-session spill quota (5000 bytes) was reached.")
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, lineRun(0, 499)+"\n", string(b))
	})
	t.Run("the registry quota is shared by all sessions and freed with them", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000, SpillMaxBytes: 15000})
		sc := reg.Scope("a")
		first := startBackground(t, sc, &ExecRequest{Command: numberedLines(1000)})
		require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, first)))
		second := startBackground(t, sc, &ExecRequest{Command: numberedLines(1000)})
		require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, second)))

		log1 := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: first})
		requireSpilled(t, log1, dir, 1000)
		log2 := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: second})
		require.NotNil(t, log2.Details.OutputFileTruncated, log2.Text())
		assert.True(t, *log2.Details.OutputFileTruncated)
		assert.Equal(t, "the spill quota of all sessions together (15000 bytes) was reached", log2.Details.OutputFileIncomplete)
		assert.Contains(t, log2.Text(), "is incomplete: it holds the first 5000 bytes")
		b, err := os.ReadFile(log2.Details.OutputFile)
		require.NoError(t, err)
		assert.Equal(t, lineRun(0, 499)+"\n", string(b))

		// Removing both gives their bytes back: a third session spills whole.
		mustProcess(t, sc, &ProcessRequest{Action: "remove", SessionID: first})
		mustProcess(t, sc, &ProcessRequest{Action: "remove", SessionID: second})
		assert.Zero(t, reg.spills.quota.Used())
		third := startBackground(t, sc, &ExecRequest{Command: numberedLines(1000)})
		require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, third)))
		requireSpilled(t, mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: third}), dir, 1000)
	})
	t.Run("a directory gone since NewRegistry is reported, and the session runs on", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "spill")
		require.NoError(t, os.Mkdir(dir, 0o700))
		reg := newTestRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000})
		require.NoError(t, os.Remove(dir))
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: numberedLines(2000)})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		assert.True(t, strings.HasSuffix(strings.TrimSpace(res.Details.Aggregated), "line 1999"))
		assert.Empty(t, res.Details.OutputFile)
		require.NotNil(t, res.Details.OutputFileTruncated)
		assert.True(t, *res.Details.OutputFileTruncated)
		assert.Contains(t, res.Details.OutputFileIncomplete, "it could not be created:")
		assert.Contains(t, res.Text(), "[The full output could not be saved to a file: it could not be created:")
	})
}

func TestSpillStreams(t *testing.T) {
	t.Parallel()
	t.Run("the file holds both streams in the log's order", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{SpillDir: dir})
		sc := reg.Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: `i=0; while [ $i -lt 3000 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done`})
		s := sessionOf(reg, id)
		require.NoError(t, awaitEnd(testCtx(t), s))
		agg, _ := s.Aggregated()
		b, err := os.ReadFile(s.Spill().Path)
		require.NoError(t, err)
		assert.Equal(t, agg, string(b))
		assert.Contains(t, agg, "err 2999\n")
	})
	t.Run("a PTY session's file holds the cleaned text", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000})
		sc := reg.Scope("a")
		res := mustExec(t, sc, &ExecRequest{Command: `printf '\033[1mbold\033[0m\n'; ` + numberedLines(2000), PTY: true})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		require.NotEmpty(t, res.Details.OutputFile, res.Text())
		b, err := os.ReadFile(res.Details.OutputFile)
		require.NoError(t, err)
		assert.Equal(t, "bold\n"+lineRun(0, 1999)+"\n", string(b), "no escape sequence and no CR is kept")
	})
}

func TestSpillHosts(t *testing.T) {
	t.Parallel()
	t.Run("the sandbox host spills on this machine", func(t *testing.T) {
		dir := t.TempDir()
		reg := newSandboxRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000}, Sandbox{})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: numberedLines(2000)})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		requireSpilled(t, res, dir, 2000)
	})
	t.Run("the gateway host spills", func(t *testing.T) {
		dir := t.TempDir()
		reg := newGatewayRegistry(t, Config{SpillDir: dir, MaxOutputChars: 1000})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: numberedLines(2000)})
		requireSpilled(t, res, dir, 2000)
	})
	t.Run("a node's output spills on this machine", func(t *testing.T) {
		d := startSSHD(t)
		dir := t.TempDir()
		reg := nodeRegistry(t, d, Config{SpillDir: dir, MaxOutputChars: 1000}, nil)
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: numberedLines(2000)})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		requireSpilled(t, res, dir, 2000)
	})
}
