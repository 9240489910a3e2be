package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuditLogFlag runs the server with -audit-log on a file that already
// has a line: the line stays, and each command adds its JSON lines.
func TestAuditLogFlag(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const earlier = `{"event":"earlier"}` + "\n"
	require.NoError(t, os.WriteFile(path, []byte(earlier), 0o600))

	c := connect(t, bin, "-audit-log", path)
	res := c.call(t, "exec", map[string]any{"command": "echo audited", "env": map[string]string{"SECRET_TOKEN": "not-in-the-log"}})
	require.False(t, res.IsError, textOf(t, res))
	require.NoError(t, c.cs.Close()) // the server exits: its registry drains the queue
	_ = c.cmd.Wait()

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), earlier), "appended, not rewritten:\n%s", b)
	assert.NotContains(t, string(b), "not-in-the-log")
	events := map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(string(b[len(earlier):])))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		ev, _ := line["event"].(string)
		events[ev] = line
	}
	require.Contains(t, events, "decision")
	require.Contains(t, events, "spawn")
	require.Contains(t, events, "end")
	assert.Equal(t, "echo audited", events["spawn"]["command"])
	assert.Equal(t, []any{"SECRET_TOKEN"}, events["spawn"]["envKeys"])
	assert.Equal(t, "mcp", events["spawn"]["scope"])
	assert.Equal(t, float64(0), events["end"]["exitCode"])
	assert.Equal(t, events["spawn"]["sessionId"], events["end"]["sessionId"])
}
