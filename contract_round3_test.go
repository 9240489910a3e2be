//go:build linux

package bgexec

// Tests of the third-round contract (the reference's newest release): one
// test per change, each through Exec/Process and through Call, with real
// processes.

import (
	"encoding/json"
	"fmt"
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

func TestRound3FinishedSessionsAreCapped(t *testing.T) {
	t.Parallel()
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			reg := newTestRegistry(t, Config{MaxFinishedSessionsPerScope: 3})
			sc, other := reg.Scope("a"), reg.Scope("b")
			otherID := way.exec(t, other, &ExecRequest{Command: "echo other", Background: true}).Details.SessionID
			require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, otherID)))
			var ids []string
			for i := range 5 {
				res := way.exec(t, sc, &ExecRequest{Command: fmt.Sprintf("echo %d", i), Background: true})
				require.Equal(t, StatusRunning, res.Details.Status, res.Text())
				ids = append(ids, res.Details.SessionID)
				// One after the other, so the order of their ends is known.
				require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, ids[i])))
			}
			res := way.proc(t, sc, &ProcessRequest{Action: "list"})
			require.Len(t, res.Details.Sessions, 3, res.Text())
			// Ids are compared whole: "calm-reef" is a prefix of "calm-reef-2".
			listed := listedIDs(res)
			for _, id := range ids[:2] {
				assert.NotContains(t, listed, id)
				res := way.proc(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
				assert.Equal(t, "No session found for "+id, res.Text(), "the oldest finished are forgotten")
			}
			for _, id := range ids[2:] {
				assert.Contains(t, listed, id)
			}
			res = way.proc(t, other, &ProcessRequest{Action: "poll", SessionID: otherID})
			assert.Contains(t, res.Text(), "other", "another scope keeps its own")
		})
	}
	t.Run("the default keeps 50", func(t *testing.T) {
		// The cap is the registry's: a fake host ends each command at once.
		reg := newTestRegistry(t, Config{})
		setHost(reg, exitingHost())
		sc := reg.Scope("a")
		var first string
		for i := range 52 {
			id := startBackground(t, sc, &ExecRequest{Command: "true"})
			if i == 0 {
				first = id
			}
			require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
		}
		res := mustProcess(t, sc, &ProcessRequest{Action: "list"})
		assert.Len(t, res.Details.Sessions, DefaultMaxFinishedSessionsPerScope)
		assert.NotContains(t, listedIDs(res), first)
	})
}

// listedIDs returns the whole session ids a list result names.
func listedIDs(res *Result) []string {
	ids := make([]string, 0, len(res.Details.Sessions))
	for _, s := range res.Details.Sessions {
		ids = append(ids, s.SessionID)
	}
	return ids
}

func TestRound3ConfigurationNames(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		name string
		env  map[string]string
		want Config
	}{
		{"the OPENCLAW_BASH_ names are read", map[string]string{"OPENCLAW_BASH_YIELD_MS": "500", "OPENCLAW_BASH_MAX_OUTPUT_CHARS": "5000", "OPENCLAW_BASH_JOB_TTL_MS": "120000"},
			Config{YieldMs: 500, MaxOutputChars: 5000, JobTTLMs: 120000}},
		{"the PI_BASH_ names remain aliases", map[string]string{"PI_BASH_YIELD_MS": "600", "PI_BASH_MAX_OUTPUT_CHARS": "6000", "PI_BASH_JOB_TTL_MS": "130000"},
			Config{YieldMs: 600, MaxOutputChars: 6000, JobTTLMs: 130000}},
		{"the OPENCLAW_BASH_ names are read first", map[string]string{"OPENCLAW_BASH_YIELD_MS": "500", "PI_BASH_YIELD_MS": "600", "OPENCLAW_BASH_MAX_OUTPUT_CHARS": "5000", "PI_BASH_MAX_OUTPUT_CHARS": "6000", "OPENCLAW_BASH_JOB_TTL_MS": "120000", "PI_BASH_JOB_TTL_MS": "130000"},
			Config{YieldMs: 500, MaxOutputChars: 5000, JobTTLMs: 120000}},
		{"a blank OPENCLAW_BASH_ name leaves the alias", map[string]string{"OPENCLAW_BASH_YIELD_MS": " ", "PI_BASH_YIELD_MS": "600"},
			Config{YieldMs: 600}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, ConfigFromEnv(env(c.env)))
		})
	}
	t.Run("a registry from OPENCLAW_BASH_MAX_OUTPUT_CHARS keeps that much", func(t *testing.T) {
		cfg := ConfigFromEnv(env(map[string]string{"OPENCLAW_BASH_MAX_OUTPUT_CHARS": "1000", "PI_BASH_MAX_OUTPUT_CHARS": "200000"}))
		reg := newTestRegistry(t, cfg)
		for _, way := range bothWays {
			res := way.exec(t, reg.Scope("a"), &ExecRequest{Command: helper("lines", "500")})
			assert.True(t, strings.HasPrefix(res.Text(), discardNotice), way.name)
			assert.LessOrEqual(t, len(res.Details.Aggregated), 1000, way.name)
		}
	})
}

