//go:build linux

package bgexec

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExecForeground(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("agent:main:main")

	t.Run("a successful run returns its trimmed output and details", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: helper("echo", "  hello world  ")})
		assert.Equal(t, "hello world", res.Text())
		d := res.Details
		assert.Equal(t, StatusCompleted, d.Status)
		require.NotNil(t, d.ExitCode)
		assert.Equal(t, 0, *d.ExitCode)
		assert.Equal(t, ExitReasonExit, d.ExitReason)
		assert.Equal(t, "hello world", d.Aggregated, "the output part of the text")
		require.NotNil(t, d.DurationMs)
		wd, _ := os.Getwd()
		assert.Equal(t, wd, d.Cwd)
		assert.Empty(t, d.SessionID, "a foreground run leaves no session")
	})

	t.Run("a non-zero exit is completed with the code appended", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: helper("exit", "3")})
		assert.Equal(t, "exiting 3\n\n(Command exited with code 3)", res.Text())
		assert.Equal(t, StatusCompleted, res.Details.Status)
		assert.Equal(t, 3, *res.Details.ExitCode)
	})

	t.Run("no output reads (no output)", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "true"})
		assert.Equal(t, "(no output)", res.Text())
	})

	t.Run("exit 127 fails as command not found", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "definitely-not-a-command-xyz"})
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.Equal(t, 127, *res.Details.ExitCode)
		assert.True(t, strings.HasSuffix(res.Text(), "\n\nCommand not found"), res.Text())
		assert.Equal(t, ExitReasonExit, res.Details.ExitReason)
	})

	t.Run("exit 126 fails as not executable", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "noexec.sh")
		require.NoError(t, os.WriteFile(f, []byte("echo hi\n"), 0o644))
		res := mustExec(t, sc, &ExecRequest{Command: f})
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.Equal(t, 126, *res.Details.ExitCode)
		assert.True(t, strings.HasSuffix(res.Text(), "Command not executable (permission denied)"), res.Text())
	})

	t.Run("a signal death fails with the signal name", func(t *testing.T) {
		skipInSandboxSuite(t, "bwrap reports a signal death inside the sandbox as exit code 128+n")
		res := mustExec(t, sc, &ExecRequest{Command: "kill -9 $$"})
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.Nil(t, res.Details.ExitCode)
		assert.Equal(t, "SIGKILL", res.Details.ExitSignal)
		assert.Equal(t, ExitReasonSignal, res.Details.ExitReason)
		assert.Equal(t, "Command aborted by signal SIGKILL", res.Text())
	})

	t.Run("stdout and stderr are both captured", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: helper("echo", "out") + "; " + helper("stderr", "err")})
		// Two pipes: the order between them is up to the reads.
		assert.ElementsMatch(t, []string{"out", "err"}, strings.Split(res.Text(), "\n"))
	})

	t.Run("the last output before exit is never lost", func(t *testing.T) {
		// awk writes its buffered 2000 lines as it exits, as the race-built
		// helper did, but starts in milliseconds instead of most of a
		// second, so the 20 rounds cost about 2 s instead of 17.
		for range 20 {
			res := mustExec(t, sc, &ExecRequest{Command: `awk 'BEGIN { for (i = 0; i < 2000; i++) print "line " i }'`})
			require.True(t, strings.HasSuffix(res.Text(), "line 1999"), res.Text()[max(0, len(res.Text())-40):])
		}
	})

	t.Run("a foreground run returns as soon as the process exits", func(t *testing.T) {
		start := time.Now()
		res := mustExec(t, sc, &ExecRequest{Command: "true", YieldMs: ptr(60000.0)})
		assert.Equal(t, StatusCompleted, res.Details.Status)
		assert.Less(t, time.Since(start), 30*time.Second, "must not wait out the yield window")
	})
}

