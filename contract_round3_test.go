//go:build linux

package bgexec

// Tests of the third-round contract (the reference's newest release): one
// test per change, each through Exec/Process and through Call, with real
// processes.

import (
	"encoding/json"
	_ "fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callTool runs one tool call either through the typed API or through Call
// with the same arguments as JSON, so a test can ask both ways.
type r3Way struct {
	name string
	exec func(t *testing.T, sc *Scope, req *ExecRequest) *Result
	proc func(t *testing.T, sc *Scope, req *ProcessRequest) *Result
}

var bothWays = []r3Way{
	{"through Exec and Process", mustExec, mustProcess},
	{"through Call", func(t *testing.T, sc *Scope, req *ExecRequest) *Result {
		b, err := json.Marshal(req)
		require.NoError(t, err)
		return mustCall(t, sc, ToolExec, string(b))
	}, func(t *testing.T, sc *Scope, req *ProcessRequest) *Result {
		b, err := json.Marshal(req)
		require.NoError(t, err)
		return mustCall(t, sc, ToolProcess, string(b))
	}},
}

const wantTimeoutGuidance = "The command was terminated, but external side effects may already have completed. Verify the resulting state before retrying. Do not automatically rerun non-idempotent commands. Use a higher timeoutSeconds only when the command is known to be safe to retry.\n\nIf it should keep running, start it with exec background=true or yieldMs so it continues as a process session. Do not rely on shell backgrounding with a trailing &."

func TestRound3TimeoutSeconds(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			res := way.exec(t, sc, &ExecRequest{Command: "echo ready; exec sleep 60", TimeoutSeconds: ptr(0.3)})
			require.Equal(t, ExitReasonTimeout, res.Details.ExitReason, res.Text())
			assert.Equal(t, "ready\n\nCommand timed out after 0.3 seconds.\n\n"+wantTimeoutGuidance, res.Text())

			res = way.exec(t, sc, &ExecRequest{Command: "exec " + helper("hang"), Timeout: ptr(0.3)})
			assert.Equal(t, ExitReasonTimeout, res.Details.ExitReason, "timeout stays accepted as the older name: %s", res.Text())

			res = way.exec(t, sc, &ExecRequest{Command: "echo same", Timeout: ptr(5.0), TimeoutSeconds: ptr(5.0)})
			assert.Equal(t, "same", res.Text(), "both names with one value run")

			marker := filepath.Join(t.TempDir(), "ran")
			res = way.exec(t, sc, &ExecRequest{Command: "touch " + shellQuote(marker), Timeout: ptr(5.0), TimeoutSeconds: ptr(7.0)})
			require.True(t, res.IsError)
			assert.Equal(t, StatusFailed, res.Details.Status)
			assert.Equal(t, "timeoutSeconds (7) and timeout (5) disagree: timeout is the older name of timeoutSeconds. Pass only timeoutSeconds.", res.Text())
			assert.NoFileExists(t, marker, "nothing runs")
		})
	}
	t.Run("the schema documents timeoutSeconds and marks timeout as the older name", func(t *testing.T) {
		var s struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(ToolDefinitions()[0].InputSchema, &s))
		require.Contains(t, s.Properties, "timeoutSeconds")
		assert.Contains(t, s.Properties["timeout"].Description, "Older name of timeoutSeconds")
		assert.Contains(t, ToolDefinitions()[0].Description, "timeoutSeconds")
	})
}

