//go:build linux

package bgexec

// Tests of the second-round refinements that follow the reference exactly:
// one test per refinement, with real processes.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// detailsJSON returns the JSON object of a result's details, by key.
func detailsJSON(t *testing.T, res *Result) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var env struct {
		Details map[string]json.RawMessage `json:"details"`
	}
	require.NoError(t, json.Unmarshal(b, &env))
	return env.Details
}

// mustCall runs a tool call with JSON arguments and fails on a Go error.
func mustCall(t *testing.T, sc *Scope, tool, args string) *Result {
	t.Helper()
	res, err := sc.Call(testCtx(t), tool, json.RawMessage(args))
	require.NoError(t, err)
	require.NotNil(t, res)
	return res
}

func TestRefinementFailedExecAlwaysCarriesExitCode(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	cases := []struct {
		name     string
		req      ExecRequest
		status   Status
		exitCode string // the raw JSON value
	}{
		{"a signal death has exitCode null", ExecRequest{Command: "kill -9 $$"}, StatusFailed, "null"},
		{"a timeout has exitCode null", ExecRequest{Command: "exec " + helper("hang"), Timeout: ptr(0.2)}, StatusFailed, "null"},
		{"command not found has its code", ExecRequest{Command: "definitely-not-a-command-xyz"}, StatusFailed, "127"},
		{"a refused env key has exitCode null", ExecRequest{Command: "true", Env: map[string]string{"PATH": "/"}}, StatusFailed, "null"},
		{"a blank command has exitCode null", ExecRequest{Command: "  "}, StatusFailed, "null"},
		{"a completed run has a number", ExecRequest{Command: "true"}, StatusCompleted, "0"},
		{"a non-zero completed run has its number", ExecRequest{Command: "exit 3"}, StatusCompleted, "3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strings.Contains(c.req.Command, "kill -9 $$") {
				skipInSandboxSuite(t, "bwrap reports a signal death inside the sandbox as exit code 128+n")
			}
			res := mustExec(t, sc, &c.req)
			require.Equal(t, c.status, res.Details.Status, res.Text())
			d := detailsJSON(t, res)
			require.Contains(t, d, "exitCode")
			assert.JSONEq(t, c.exitCode, string(d["exitCode"]))
		})
	}

	t.Run("a spawn error has exitCode null", func(t *testing.T) {
		reg := newTestRegistry(t, Config{Shell: filepath.Join(t.TempDir(), "no-such-shell")})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "true"})
		require.Equal(t, ExitReasonSpawnError, res.Details.ExitReason, res.Text())
		assert.JSONEq(t, "null", string(detailsJSON(t, res)["exitCode"]))
	})
	t.Run("a schema failure of exec through Call has exitCode null", func(t *testing.T) {
		res := mustCall(t, sc, "exec", `{"command":"true","yieldMs":"soon"}`)
		require.Equal(t, StatusFailed, res.Details.Status)
		assert.JSONEq(t, "null", string(detailsJSON(t, res)["exitCode"]))
	})
	t.Run("other results keep omitting a missing exitCode", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("hang")})
		running := mustExec(t, sc, &ExecRequest{Command: "exec " + helper("hang"), Background: true})
		assert.NotContains(t, detailsJSON(t, running), "exitCode", "a running exec")
		assert.NotContains(t, detailsJSON(t, running), "aggregated", "a running exec")
		poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.NotContains(t, detailsJSON(t, poll), "exitCode", "a poll of a running session")
		assert.NotContains(t, detailsJSON(t, mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: "nope"})), "exitCode", "a process failure")
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: running.Details.SessionID})
	})
}