func TestExecBadInput(t *testing.T) {
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	before := children(t)
	cases := []struct {
		name string
		req  ExecRequest
		text string
	}{
		{"an empty command", ExecRequest{Command: ""}, "Provide a command to start."},
		{"a blank command", ExecRequest{Command: "  \t\n"}, "Provide a command to start."},
		{"a NUL byte in the command", ExecRequest{Command: "echo a\x00b"}, "The command contains a NUL byte; remove it and retry."},
		{"a PATH override", ExecRequest{Command: "true", Env: map[string]string{"PATH": "/tmp"}}, "Security Violation: Custom 'PATH' variable is forbidden during host execution."},
		{"a blocked env key", ExecRequest{Command: "true", Env: map[string]string{"LD_PRELOAD": "x"}}, "Security Violation: Environment variable 'LD_PRELOAD' is forbidden during host execution."},
		{"an env key with =", ExecRequest{Command: "true", Env: map[string]string{"A=B": "x"}}, "Security Violation: invalid non-portable override keys: A=B."},
		{"an absurd timeout", ExecRequest{Command: "true", Timeout: ptr(1e12)}, "Invalid timeoutSeconds 1e+12: the largest timeout is 2592000 seconds (30 days); pass <= 0 for none."},
		{"an unknown stdin mode", ExecRequest{Command: "true", Stdin: "socket"}, `Invalid stdin "socket": use "closed" or "pipe".`},
		{"another host", ExecRequest{Command: "true", Host: "node"}, "exec host not allowed (requested node; configure tools.exec.host=node to allow)."},
		{"elevation that is not enabled", ExecRequest{Command: "true", Elevated: true}, "elevated is not available right now (runtime=" + map[string]string{"gateway": "direct", "sandbox": "sandbox"}[suiteHost()] + ").\nFailing gates: enabled (tools.elevated.enabled)\nContext: session=a"},
		{"security deny", ExecRequest{Command: "true", Security: "deny"}, "exec denied: host=" + suiteHost() + " security=deny"},
	}
	for _, c := range cases {
		t.Run(c.name+" is a failure and spawns nothing", func(t *testing.T) {
			res := mustExec(t, sc, &c.req)
			assert.Equal(t, StatusFailed, res.Details.Status)
			assert.Equal(t, c.text, res.Text())
		})
	}
	assert.ElementsMatch(t, before, children(t))
	list := mustProcess(t, sc, &ProcessRequest{Action: "list"})
	assert.Equal(t, "No running or recent sessions.", list.Text())

	t.Run("malformed JSON is a Go error and wrong types are failures naming the field", func(t *testing.T) {
		_, err := sc.Call(testCtx(t), "exec", json.RawMessage(`{"command":`))
		assert.Error(t, err)
		res, err := sc.Call(testCtx(t), "exec", json.RawMessage(`{"command":"true","yieldMs":"abc"}`))
		require.NoError(t, err)
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.Contains(t, res.Text(), "/yieldMs")
		res, err = sc.Call(testCtx(t), "exec", json.RawMessage(`{"command":"true","env":[1]}`))
		require.NoError(t, err)
		assert.Contains(t, res.Text(), "/env")
		_, err = sc.Call(testCtx(t), "nope", json.RawMessage(`{}`))
		assert.ErrorContains(t, err, "unknown tool")
		assert.ElementsMatch(t, before, children(t), "nothing was spawned")
	})
	t.Run("the decoder still names the field when validation passes", func(t *testing.T) {
		err := decodeArgs(json.RawMessage(`{"command":"true","yieldMs":"abc"}`), &ExecRequest{})
		assert.ErrorContains(t, err, "yieldMs")
	})
	t.Run("a nil request is an error", func(t *testing.T) {
		_, err := sc.Exec(testCtx(t), nil)
		assert.Error(t, err)
	})
}

func TestExecBackground(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")

	t.Run("background returns running at once with the session details", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: helper("hang"), Background: true})
		d := res.Details
		require.Equal(t, StatusRunning, d.Status)
		assert.Regexp(t, `^[a-z]+-[a-z]+$`, d.SessionID)
		assert.Positive(t, d.Pid)
		assert.InDelta(t, time.Now().UnixMilli(), d.StartedAt, 60000)
		want := "Command still running (session " + d.SessionID + ", pid " + itoa(d.Pid) + "). Use process (list/poll/log/kill/clear/remove) for follow-up."
		require.True(t, strings.HasPrefix(res.Text(), want), res.Text())
		if rest := strings.TrimPrefix(res.Text(), want); rest != "" {
			assert.Equal(t, "\n\nOutput so far:\nready", rest, "the helper may have printed already")
		}
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: d.SessionID})
	})

	t.Run("the yield window moves a long run to the background with its tail", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "echo started; " + helper("hang"), YieldMs: ptr(2000.0)})
		require.Equal(t, StatusRunning, res.Details.Status)
		assert.Contains(t, res.Details.Tail, "started")
		id := res.Details.SessionID
		list := mustProcess(t, sc, &ProcessRequest{Action: "list"})
		assert.Contains(t, list.Text(), id)
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("a yieldMs of zero is clamped to 10ms", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: helper("hang"), YieldMs: ptr(0.0)})
		require.Equal(t, StatusRunning, res.Details.Status)
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: res.Details.SessionID})
	})

	t.Run("the request context does not bound a backgrounded process", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		res, err := sc.Exec(ctx, &ExecRequest{Command: helper("hang"), Background: true})
		require.NoError(t, err)
		cancel()
		id := res.Details.SessionID
		waitFor(t, sc, id, "ready")
		poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.Equal(t, StatusRunning, poll.Details.Status)
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("cancelling the context before backgrounding kills the run", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := sc.Exec(ctx, &ExecRequest{Command: helper("hang"), YieldMs: ptr(60000.0)})
			done <- err
		}()
		cancel()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
		case <-time.After(20 * time.Second):
			t.Fatal("exec did not return after cancel")
		}
	})
}

