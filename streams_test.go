//go:build linux

package bgexec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitStreams(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{MaxOutputChars: 1000})
	sc := reg.Scope("a")
	t.Run("a finished exec result carries stdout and stderr apart", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "echo out1; echo err1 >&2; echo out2; exit 3", Streams: "split"})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		require.NotNil(t, res.Details.Stdout)
		require.NotNil(t, res.Details.Stderr)
		assert.Equal(t, "out1\nout2\n", *res.Details.Stdout)
		assert.Equal(t, "err1\n", *res.Details.Stderr)
		assert.Contains(t, res.Text(), "out1")
		assert.Contains(t, res.Text(), "err1")
		b, err := json.Marshal(res)
		require.NoError(t, err)
		assert.Contains(t, string(b), `"stderr":"err1\n"`)
	})
	t.Run("an empty stream is an empty string, not absent", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "echo only", Streams: "split"})
		require.NotNil(t, res.Details.Stderr)
		assert.Equal(t, "", *res.Details.Stderr)
	})
	t.Run("merged (the default) carries neither", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "echo out; echo err >&2"})
		assert.Nil(t, res.Details.Stdout)
		assert.Nil(t, res.Details.Stderr)
	})
	t.Run("each stream is capped like the merged text", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: numberedLines(300) + " >&2; echo done", Streams: "split"})
		require.NotNil(t, res.Details.Stderr)
		assert.Equal(t, lineRun(200, 299)+"\n", *res.Details.Stderr)
		assert.Equal(t, "done\n", *res.Details.Stdout)
	})
	t.Run("poll carries them for a background session", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: "echo out; echo err >&2", Streams: "split"})
		require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		require.NotNil(t, res.Details.Stdout, res.Text())
		assert.Equal(t, "out\n", *res.Details.Stdout)
		assert.Equal(t, "err\n", *res.Details.Stderr)
	})
	t.Run("a PTY has one stream: split is refused and nothing runs", func(t *testing.T) {
		dir := t.TempDir()
		res := mustExec(t, sc, &ExecRequest{Command: "touch ran", Workdir: dir, PTY: true, Streams: "split"})
		require.True(t, res.IsError)
		assert.Equal(t, `streams "split" needs pipes: a PTY has one stream. Omit pty, or omit streams.`, res.Text())
		assert.NoFileExists(t, dir+"/ran")
	})
	t.Run("an unknown value is refused", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "true", Streams: "both"})
		require.True(t, res.IsError)
		assert.True(t, strings.HasPrefix(res.Text(), `Invalid streams "both"`), res.Text())
	})
}