func TestRound3Title(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			res := way.exec(t, sc, &ExecRequest{Command: "echo titled", Title: "print a word"})
			require.Equal(t, "titled", res.Text())
			require.NotNil(t, res.Details.Title)
			assert.Equal(t, "print a word", *res.Details.Title, "a foreground result carries the title")

			res = way.exec(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe", Background: true, Title: "echo what it reads"})
			require.Equal(t, StatusRunning, res.Details.Status, res.Text())
			id := res.Details.SessionID
			require.NotNil(t, res.Details.Title)
			assert.Equal(t, "echo what it reads", *res.Details.Title)

			res = way.proc(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
			require.NotNil(t, res.Details.Title, res.Text())
			assert.Equal(t, "echo what it reads", *res.Details.Title)

			res = way.proc(t, sc, &ProcessRequest{Action: "list"})
			var found bool
			for _, s := range res.Details.Sessions {
				if s.SessionID == id {
					found = true
					assert.Equal(t, "echo what it reads", s.Title)
				}
			}
			assert.True(t, found, res.Text())
			way.proc(t, sc, &ProcessRequest{Action: "remove", SessionID: id})

			marker := filepath.Join(t.TempDir(), "ran")
			res = way.exec(t, sc, &ExecRequest{Command: "touch " + shellQuote(marker), Title: strings.Repeat("é", 121)})
			require.True(t, res.IsError, res.Text())
			assert.Contains(t, res.Text(), "title")
			assert.Contains(t, res.Text(), "120")
			assert.NoFileExists(t, marker, "nothing runs")

			res = way.exec(t, sc, &ExecRequest{Command: "echo ok", Title: strings.Repeat("é", 120)})
			assert.Equal(t, "ok", res.Text(), "120 characters are fine")
		})
	}
}

func TestRound3UnknownParametersRun(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	dir := t.TempDir()
	marker := func(name string) string { return shellQuote(filepath.Join(dir, name)) }

	res := mustCall(t, sc, ToolExec, `{"command":"echo hi","bogus":1,"Other":{"x":[1]}}`)
	assert.Equal(t, "Warning: ignored unknown parameter(s): bogus, Other.\n\nhi", res.Text())
	assert.Equal(t, StatusCompleted, res.Details.Status)

	res = mustCall(t, sc, ToolProcess, `{"action":"list","verbose":true}`)
	assert.True(t, strings.HasPrefix(res.Text(), "Warning: ignored unknown parameter(s): verbose.\n\n"), res.Text())
	assert.Equal(t, StatusCompleted, res.Details.Status)

	t.Run("keys match case-sensitively", func(t *testing.T) {
		res := mustCall(t, sc, ToolExec, `{"command":"echo only-this","Command":"touch `+strings.Trim(marker("upper"), "'")+`"}`)
		assert.Equal(t, "Warning: ignored unknown parameter(s): Command.\n\nonly-this", res.Text())
		assert.NoFileExists(t, filepath.Join(dir, "upper"))

		res = mustCall(t, sc, ToolExec, `{"Command":"touch `+strings.Trim(marker("alone"), "'")+`"}`)
		require.True(t, res.IsError)
		assert.Equal(t, "Warning: ignored unknown parameter(s): Command.\n\nInvalid arguments for exec: /command: required but missing.", res.Text())
		assert.NoFileExists(t, filepath.Join(dir, "alone"))

		res = mustCall(t, sc, ToolProcess, `{"Action":"list"}`)
		require.True(t, res.IsError)
		assert.Contains(t, res.Text(), "/action: required but missing")
	})
	t.Run("a warning of exec comes first, above the others", func(t *testing.T) {
		reg := newTestRegistry(t, Config{BackgroundDisabled: true})
		res := mustCall(t, reg.Scope("a"), ToolExec, `{"command":"echo x","background":true,"extra":1}`)
		assert.Equal(t, "Warning: ignored unknown parameter(s): extra.\nWarning: background execution is disabled; running synchronously.\n\nx", res.Text())
	})
	t.Run("known keys are still checked", func(t *testing.T) {
		res := mustCall(t, sc, ToolExec, `{"command":"true","yieldMs":"soon","other":1}`)
		require.True(t, res.IsError)
		assert.Equal(t, "Warning: ignored unknown parameter(s): other.\n\nInvalid arguments for exec: /yieldMs: got string, want number.", res.Text())
	})
	t.Run("a key given twice is refused and nothing runs", func(t *testing.T) {
		for _, c := range []struct{ tool, args, key string }{
			{ToolExec, `{"command":"touch ` + strings.Trim(marker("first"), "'") + `","command":"touch ` + strings.Trim(marker("second"), "'") + `"}`, "/command"},
			{ToolExec, `{"command":"touch ` + strings.Trim(marker("env"), "'") + `","env":{"A":"1","A":"2"}}`, "/env/A"},
			{ToolExec, `{"command":"touch ` + strings.Trim(marker("yield"), "'") + `","yieldMs":10,"yieldMs":20}`, "/yieldMs"},
			{ToolProcess, `{"action":"list","action":"kill"}`, "/action"},
		} {
			res := mustCall(t, sc, c.tool, c.args)
			require.True(t, res.IsError, "%s: %s", c.args, res.Text())
			assert.Equal(t, StatusFailed, res.Details.Status)
			assert.Equal(t, "Invalid arguments for "+c.tool+": "+c.key+": given more than once; give each key once. Nothing was run.", res.Text())
		}
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "no command ran")
	})
	t.Run("the published schema still refuses unknown keys", func(t *testing.T) {
		for _, def := range ToolDefinitions() {
			var s struct {
				AdditionalProperties *bool `json:"additionalProperties"`
			}
			require.NoError(t, json.Unmarshal(def.InputSchema, &s))
			require.NotNil(t, s.AdditionalProperties, def.Name)
			assert.False(t, *s.AdditionalProperties, def.Name)
		}
	})
}