func TestRefinementAggregatedIsTheOutputPartOfTheText(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	cases := []struct {
		name       string
		req        ExecRequest
		text       string
		aggregated string
	}{
		{"output is trimmed", ExecRequest{Command: helper("echo", "  hello  ")}, "hello", "hello"},
		{"the exit-code suffix is part of it", ExecRequest{Command: helper("exit", "3")},
			"exiting 3\n\n(Command exited with code 3)", "exiting 3\n\n(Command exited with code 3)"},
		{"no output is the empty string, not (no output)", ExecRequest{Command: "true"}, "(no output)", ""},
		{"no output with a non-zero code is the suffix alone", ExecRequest{Command: "exit 4"},
			"(no output)\n\n(Command exited with code 4)", "\n\n(Command exited with code 4)"},
		{"a failure reason is not part of it", ExecRequest{Command: "echo partial; kill -9 $$"},
			"partial\n\nCommand aborted by signal SIGKILL", "partial"},
		{"a failure without output is the empty string", ExecRequest{Command: "kill -9 $$"},
			"Command aborted by signal SIGKILL", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strings.Contains(c.req.Command, "kill -9 $$") {
				skipInSandboxSuite(t, "bwrap reports a signal death inside the sandbox as exit code 128+n")
			}
			res := mustExec(t, sc, &c.req)
			if c.text != "" {
				assert.Equal(t, c.text, res.Text())
			} else {
				assert.True(t, strings.HasSuffix(res.Text(), "\n\nhere"), res.Text())
			}
			assert.Equal(t, c.aggregated, res.Details.Aggregated)
			d := detailsJSON(t, res)
			require.Contains(t, d, "aggregated", "present even when empty")
			var got string
			require.NoError(t, json.Unmarshal(d["aggregated"], &got))
			assert.Equal(t, c.aggregated, got)
		})
	}
	t.Run("a refusal has an empty aggregated", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "true", Env: map[string]string{"HOME": "/"}})
		assert.JSONEq(t, `""`, string(detailsJSON(t, res)["aggregated"]))
	})
	t.Run("a background run that ends is followed by poll, whose aggregated is the retained output", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("echo", "  bg  ")})
		end := waitExit(t, sc, id)
		require.Equal(t, StatusCompleted, end.Details.Status)
		poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.Equal(t, "  bg  \n", poll.Details.Aggregated)
	})
	t.Run("a warning is not part of it", func(t *testing.T) {
		// A missing workdir no longer warns (it fails); the disabled
		// background does.
		reg := newTestRegistry(t, Config{BackgroundDisabled: true})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo here", Background: true})
		assert.Equal(t, "Warning: background execution is disabled; running synchronously.\n\nhere", res.Text())
		assert.Equal(t, "here", res.Details.Aggregated)
	})
}

// A per-call workdir that does not exist fails (the third round); only a
// configured default removed after NewRegistry still falls back, in this
// order.
func TestRefinementWorkdirFallbackOrder(t *testing.T) {
	// vanishing returns a configured workdir that is gone once the registry runs.
	vanishing := func(t *testing.T) (*Registry, string) {
		cfgDir := filepath.Join(t.TempDir(), "configured")
		require.NoError(t, os.Mkdir(cfgDir, 0o755))
		reg := newTestRegistry(t, Config{Workdir: cfgDir})
		require.NoError(t, os.Remove(cfgDir))
		return reg, cfgDir
	}
	t.Run("a configured workdir that vanished falls back to the process's cwd", func(t *testing.T) {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		require.NoError(t, err)
		t.Chdir(dir)
		reg, cfgDir := vanishing(t)
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "pwd"})
		assert.Equal(t, `Warning: workdir "`+cfgDir+`" is unavailable; using "`+dir+`".`+"\n\n"+dir, res.Text())
		assert.Equal(t, dir, res.Details.Cwd)
	})
	t.Run("when the cwd is gone too, HOME", func(t *testing.T) {
		home, err := filepath.EvalSymlinks(t.TempDir())
		require.NoError(t, err)
		t.Setenv("HOME", home)
		gone := filepath.Join(t.TempDir(), "gone")
		require.NoError(t, os.Mkdir(gone, 0o755))
		t.Chdir(gone)
		require.NoError(t, os.Remove(gone))
		_, err = os.Getwd()
		require.Error(t, err, "the cwd no longer exists")

		reg, cfgDir := vanishing(t)
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "pwd"})
		assert.Equal(t, `Warning: workdir "`+cfgDir+`" is unavailable; using "`+home+`".`+"\n\n"+home, res.Text())
	})
	t.Run("a per-call workdir is quoted literally, without escaping", func(t *testing.T) {
		dir := t.TempDir()
		reg := newTestRegistry(t, Config{Workdir: dir})
		wd := "/no/\"such\"\\dir\twith é"
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "true", Workdir: "  " + wd + " "})
		assert.Equal(t, `workdir "`+wd+`" is unavailable or not a directory: command was not executed. Use an existing directory, or omit workdir for the default.`, res.Text())
	})
}