func TestRound3MissingWorkdirFails(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	marker := filepath.Join(dir, "ran")
	for _, way := range bothWays {
		for _, c := range []struct{ name, workdir, shown string }{
			{"a missing directory", filepath.Join(dir, "missing"), filepath.Join(dir, "missing")},
			{"a file", file, file},
			{"a missing relative directory", "no-such-dir-xyz", "no-such-dir-xyz"},
			{"whitespace only", "   ", "   "},
		} {
			t.Run(way.name+": "+c.name, func(t *testing.T) {
				res := way.exec(t, sc, &ExecRequest{Command: "touch " + shellQuote(marker), Workdir: c.workdir})
				require.True(t, res.IsError, res.Text())
				assert.Equal(t, StatusFailed, res.Details.Status)
				assert.Equal(t, `workdir "`+c.shown+`" is unavailable or not a directory: command was not executed. Use an existing directory, or omit workdir for the default.`, res.Text())
				assert.NoFileExists(t, marker)
			})
		}
		t.Run(way.name+": an existing directory runs", func(t *testing.T) {
			res := way.exec(t, sc, &ExecRequest{Command: "pwd", Workdir: " " + dir + " "})
			assert.Equal(t, dir, res.Text())
		})
	}
}

func TestRound3HostEqualToAutoRuns(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	resolved, other := "gateway", "sandbox"
	if inSandboxSuite() {
		resolved, other = "sandbox", "gateway"
	}
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			res := way.exec(t, sc, &ExecRequest{Command: "echo ran", Host: resolved})
			assert.Equal(t, "ran", res.Text(), "the host auto resolves to runs")
			res = way.exec(t, sc, &ExecRequest{Command: "echo ran", Host: "auto"})
			assert.Equal(t, "ran", res.Text())
			for _, h := range []string{other, "node"} {
				res = way.exec(t, sc, &ExecRequest{Command: "echo ran", Host: h})
				require.True(t, res.IsError, res.Text())
				assert.Equal(t, "exec host not allowed (requested "+h+"; configure tools.exec.host="+h+" to allow).", res.Text())
			}
		})
	}
}

func TestRound3ActionIsCheckedFirst(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			for _, action := range []string{"bogus", "POLL"} {
				res := way.proc(t, sc, &ProcessRequest{Action: action})
				require.True(t, res.IsError)
				assert.Equal(t, "Unknown action "+action+". Expected one of: "+actionList, res.Text())
			}
			res := way.proc(t, sc, &ProcessRequest{Action: "poll"})
			assert.Equal(t, "sessionId is required for this action.", res.Text(), "a known action still needs its sessionId")
		})
	}
}

func TestRound3ControlCharactersStayVisible(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			res := way.exec(t, sc, &ExecRequest{Command: `printf 'a\001b\007c\000d\033[31me\033[0m\tf\n'`})
			assert.Equal(t, `a\x01b\x07c\x00de`+"\tf", res.Text())

			id := way.exec(t, sc, &ExecRequest{Command: `printf 'bell\007\n'; exec sleep 60`, Background: true}).Details.SessionID
			res = way.proc(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(20000))})
			assert.Equal(t, `bell\x07`+"\n\nProcess still running.", res.Text())
			way.proc(t, sc, &ProcessRequest{Action: "remove", SessionID: id})
		})
	}
}

func TestRound3FollowUpNamesWhatApplies(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	for _, way := range bothWays {
		for _, c := range []struct {
			name string
			req  ExecRequest
			want []string
		}{
			{"a pipe session with closed stdin", ExecRequest{Command: "exec sleep 60"}, []string{"list", "poll", "log", "kill", "clear", "remove"}},
			{"a pipe session with open stdin", ExecRequest{Command: "exec sleep 60", Stdin: "pipe"}, []string{"list", "poll", "log", "write", "kill", "clear", "remove"}},
			{"a PTY session", ExecRequest{Command: "exec sleep 60", PTY: true}, []string{"list", "poll", "log", "write", "send-keys", "submit", "paste", "screen", "kill", "clear", "remove"}},
		} {
			t.Run(way.name+": "+c.name, func(t *testing.T) {
				c.req.Background = true
				res := way.exec(t, sc, &c.req)
				require.Equal(t, StatusRunning, res.Details.Status, res.Text())
				id := res.Details.SessionID
				defer way.proc(t, sc, &ProcessRequest{Action: "remove", SessionID: id})
				assert.Equal(t, fmt.Sprintf("Command still running (session %s, pid %d). Use process (%s) for follow-up.", id, res.Details.Pid, strings.Join(c.want, "/")), res.Text())
				assert.Equal(t, c.want, res.Details.FollowUp)
			})
		}
	}
}