func TestRound3AskOnMissAsksOnlyOnAnAllowlistMiss(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	strict := newTestRegistry(t, Config{Security: "allowlist", Allowlist: []string{"echo"}})
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			res := way.exec(t, sc, &ExecRequest{Command: "echo hi", Ask: "on-miss"})
			assert.Equal(t, "hi", res.Text(), "under security full on-miss runs without asking")
			assert.Equal(t, StatusCompleted, res.Details.Status)

			res = way.exec(t, strict.Scope("a"), &ExecRequest{Command: "echo listed", Ask: "on-miss"})
			assert.Equal(t, "listed", res.Text(), "an allowlist hit runs")
			res = way.exec(t, strict.Scope("a"), &ExecRequest{Command: "true", Ask: "on-miss"})
			require.True(t, res.IsError, res.Text())
			assert.Equal(t, "exec denied: approval required but no approver is configured.", res.Text(), "a miss asks")

			res = way.exec(t, sc, &ExecRequest{Command: "echo hi", Ask: "always"})
			assert.Equal(t, "exec denied: approval required but no approver is configured.", res.Text(), "always still asks under full")
		})
	}
}

func TestRound3TimeoutGuidanceEverywhere(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	reg := newTestRegistry(t, Config{Notifier: rec})
	sc := reg.Scope("a")
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			res := way.exec(t, sc, &ExecRequest{Command: "echo ready; exec sleep 60", TimeoutSeconds: ptr(0.5), Background: true})
			require.Equal(t, StatusRunning, res.Details.Status, res.Text())
			id := res.Details.SessionID
			s := sessionOf(reg, id)
			require.NotNil(t, s)
			require.NoError(t, awaitEnd(testCtx(t), s))

			res = way.proc(t, sc, &ProcessRequest{Action: "log", SessionID: id})
			assert.Equal(t, "ready\n\nProcess exited with timeout.\n\n"+wantTimeoutGuidance, res.Text())

			res = way.proc(t, sc, &ProcessRequest{Action: "list"})
			assert.Regexp(t, `(?m)^`+id+` failed +\S+ \[timed out\] :: `, res.Text())

			res = way.proc(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
			assert.Equal(t, "ready\n\nProcess exited with timeout.\n\n"+wantTimeoutGuidance, res.Text())
			assert.Equal(t, "Process exited with timeout.", res.Details.Error)
		})
	}
	t.Run("the exit event ends with the guidance", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "echo ready; exec sleep 60", TimeoutSeconds: ptr(0.3), Background: true})
		id := res.Details.SessionID
		require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
		ctx := testCtx(t)
		var text string
		for text == "" {
			select {
			case <-rec.got:
			case <-ctx.Done():
				t.Fatal("no exit event")
			}
			events, _ := rec.snapshot()
			for _, e := range events {
				if strings.Contains(e, id) {
					text = e
				}
			}
		}
		assert.Equal(t, "a|Exec failed ("+id+", timeout) :: ready\n\n"+wantTimeoutGuidance, text)
	})
}