func TestRefinementNameDerivation(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	long := func(n int) string { return strings.Repeat("a", n/2) + strings.Repeat("b", n-n/2) }
	cases := []struct{ command, name string }{
		{`echo "" hello`, "echo hello"},
		{`echo '' "" -n`, "echo -n"},
		{`echo "two words"`, "echo two words"},
		{`echo 'single quoted'`, "echo single quoted"},
		{`echo a"b c"d`, `echo a"b c"d`},
		{`echo "x"y`, `echo "x"y`},
		{`echo 'x'"y"`, `echo 'x'"y"`},
		{"echo   spaced\t\tout", "echo spaced"},
		{"echo " + long(48), "echo " + long(48)},
		{"echo " + long(49), "echo " + strings.Repeat("a", 22) + "..." + strings.Repeat("b", 22)},
		{"echo " + long(100), "echo " + strings.Repeat("a", 22) + "..." + strings.Repeat("b", 22)},
	}
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = startBackground(t, sc, &ExecRequest{Command: c.command})
		assert.Equal(t, c.name, deriveName(c.command), c.command)
	}
	names := map[string]string{}
	for _, id := range ids {
		awaitDone(t, reg, id)
	}
	for _, s := range mustProcess(t, sc, &ProcessRequest{Action: "list"}).Details.Sessions {
		names[s.SessionID] = s.Name
	}
	for i, c := range cases {
		t.Run("the name of "+c.command, func(t *testing.T) {
			assert.Equal(t, c.name, names[ids[i]])
		})
	}
	t.Run("a truncated target is 47 characters", func(t *testing.T) {
		assert.Len(t, strings.TrimPrefix(deriveName("echo "+long(49)), "echo "), 47)
	})
}

func TestRefinementListTextIsNewestFirstMixed(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	oldRunning := startBackground(t, sc, &ExecRequest{Command: helper("hang")})
	finished := startBackground(t, sc, &ExecRequest{Command: helper("echo", "done")})
	awaitDone(t, reg, finished)
	newRunning := startBackground(t, sc, &ExecRequest{Command: helper("hang")})

	res := mustProcess(t, sc, &ProcessRequest{Action: "list"})
	var textOrder []string
	for _, line := range strings.Split(res.Text(), "\n") {
		id, _, _ := strings.Cut(line, " ")
		textOrder = append(textOrder, id)
	}
	assert.Equal(t, []string{newRunning, finished, oldRunning}, textOrder, "text: by start time, newest first")
	var detailOrder []string
	for _, s := range res.Details.Sessions {
		detailOrder = append(detailOrder, s.SessionID)
	}
	assert.Equal(t, []string{newRunning, oldRunning, finished}, detailOrder, "details: running, then finished")
	assert.Contains(t, res.Text(), finished+" completed ")

	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: oldRunning})
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: newRunning})
}

func TestRefinementRetryInMsStartsAt5000(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	id := startBackground(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe"})

	emptyPolls := func(n int) []int64 {
		var got []int64
		for range n {
			res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
			require.Equal(t, "(no new output)\n\nProcess still running.", res.Text())
			require.NotNil(t, res.Details.RetryInMs)
			got = append(got, *res.Details.RetryInMs)
		}
		return got
	}
	assert.Equal(t, []int64{5000, 10000, 30000, 60000, 60000}, emptyPolls(5), "the first empty poll of a session says 5000")

	mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "x\n"})
	res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(20000))})
	require.Equal(t, "x\n\nProcess still running.", res.Text())
	assert.Equal(t, int64(5000), *res.Details.RetryInMs, "a poll with output resets it")
	assert.Equal(t, []int64{10000, 30000, 60000}, emptyPolls(3), "and the empty polls after it go on from there")

	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
}