func TestRound3DetailsExitSignalAndError(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			id := way.exec(t, sc, &ExecRequest{Command: "echo done", Background: true}).Details.SessionID
			require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
			for _, action := range []string{"log", "poll", "wait"} {
				res := way.proc(t, sc, &ProcessRequest{Action: action, SessionID: id})
				d := detailsJSON(t, res)
				require.Contains(t, d, "exitSignal", "%s: %s", action, res.Text())
				assert.JSONEq(t, "null", string(d["exitSignal"]), action)
			}
			res := way.proc(t, sc, &ProcessRequest{Action: "list"})
			var list struct {
				Sessions []map[string]json.RawMessage `json:"sessions"`
			}
			b, err := json.Marshal(res.Details)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &list))
			require.NotEmpty(t, list.Sessions)
			for _, s := range list.Sessions {
				require.Contains(t, s, "exitSignal")
				assert.JSONEq(t, "null", string(s["exitSignal"]))
			}
			res = way.exec(t, sc, &ExecRequest{Command: "echo fg"})
			assert.JSONEq(t, "null", string(detailsJSON(t, res)["exitSignal"]), "a finished exec too")

			for _, req := range []ProcessRequest{
				{Action: "poll", SessionID: "no-such-session"},
				{Action: "bogus"},
				{Action: "write", SessionID: id, Data: "x"},
			} {
				res := way.proc(t, sc, &req)
				require.Equal(t, StatusFailed, res.Details.Status)
				assert.Equal(t, res.Text(), res.Details.Error, "the reason, as in the text")
				assert.Equal(t, res.Text(), jsonString(t, detailsJSON(t, res)["error"]))
			}
			way.proc(t, sc, &ProcessRequest{Action: "clear", SessionID: id})
		})
	}
}

func jsonString(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal(raw, &s), "%s", raw)
	return s
}

func TestRound3KillText(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			id := way.exec(t, sc, &ExecRequest{Command: "echo up; exec sleep 60", Background: true}).Details.SessionID
			waitFor(t, sc, id, "up")
			res := way.proc(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
			require.Equal(t, "Killed session "+id+".", res.Text())

			res = way.proc(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
			assert.Equal(t, "(no new output)\n\nProcess stopped by request (signal SIGTERM).", res.Text(), "wait took the output")
			assert.Equal(t, StatusFailed, res.Details.Status)
			assert.Equal(t, ExitReasonKilled, res.Details.ExitReason)
			assert.Equal(t, "Process stopped by request (signal SIGTERM).", res.Details.Error)

			res = way.proc(t, sc, &ProcessRequest{Action: "log", SessionID: id})
			assert.Equal(t, "up\n\nProcess stopped by request (signal SIGTERM).", res.Text())
			assert.Equal(t, ExitReasonKilled, res.Details.ExitReason)
		})
	}
}

// Not parallel: it sets PAGER and GIT_PAGER in the test's environment.
func TestRound3PagersAreCat(t *testing.T) {
	t.Setenv("PAGER", "less")
	t.Setenv("GIT_PAGER", "less -R")
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			res := way.exec(t, sc, &ExecRequest{Command: `echo "$PAGER|$GIT_PAGER"`})
			assert.Equal(t, "cat|cat", res.Text())
			for _, key := range []string{"PAGER", "GIT_PAGER"} {
				res = way.exec(t, sc, &ExecRequest{Command: "true", Env: map[string]string{key: "less"}})
				require.True(t, res.IsError, res.Text())
				assert.Equal(t, "Security Violation: Environment variable '"+key+"' is forbidden during host execution.", res.Text())
			}
		})
	}
}

func TestRound3ElevatedRefusalSaysDirect(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("agent:main:main")
	runtime := "direct"
	if inSandboxSuite() {
		runtime = "sandbox"
	}
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			res := way.exec(t, sc, &ExecRequest{Command: "true", Elevated: true})
			require.True(t, res.IsError)
			assert.Equal(t, "elevated is not available right now (runtime="+runtime+").\nFailing gates: enabled (tools.elevated.enabled)\nContext: session=agent:main:main", res.Text())
		})
	}
}

func TestRound3RetryInMsAfterAPollWithOutput(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	for _, way := range bothWays {
		t.Run(way.name, func(t *testing.T) {
			id := way.exec(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe", Background: true}).Details.SessionID
			defer way.proc(t, sc, &ProcessRequest{Action: "remove", SessionID: id})
			var got []int64
			poll := func() {
				res := way.proc(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
				require.NotNil(t, res.Details.RetryInMs, res.Text())
				got = append(got, *res.Details.RetryInMs)
			}
			poll()
			poll()
			assert.Equal(t, []int64{5000, 10000}, got, "a session's first empty polls")

			way.proc(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "x\n"})
			res := way.proc(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(20000))})
			require.Equal(t, "x\n\nProcess still running.", res.Text())
			got = []int64{*res.Details.RetryInMs}
			for range 4 {
				poll()
			}
			assert.Equal(t, []int64{5000, 10000, 30000, 60000, 60000}, got, "a poll with output, then empty polls")
		})
	}
}