func TestExecBackgroundDisabled(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{BackgroundDisabled: true})
	sc := reg.Scope("a")
	res := mustExec(t, sc, &ExecRequest{Command: "sleep 0.3; echo done", YieldMs: ptr(10.0), Background: true})
	assert.Equal(t, StatusCompleted, res.Details.Status)
	assert.Equal(t, "Warning: background execution is disabled; running synchronously.\n\ndone", res.Text())

	res = mustExec(t, sc, &ExecRequest{Command: "echo plain"})
	assert.Equal(t, "plain", res.Text(), "no warning without yieldMs/background")
}

func TestExecTimeout(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{KillGrace: 200 * time.Millisecond})
	sc := reg.Scope("a")

	t.Run("a foreground timeout kills the group and says so", func(t *testing.T) {
		skipInSandboxSuite(t, "the test reads pids the command printed, which are those of its pid namespace")
		res := mustExec(t, sc, &ExecRequest{Command: helper("grandchild"), Timeout: ptr(9.5)})
		d := res.Details
		assert.Equal(t, StatusFailed, d.Status)
		assert.Equal(t, ExitReasonTimeout, d.ExitReason)
		require.NotNil(t, d.TimedOut)
		assert.True(t, *d.TimedOut)
		assert.Contains(t, res.Text(), "Command timed out after 9.5 seconds.\n\nThe command was terminated, but external side effects may already have completed.")
		var pid int
		for _, l := range strings.Split(d.Aggregated, "\n") {
			if v, ok := strings.CutPrefix(l, "grandchild "); ok {
				pid = atoi(v)
			}
		}
		require.Positive(t, pid, d.Aggregated)
		assert.True(t, pidGone(t, pid), "grandchild %d outlived the timeout", pid)
	})

	t.Run("a background timeout is reported by poll", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("ignore-term"), Timeout: ptr(0.3)})
		res := waitExit(t, sc, id)
		assert.Equal(t, ExitReasonTimeout, res.Details.ExitReason)
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.True(t, strings.HasSuffix(res.Text(), "Process exited with timeout.\n\n"+timeoutGuidance), res.Text())
	})

	t.Run("timeout zero means none", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "sleep 0.2; echo ok", Timeout: ptr(0.0)})
		assert.Equal(t, "ok", res.Text())
	})
}

func TestExecEnvironment(t *testing.T) {
	t.Setenv("BGEXEC_INHERITED", "yes")
	t.Setenv("LD_PRELOAD", "")
	t.Setenv("NODE_OPTIONS", "--require evil")
	t.Setenv("HOME_OVERRIDE_ONLY", "kept")
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")

	res := mustExec(t, sc, &ExecRequest{
		Command: helper("env", "OPENCLAW_SHELL", "BGEXEC_INHERITED", "NODE_OPTIONS", "LD_PRELOAD", "MY_VAR", "HOME"),
		Env:     map[string]string{"MY_VAR": "set by call"},
	})
	out := res.Text()
	assert.Contains(t, out, `OPENCLAW_SHELL="exec" true`)
	assert.Contains(t, out, `BGEXEC_INHERITED="yes" true`)
	assert.Contains(t, out, `NODE_OPTIONS="" false`, "dropped from the inherited environment")
	assert.Contains(t, out, `LD_PRELOAD="" false`)
	assert.Contains(t, out, `MY_VAR="set by call" true`)
	assert.Contains(t, out, `HOME="`+os.Getenv("HOME")+`" true`, "override-only keys are kept when inherited")

	t.Run("a custom marker replaces OPENCLAW_SHELL=exec", func(t *testing.T) {
		reg := newTestRegistry(t, Config{ShellMarker: "MY_AGENT=1"})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: helper("env", "MY_AGENT", "OPENCLAW_SHELL")})
		assert.Contains(t, res.Text(), `MY_AGENT="1" true`)
		assert.Contains(t, res.Text(), `OPENCLAW_SHELL="" false`)
	})
}