func TestRefinementWriteWithEOFText(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	for _, c := range []struct {
		name, data string
		pty        bool
		bytes      string
	}{
		{"data then eof on a pipe", "héllo\n", false, "7"},
		{"eof alone on a pipe", "", false, "0"},
		{"data then eof on a terminal", "hi\n", true, "3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := startBackground(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe", PTY: c.pty})
			res := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: c.data, EOF: true})
			assert.Equal(t, "Wrote "+c.bytes+" bytes to session "+id+" (stdin closed).", res.Text())
			end := waitExit(t, sc, id)
			assert.Contains(t, end.Text(), "[eof]", "the child read EOF")
		})
	}
}

func TestRefinementEveryChildGetsOpenclawCLI(t *testing.T) {
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	for _, c := range []struct {
		name string
		req  ExecRequest
	}{
		{"a pipe child", ExecRequest{Command: helper("env", "OPENCLAW_CLI", "OPENCLAW_SHELL")}},
		{"a PTY child", ExecRequest{Command: helper("env", "OPENCLAW_CLI", "OPENCLAW_SHELL"), PTY: true}},
		{"a child whose call sets OPENCLAW_CLI", ExecRequest{Command: helper("env", "OPENCLAW_CLI", "OPENCLAW_SHELL"), Env: map[string]string{"OPENCLAW_CLI": "0"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if strings.Contains(c.req.Command, "kill -9 $$") {
				skipInSandboxSuite(t, "bwrap reports a signal death inside the sandbox as exit code 128+n")
			}
			res := mustExec(t, sc, &c.req)
			assert.Contains(t, res.Text(), `OPENCLAW_CLI="1" true`)
			assert.Contains(t, res.Text(), `OPENCLAW_SHELL="exec" true`, "next to the shell marker")
		})
	}
	t.Run("a child with a custom shell marker", func(t *testing.T) {
		t.Setenv("OPENCLAW_CLI", "inherited")
		reg := newTestRegistry(t, Config{ShellMarker: "MY_AGENT=1"})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: helper("env", "OPENCLAW_CLI", "MY_AGENT")})
		assert.Contains(t, res.Text(), `OPENCLAW_CLI="1" true`, "over the inherited value")
		assert.Contains(t, res.Text(), `MY_AGENT="1" true`)
	})
}

func TestRefinementEnvRejectionTexts(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{ExtraOverrideOnlyEnvKeys: []string{"A"}})
	sc := reg.Scope("a")
	marker := filepath.Join(t.TempDir(), "ran")
	cases := []struct {
		name string
		env  map[string]string
		text string
	}{
		{"PATH among several keys names PATH with the keys in parentheses", map[string]string{"a": "1", "PATH": "/"},
			"Security Violation: Custom 'PATH' variable is forbidden during host execution (blocked override keys: A, PATH)."},
		{"PATH with an invalid key lists both halves in the parentheses", map[string]string{"path": "/", "x-y": "1"},
			"Security Violation: Custom 'PATH' variable is forbidden during host execution (blocked override keys: PATH; invalid non-portable override keys: x-y)."},
		{"PATH alone keeps its short text", map[string]string{"Path": "/"},
			"Security Violation: Custom 'PATH' variable is forbidden during host execution."},
		{"invalid keys are shown as typed", map[string]string{"my-key": "1", "Other.Key": "1"},
			"Security Violation: invalid non-portable override keys: my-key, Other.Key."},
		{"blocked keys are upper-cased and sorted case-insensitively", map[string]string{"home": "1", "_java_options": "1", "Pager": "1"},
			"Security Violation: blocked override keys: _JAVA_OPTIONS, HOME, PAGER."},
		{"invalid keys are sorted case-insensitively", map[string]string{"b-1": "1", "A-2": "1", "a-3": "1"},
			"Security Violation: invalid non-portable override keys: A-2, a-3, b-1."},
		{"both halves, each sorted", map[string]string{"zdotdir": "1", "HOME": "1", "z-z": "1", "B-b": "1"},
			"Security Violation: blocked override keys: HOME, ZDOTDIR; invalid non-portable override keys: B-b, z-z."},
		{"one other key keeps the single-key text", map[string]string{"ld_preload": "x"},
			"Security Violation: Environment variable 'LD_PRELOAD' is forbidden during host execution."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := mustExec(t, sc, &ExecRequest{Command: "touch " + shellQuote(marker), Env: c.env})
			assert.Equal(t, StatusFailed, res.Details.Status)
			assert.Equal(t, c.text, res.Text())
			assert.NoFileExists(t, marker, "nothing was spawned")
		})
	}
}

