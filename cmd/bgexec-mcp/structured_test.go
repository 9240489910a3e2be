package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// structuredOnly is what a host that passes only structuredContent to the
// model (Claude Code, Codex) gives it: the structured content, decoded.
// It fails the test unless the structured text is the text content,
// verbatim.
func structuredOnly(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var sc map[string]any
	require.NoError(t, json.Unmarshal(structured(t, res), &sc))
	text, ok := sc["text"].(string)
	require.True(t, ok, "structuredContent has a string field text: %s", structured(t, res))
	assert.Equal(t, textOf(t, res), text, "the structured text is the text content")
	return text
}

// TestStructuredOnlyHostSeesEverything plays a host that shows the model
// only structuredContent: for every exec and process action and every kind
// of notice, hint and refusal, the marker the text carries is in the
// structured part alone.
func TestStructuredOnlyHostSeesEverything(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	c := connect(t, bin, "-max-call-ms", "2000")
	// see calls tool and asserts that a structured-only host sees marker.
	see := func(marker, tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res := c.call(t, tool, args)
		assert.Contains(t, textOf(t, res), marker, "%s %v: the text content carries the marker", tool, args)
		assert.Contains(t, structuredOnly(t, res), marker, "%s %v: a structured-only host sees it", tool, args)
		return res
	}
	id := func(res *mcp.CallToolResult) string { return detailsOf(t, res).SessionID }

	t.Run("exec output, stderr, exit codes, timeouts and the call cap", func(t *testing.T) {
		see("OUT-MARK", "exec", map[string]any{"command": "echo OUT-MARK"})
		see("ERR-MARK", "exec", map[string]any{"command": "echo ERR-MARK >&2"})
		see("(Command exited with code 3)", "exec", map[string]any{"command": "echo X; exit 3"})
		see("Command timed out after", "exec", map[string]any{"command": "sleep 30", "timeout": 1})
		res := see("This call returned at the server's limit of 2000 ms per call", "exec", map[string]any{"command": "sleep 30", "yieldMs": 120000})
		see("Killed session "+id(res), "process", map[string]any{"action": "kill", "sessionId": id(res)})
	})

	t.Run("refusals and bad calls", func(t *testing.T) {
		see("Security Violation: Environment variable 'LD_PRELOAD'", "exec", map[string]any{"command": "true", "env": map[string]any{"LD_PRELOAD": "/x.so"}})
		see("elevated is not available right now", "exec", map[string]any{"command": "true", "elevated": true})
		see("exec host not allowed", "exec", map[string]any{"command": "true", "host": "sandbox"})
		strict := connect(t, bin, "-security", "allowlist", "-allowlist", "ls")
		res := strict.call(t, "exec", map[string]any{"command": "echo POLICY-MARK"})
		assert.Contains(t, structuredOnly(t, res), "exec denied: ", "a policy refusal")
		assert.Contains(t, structuredOnly(t, res), "security=allowlist")
		res = connect(t, bin, "-ask", "always").call(t, "exec", map[string]any{"command": "echo APPROVAL-MARK"})
		assert.Contains(t, structuredOnly(t, res), "the MCP client cannot ask the person", "an approval refusal")
		see("command", "exec", map[string]any{"command": 5})
		see("No session found for no-such", "process", map[string]any{"action": "poll", "sessionId": "no-such"})
		see("No session found for no-such", "process", map[string]any{"action": "log", "sessionId": "no-such"})
		see("Unknown action bogus", "process", map[string]any{"action": "bogus", "sessionId": "x"})
		see("Timed out after 1 ms", "process", map[string]any{"action": "wait", "sessionId": id(see("Command still running", "exec", map[string]any{"command": "exec sleep 30", "background": true})), "pattern": "never", "timeout": 1})
	})

	t.Run("a pipe session: prompt hint, write, wait, log, poll, list, kill, clear", func(t *testing.T) {
		res := see("Command still running (session", "exec", map[string]any{
			"command": "printf 'PROMPT-MARK? '; read a; echo \"ANSWER-MARK $a\"; exec sleep 300", "background": true, "stdin": "pipe",
		})
		sid := id(res)
		// The hint shows once the prompt has been quiet for a moment.
		deadline := time.Now().Add(callTimeout)
		var polled strings.Builder
		for {
			res = c.call(t, "process", map[string]any{"action": "poll", "sessionId": sid, "timeout": 1000})
			polled.WriteString(structuredOnly(t, res))
			if strings.Contains(textOf(t, res), "(waiting for input?)") {
				break
			}
			require.True(t, time.Now().Before(deadline), "no (waiting for input?) hint: %s", polled.String())
		}
		assert.Contains(t, polled.String(), "PROMPT-MARK?", "the polled output, as a structured-only host saw it")
		assert.Contains(t, structuredOnly(t, res), "(waiting for input?)")
		see("Wrote 4 bytes to session "+sid, "process", map[string]any{"action": "write", "sessionId": sid, "data": "yes\n"})
		see("ANSWER-MARK yes", "process", map[string]any{"action": "wait", "sessionId": sid, "pattern": "ANSWER-MARK", "timeout": 20000})
		see("PROMPT-MARK? ANSWER-MARK yes", "process", map[string]any{"action": "log", "sessionId": sid})
		res = see("(no new output)", "process", map[string]any{"action": "poll", "sessionId": sid})
		var sc map[string]any
		require.NoError(t, json.Unmarshal(structured(t, res), &sc))
		delete(sc, "text")
		rest, err := json.Marshal(sc)
		require.NoError(t, err)
		assert.Less(t, len(rest), 2048, "an empty poll's structured part is under 2 KB besides its text: %s", rest)
		see(sid, "process", map[string]any{"action": "list"})
		see("Killed session "+sid, "process", map[string]any{"action": "kill", "sessionId": sid})
		see("Cleared session "+sid, "process", map[string]any{"action": "clear", "sessionId": sid})
		see("No session found for "+sid, "process", map[string]any{"action": "remove", "sessionId": sid})
		res = see("Command still running", "exec", map[string]any{"command": "exec sleep 300", "background": true})
		see(id(res), "process", map[string]any{"action": "remove", "sessionId": id(res)})
	})

	t.Run("a terminal session: send-keys, submit, paste, resize, screen", func(t *testing.T) {
		res := see("Command still running (session", "exec", map[string]any{"command": "cat", "pty": true, "background": true})
		sid := id(res)
		see(sid, "process", map[string]any{"action": "send-keys", "sessionId": sid, "literal": "KEYS-MARK"})
		see(sid, "process", map[string]any{"action": "submit", "sessionId": sid})
		see(sid, "process", map[string]any{"action": "paste", "sessionId": sid, "text": "PASTE-MARK\n"})
		see("100", "process", map[string]any{"action": "resize", "sessionId": sid, "cols": 100, "rows": 30})
		see("KEYS-MARK", "process", map[string]any{"action": "wait", "sessionId": sid, "pattern": "PASTE-MARK", "timeout": 20000})
		see("PASTE-MARK", "process", map[string]any{"action": "screen", "sessionId": sid})
		see("Killed session "+sid, "process", map[string]any{"action": "kill", "sessionId": sid})
	})

	t.Run("the exit notice of a background command", func(t *testing.T) {
		res := see("Command still running", "exec", map[string]any{"command": "sleep 0.2; echo NOTICE-MARK", "background": true})
		want := "[bgexec] Exec completed (" + id(res) + ", code 0) :: NOTICE-MARK"
		deadline := time.Now().Add(callTimeout)
		for {
			res = c.call(t, "process", map[string]any{"action": "list"})
			if len(noticesOf(t, res)) > 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "no exit notice")
		}
		assert.Contains(t, structuredOnly(t, res), want)
	})
}