func TestExecWorkdir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := newTestRegistry(t, Config{Workdir: dir})
	sc := reg.Scope("a")

	t.Run("the configured workdir is the default", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "pwd"})
		assert.Equal(t, dir, res.Text())
		assert.Equal(t, dir, res.Details.Cwd)
	})
	t.Run("a given workdir is trimmed and used", func(t *testing.T) {
		sub := filepath.Join(dir, "sub")
		require.NoError(t, os.Mkdir(sub, 0o755))
		res := mustExec(t, sc, &ExecRequest{Command: "pwd", Workdir: "  " + sub + " "})
		assert.Equal(t, sub, res.Text())
	})
	t.Run("a missing workdir fails and nothing runs", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "pwd", Workdir: "/does/not/exist"})
		require.True(t, res.IsError)
		assert.Equal(t, `workdir "/does/not/exist" is unavailable or not a directory: command was not executed. Use an existing directory, or omit workdir for the default.`, res.Text())
	})
}

func TestExecStdin(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")

	t.Run("by default the child reads EOF at once", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: helper("read-stdin")})
		assert.Equal(t, "read n=0 err=EOF", res.Text())
	})
	t.Run("stdin pipe keeps it open for write and eof", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("cat"), Stdin: "pipe"})
		res := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "héllo\n"})
		assert.Equal(t, "Wrote 7 bytes to session "+id+".", res.Text())
		waitFor(t, sc, id, "^héllo$")
		res = mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "x", EOF: true})
		assert.Equal(t, "Wrote 1 bytes to session "+id+" (stdin closed).", res.Text())
		end := waitExit(t, sc, id)
		assert.Contains(t, end.Text(), "x[eof]")
		res = mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "late"})
		assert.Equal(t, "No active session found for "+id, res.Text())
	})
	t.Run("write to a session without stdin is refused", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("hang")})
		res := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "x"})
		assert.Equal(t, "Session "+id+" stdin is not writable.", res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
	t.Run("a write to a child that never reads is bounded and reports what arrived", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("no-read"), Stdin: "pipe"})
		big := strings.Repeat("y", 1<<20)
		start := time.Now()
		res := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: big})
		assert.Less(t, time.Since(start), WriteBound+10*time.Second)
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.Regexp(t, `^Wrote \d+ of 1048576 bytes to session `+id, res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

// TestIsErrorMeansTheCallFailed keeps "the call failed" apart from "the
// command failed": only the first sets IsError (MCP's isError).
func TestIsErrorMeansTheCallFailed(t *testing.T) {
	reg := newTestRegistry(t, Config{Security: "allowlist", Allowlist: []string{"sh", "exit", "sleep", "true"}})
	sc := reg.Scope("a")
	for _, c := range []struct {
		name    string
		res     *Result
		isError bool
		status  Status
	}{
		{"a non-zero exit", mustExec(t, sc, &ExecRequest{Command: "exit 3"}), false, StatusCompleted},
		{"a timeout", mustExec(t, sc, &ExecRequest{Command: "sleep 5", Timeout: ptr(0.2)}), false, StatusFailed},
		{"a command not found", mustExec(t, reg.Scope("b"), &ExecRequest{Command: "true; exit 127"}), false, StatusFailed},
		{"a refused command", mustExec(t, sc, &ExecRequest{Command: "rm -rf /nothing"}), true, StatusFailed},
		{"a refused env key", mustExec(t, sc, &ExecRequest{Command: "true", Env: map[string]string{"LD_PRELOAD": "x"}}), true, StatusFailed},
		{"an unknown session", mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: "no-such"}), true, StatusFailed},
		{"an unknown action", mustProcess(t, sc, &ProcessRequest{Action: "fly", SessionID: "x"}), true, StatusFailed},
	} {
		assert.Equal(t, c.isError, c.res.IsError, "%s: %s", c.name, c.res.Text())
		assert.Equal(t, c.status, c.res.Details.Status, c.name)
		b, err := json.Marshal(c.res)
		require.NoError(t, err)
		assert.Equal(t, c.isError, strings.Contains(string(b), `"isError":true`), c.name)
	}
}