func TestRefinementLogNeverRefusesNumbers(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	done := startBackground(t, sc, &ExecRequest{Command: helper("lines", "5")})
	waitExit(t, sc, done)
	cases := []struct{ args, text string }{
		{`"offset":1.7,"limit":2`, "line 1\nline 2"},
		{`"offset":1,"limit":2.9`, "line 1\nline 2"},
		{`"limit":1.99`, "line 4"},
		{`"offset":-3,"limit":2`, "line 0\nline 1"},
		{`"offset":-0.5`, "line 0\nline 1\nline 2\nline 3\nline 4"},
		{`"offset":3.5`, "line 3\nline 4"},
		{`"limit":0`, "(no output recorded)"},
		{`"limit":-1`, "(no output recorded)"},
		{`"offset":2,"limit":0.5`, "(no output recorded)"},
		{`"offset":5`, "(no output recorded)"},
		{`"offset":1e30,"limit":1e30`, "(no output recorded)"},
		{`"offset":-1e30,"limit":1`, "line 0"},
	}
	for _, c := range cases {
		t.Run("log with "+c.args, func(t *testing.T) {
			res := mustCall(t, sc, "process", `{"action":"log","sessionId":"`+done+`",`+c.args+`}`)
			assert.Equal(t, StatusCompleted, res.Details.Status, res.Text())
			assert.Equal(t, c.text, res.Text())
		})
	}

	t.Run("the Go API takes the same numbers", func(t *testing.T) {
		res := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: done, Offset: ptr(-2), Limit: ptr(1)})
		assert.Equal(t, "line 0", res.Text())
		res = mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: done, Limit: ptr(0)})
		assert.Equal(t, "(no output recorded)", res.Text())
	})
	t.Run("a running session's empty window is (no output recorded) too", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("hang")})
		waitFor(t, sc, id, "^ready$")
		res := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Limit: ptr(0)})
		assert.Equal(t, "(no output recorded)", res.Text())
		res = mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(7)})
		assert.Equal(t, "(no output recorded)", res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
	t.Run("JSON decoding floors offset and limit", func(t *testing.T) {
		var req ProcessRequest
		require.NoError(t, json.Unmarshal([]byte(`{"action":"log","offset":2.9,"limit":-0.5}`), &req))
		assert.Equal(t, ProcessRequest{Action: "log", Offset: ptr(2), Limit: ptr(-1)}, req)
		require.NoError(t, json.Unmarshal([]byte(`{"action":"log","timeout":"5"}`), &req))
		assert.Equal(t, ProcessRequest{Action: "log", Offset: ptr(2), Limit: ptr(-1), Timeout: ptr(Number(5))}, req, "absent fields keep their values")
	})
}

func TestRefinementClearOfAnUnknownSession(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	mine, other := reg.Scope("mine"), reg.Scope("other")
	id := startBackground(t, mine, &ExecRequest{Command: helper("echo", "x")})
	awaitDone(t, reg, id)

	for _, c := range []struct {
		name string
		sc   *Scope
		id   string
	}{
		{"an id nobody has", mine, "no-such"},
		{"another scope's finished session", other, id},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := mustProcess(t, c.sc, &ProcessRequest{Action: "clear", SessionID: c.id})
			assert.Equal(t, StatusFailed, res.Details.Status)
			assert.Equal(t, "No finished session found for "+c.id, res.Text())
		})
	}
	res := mustProcess(t, mine, &ProcessRequest{Action: "clear", SessionID: id})
	assert.Equal(t, "Cleared session "+id+".", res.Text(), "the other scope's clear did nothing")
	res = mustProcess(t, mine, &ProcessRequest{Action: "clear", SessionID: id})
	assert.Equal(t, "No finished session found for "+id, res.Text(), "a cleared session is unknown")
}

func TestRefinementPasteRefusesOnlyAnEmptyPayload(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	const markers = "1b 5b 32 30 30 7e 1b 5b 32 30 31 7e" // ESC[200~ ESC[201~
	cases := []struct {
		name  string
		call  string // process arguments after the session id; "" for a Go call
		req   ProcessRequest
		text  string
		bytes string // what od prints, "" when nothing was sent
	}{
		{"a bracketed paste of the empty text sends the markers", "", ProcessRequest{Action: "paste"}, "Pasted 0 chars to session %s.", markers},
		{"so does an explicit bracketed paste of it", "", ProcessRequest{Action: "paste", Bracketed: ptr(true)}, "Pasted 0 chars to session %s.", markers},
		{"a missing text through Call is the empty text", `"action":"paste"`, ProcessRequest{}, "Pasted 0 chars to session %s.", markers},
		{"an unbracketed paste of the empty text is refused", "", ProcessRequest{Action: "paste", Bracketed: ptr(false)}, "No paste text provided.", ""},
		{"an unbracketed paste without text through Call is refused", `"action":"paste","bracketed":false`, ProcessRequest{}, "No paste text provided.", ""},
		{"an unbracketed paste of text is sent raw", "", ProcessRequest{Action: "paste", Text: "é", Bracketed: ptr(false)}, "Pasted 1 chars to session %s.", "c3 a9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := startBackground(t, sc, &ExecRequest{Command: "od -An -tx1", Stdin: "pipe"})
			var res *Result
			if c.call != "" {
				res = mustCall(t, sc, "process", `{"sessionId":"`+id+`",`+c.call+`}`)
			} else {
				c.req.SessionID = id
				res = mustProcess(t, sc, &c.req)
			}
			assert.Equal(t, strings.ReplaceAll(c.text, "%s", id), res.Text())
			mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, EOF: true})
			waitExit(t, sc, id)
			got := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id}).Text()
			if c.bytes == "" {
				assert.Equal(t, "(no output recorded)", got, "nothing was sent")
			} else {
				assert.Equal(t, c.bytes, strings.Join(strings.Fields(got), " "), "what the child read")
			}
		})
	}
}

func TestRefinementUnknownActions(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	id := startBackground(t, sc, &ExecRequest{Command: helper("hang")})
	waitFor(t, sc, id, "^ready$")
	unknown := func(action string) string {
		return "Unknown action " + action + ". Expected one of: list, poll, log, write, send-keys, submit, paste, kill, clear, remove, resize, wait, screen, reset-shell"
	}
	cases := []struct {
		name string
		call string // JSON arguments for Call; "" means req through Process
		req  ProcessRequest
		text string
	}{
		{"an unknown action through Call", `{"action":"restart","sessionId":"` + id + `"}`, ProcessRequest{}, unknown("restart")},
		{"an unknown action through Process", "", ProcessRequest{Action: "restart", SessionID: id}, unknown("restart")},
		// The third round checks the action first.
		{"an unknown action without sessionId through Call", `{"action":"restart"}`, ProcessRequest{}, unknown("restart")},
		{"an unknown action without sessionId through Process", "", ProcessRequest{Action: "restart"}, unknown("restart")},
		{"an upper-case action through Call", `{"action":"POLL","sessionId":"` + id + `"}`, ProcessRequest{}, unknown("POLL")},
		{"an upper-case action through Process", "", ProcessRequest{Action: "POLL", SessionID: id}, unknown("POLL")},
		{"a capitalised kill through Call", `{"action":"Kill","sessionId":"` + id + `"}`, ProcessRequest{}, unknown("Kill")},
		{"a capitalised list through Process", "", ProcessRequest{Action: "List"}, unknown("List")},
		{"a capitalised list with a sessionId", "", ProcessRequest{Action: "List", SessionID: id}, unknown("List")},
		{"an action with spaces", "", ProcessRequest{Action: " poll", SessionID: id}, unknown(" poll")},
		{"an empty action through Call", `{"action":"","sessionId":"` + id + `"}`, ProcessRequest{}, unknown("")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var res *Result
			if c.call != "" {
				res = mustCall(t, sc, "process", c.call)
			} else {
				res = mustProcess(t, sc, &c.req)
			}
			assert.Equal(t, StatusFailed, res.Details.Status)
			assert.Equal(t, c.text, res.Text())
		})
	}
	poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
	assert.Equal(t, StatusRunning, poll.Details.Status, "Kill and POLL did nothing")
	assert.Equal(t, "(no new output)\n\nProcess still running.", poll.Text(), "POLL drained nothing")
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
}
