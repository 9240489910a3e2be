//go:build linux

package bgexec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests drive real terminal programs the way an agent does: through
// Call with JSON arguments, reading only the returned text.

// callTool calls tool through Call with args as JSON.
func callTool(t *testing.T, sc *Scope, tool string, args map[string]any) *Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	res, err := sc.Call(testCtx(t), tool, raw)
	require.NoError(t, err)
	return res
}

// agentProcess is a process call that must not be refused.
func agentProcess(t *testing.T, sc *Scope, args map[string]any) *Result {
	t.Helper()
	res := callTool(t, sc, ToolProcess, args)
	require.False(t, res.IsError, "%v: %s", args, res.Text())
	return res
}

// startTUI starts command under a PTY in the background through Call.
func startTUI(t *testing.T, sc *Scope, command string) string {
	t.Helper()
	// The programs' looks must not depend on the terminal the tests run
	// in: TERM and less's options would otherwise come from there.
	res := callTool(t, sc, ToolExec, map[string]any{"command": "unset LESS; " + command, "pty": true, "background": true, "env": map[string]any{"TERM": DefaultTERM}})
	require.Equal(t, StatusRunning, res.Details.Status, res.Text())
	id := res.Details.SessionID
	t.Cleanup(func() {
		_, _ = sc.Process(testCtx(t), &ProcessRequest{Action: "remove", SessionID: id}) // Best effort: the test may have ended it.
	})
	return id
}

// screenWhere reads the screen (after 300 ms of quiet) until ok holds for
// its text, waiting for more output between reads; it fails after 30 s.
func screenWhere(t *testing.T, sc *Scope, id, what string, ok func(screen string) bool) *Result {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := agentProcess(t, sc, map[string]any{"action": "screen", "sessionId": id, "idleMs": 300, "timeout": 5000})
		if ok(res.Text()) {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %s; last screen:\n%s", what, res.Text())
		}
		// Event-driven: returns once new output has arrived and settled.
		agentProcess(t, sc, map[string]any{"action": "wait", "sessionId": id, "idleMs": 300, "timeout": 5000})
	}
}

// screenShows is screenWhere for a regular expression over the screen.
func screenShows(t *testing.T, sc *Scope, id, pattern string) *Result {
	t.Helper()
	re := regexp.MustCompile(pattern)
	return screenWhere(t, sc, id, "/"+pattern+"/", re.MatchString)
}

func pressKeys(t *testing.T, sc *Scope, id string, k ...string) {
	t.Helper()
	agentProcess(t, sc, map[string]any{"action": "send-keys", "sessionId": id, "keys": k})
}

func literal(t *testing.T, sc *Scope, id, text string) {
	t.Helper()
	agentProcess(t, sc, map[string]any{"action": "send-keys", "sessionId": id, "literal": text})
}

// awaitExitByCall waits (through Call) for the session to end and returns
// the wait's result.
func awaitExitByCall(t *testing.T, sc *Scope, id string) *Result {
	t.Helper()
	res := agentProcess(t, sc, map[string]any{"action": "wait", "sessionId": id, "timeout": 30000})
	require.Equal(t, "exit", res.Details.Condition, res.Text())
	return res
}

func TestTUIVim(t *testing.T) {
	t.Parallel()
	needTool(t, "vim")
	sc := newTestRegistry(t, Config{}).Scope("agent")
	file := filepath.Join(t.TempDir(), "notes.txt")
	id := startTUI(t, sc, "vim --clean -n "+shellQuote(file))

	first := screenShows(t, sc, id, `(?m)^~$`)
	assert.Equal(t, true, *first.Details.AlternateScreen, "vim draws on the alternate screen")
	assert.Equal(t, 120, first.Details.Cols)
	assert.Equal(t, 30, first.Details.Rows)

	pressKeys(t, sc, id, "i")
	screenShows(t, sc, id, `(?m)^-- INSERT --`)
	literal(t, sc, id, "first line from bgexec")
	pressKeys(t, sc, id, "Enter")
	literal(t, sc, id, "second line from bgexec")
	scr := screenShows(t, sc, id, `(?m)^second line from bgexec$`)
	lines := strings.Split(scr.Text(), "\n")
	require.GreaterOrEqual(t, len(lines), 3, scr.Text())
	assert.Equal(t, "first line from bgexec", lines[0], scr.Text())
	assert.Equal(t, "second line from bgexec", lines[1], scr.Text())
	assert.Equal(t, 2, scr.Details.CursorRow, "the cursor is on the second line")
	assert.Equal(t, len("second line from bgexec")+1, scr.Details.CursorCol, "after its last character")

	pressKeys(t, sc, id, "Escape")
	screenWhere(t, sc, id, "insert mode left", func(s string) bool { return !strings.Contains(s, "-- INSERT --") })
	literal(t, sc, id, ":wq")
	screenShows(t, sc, id, `(?m)^:wq$`)
	pressKeys(t, sc, id, "Enter")
	awaitExitByCall(t, sc, id)

	got, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "first line from bgexec\nsecond line from bgexec\n", string(got))
	after := agentProcess(t, sc, map[string]any{"action": "screen", "sessionId": id})
	assert.Equal(t, false, *after.Details.AlternateScreen, "vim left the alternate screen")
	assert.Equal(t, StatusCompleted, after.Details.Status)
}

func TestTUILess(t *testing.T) {
	t.Parallel()
	needTool(t, "less")
	sc := newTestRegistry(t, Config{}).Scope("agent")
	file := filepath.Join(t.TempDir(), "numbers.txt")
	var b strings.Builder
	for i := 1; i <= 500; i++ {
		fmt.Fprintf(&b, "number %d\n", i)
	}
	require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o644))
	id := startTUI(t, sc, "less "+shellQuote(file))

	first := screenShows(t, sc, id, `(?m)^number 29$`)
	lines := strings.Split(first.Text(), "\n")
	assert.Equal(t, "number 1", lines[0], first.Text())
	assert.Len(t, lines, 31, "29 lines, the prompt and the cursor line:\n%s", first.Text())
	assert.Equal(t, true, *first.Details.AlternateScreen)

	pressKeys(t, sc, id, "Space")
	page := screenShows(t, sc, id, `^number 30\n`)
	assert.Contains(t, page.Text(), "\nnumber 58\n", "a whole page further")
	assert.NotContains(t, page.Text(), "number 29\n")

	literal(t, sc, id, "/number 250$")
	pressKeys(t, sc, id, "Enter")
	found := screenShows(t, sc, id, `^number 250\n`)
	assert.Contains(t, found.Text(), "number 251")

	pressKeys(t, sc, id, "q")
	awaitExitByCall(t, sc, id)
}

// framesInPlace reads a first screen where frame holds, waits for the
// program to draw again and reads a later one. A program that redraws in
// place shows its header (marked by header) once on each. It returns the
// first screen.
func framesInPlace(t *testing.T, sc *Scope, id, what string, frame func(string) bool, header string) *Result {
	t.Helper()
	first := screenWhere(t, sc, id, what, frame)
	assert.Equal(t, 1, strings.Count(first.Text(), header), "one header:\n%s", first.Text())
	agentProcess(t, sc, map[string]any{"action": "wait", "sessionId": id, "idleMs": 300, "timeout": 10000})
	later := screenWhere(t, sc, id, "a later frame", frame)
	assert.Equal(t, 1, strings.Count(later.Text(), header), "one header on a later frame:\n%s", later.Text())
	return first
}

func TestTUITop(t *testing.T) {
	t.Parallel()
	needTool(t, "top")
	sc := newTestRegistry(t, Config{}).Scope("agent")
	// -p: only top's own row (exec makes $$ top's pid), which a busy
	// machine's processes could otherwise push below the screen's end.
	id := startTUI(t, sc, "exec top -d 1 -p $$")

	header := regexp.MustCompile(`^top - \d+:\d+:\d+ up .*load average`)
	columns := regexp.MustCompile(`(?m)^\s*PID\s+USER\s+.*COMMAND$`)
	row := regexp.MustCompile(`(?m)^\s*\d+\s+\S+\s+.*\btop\s*$`) // top's own process
	frame := func(s string) bool { return header.MatchString(s) && columns.MatchString(s) && row.MatchString(s) }
	framesInPlace(t, sc, id, "top's header, columns and its own row", frame, "load average")

	pressKeys(t, sc, id, "q")
	awaitExitByCall(t, sc, id)
}

func TestTUIHtop(t *testing.T) {
	t.Parallel()
	needTool(t, "htop")
	sc := newTestRegistry(t, Config{}).Scope("agent")
	// htop saves its settings (the tree view, say) when it quits; a file
	// of its own keeps them from the user's and from other runs. exec
	// replaces the shell, whose command line would also match the filter
	// below (dash, unlike bash, does not exec a last simple command).
	id := startTUI(t, sc, "HTOPRC="+filepath.Join(t.TempDir(), "htoprc")+" exec htop -d 10")

	meters := regexp.MustCompile(`Tasks: \d+.*\n.*Load average: [\d.]+ [\d.]+ [\d.]+`)
	columns := regexp.MustCompile(`(?m)^\s*PID\S?\s*USER\s+.*Command$`) // \S: the sort arrow
	keys := regexp.MustCompile(`(?m)^F1Help\s*F2Setup.*F10Quit$`)
	frame := func(s string) bool {
		return meters.MatchString(s) && columns.MatchString(s) && keys.MatchString(s)
	}
	first := framesInPlace(t, sc, id, "htop's meters, columns and function keys", frame, "Load average")
	lines := strings.Split(first.Text(), "\n")
	assert.Len(t, lines, 31, "every row of the 120x30 terminal is in use, then the cursor line")
	assert.Regexp(t, keys, lines[len(lines)-2], "the function keys are on the last row")
	assert.Regexp(t, `^\[cursor row \d+ col \d+; alternate screen on\]$`, lines[len(lines)-1])

	// F5 switches to the tree view: the key's label changes in place.
	pressKeys(t, sc, id, "F5")
	screenShows(t, sc, id, `(?m)^F1Help.*F5List.*F10Quit$`)

	// F4 filters the list down to htop's own row (in a sandbox, also its
	// pid 1, bwrap, whose command line holds the filter's text).
	pressKeys(t, sc, id, "F4")
	literal(t, sc, id, "htop -d 10")
	pressKeys(t, sc, id, "Enter")
	own := regexp.MustCompile(`(?m)^\s*\d+\s+\S+\s+.*\bhtop -d 10\s*$`)
	processRow := regexp.MustCompile(`^\s*\d+\s+\S+\s+-?\d+\s`)
	filtered := screenWhere(t, sc, id, "only htop's own row", func(s string) bool {
		for _, line := range strings.Split(s, "\n") {
			if processRow.MatchString(line) && !own.MatchString(line) && !strings.Contains(line, "bwrap") {
				return false
			}
		}
		return own.MatchString(s)
	})
	assert.NotContains(t, filtered.Text(), "process_api", filtered.Text())

	pressKeys(t, sc, id, "q")
	awaitExitByCall(t, sc, id)
}

func TestTUIPythonREPL(t *testing.T) {
	t.Parallel()
	needTool(t, "python3")
	sc := newTestRegistry(t, Config{}).Scope("agent")
	id := startTUI(t, sc, "python3 -q")
	screenShows(t, sc, id, `(?m)^>>> ?$`)

	agentProcess(t, sc, map[string]any{"action": "paste", "sessionId": id,
		"text": "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n"})
	agentProcess(t, sc, map[string]any{"action": "submit", "sessionId": id})
	screenShows(t, sc, id, `(?m)^>>> ?$`) // the definition is complete
	literal(t, sc, id, "print('fib', fib(20))")
	agentProcess(t, sc, map[string]any{"action": "submit", "sessionId": id})

	// poll with idleMs reads the whole answer, not its first bytes.
	var out strings.Builder
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "fib 6765") && time.Now().Before(deadline) {
		res := agentProcess(t, sc, map[string]any{"action": "poll", "sessionId": id, "idleMs": 300, "timeout": 10000})
		out.WriteString(res.Text())
	}
	assert.Contains(t, out.String(), "fib 6765")
	assert.NotContains(t, out.String(), "Error")
	scr := screenShows(t, sc, id, `(?m)^fib 6765\n>>> ?$`)
	assert.NotContains(t, scr.Text(), "Error")

	literal(t, sc, id, "exit()")
	agentProcess(t, sc, map[string]any{"action": "submit", "sessionId": id})
	awaitExitByCall(t, sc, id)
}

func TestTUIBashInteractive(t *testing.T) {
	t.Parallel()
	needTool(t, "bash")
	sc := newTestRegistry(t, Config{}).Scope("agent")
	id := startTUI(t, sc, `HISTFILE=/dev/null PS1='prompt$ ' bash --norc --noprofile -i`)
	screenShows(t, sc, id, `(?m)^prompt\$$`)

	literal(t, sc, id, "echo first-run")
	pressKeys(t, sc, id, "Enter")
	screenShows(t, sc, id, `(?m)^first-run\nprompt\$$`)

	pressKeys(t, sc, id, "Up")
	screenShows(t, sc, id, `(?m)^prompt\$ echo first-run$`) // recalled
	pressKeys(t, sc, id, "BSpace", "BSpace", "BSpace")
	literal(t, sc, id, "edited")
	pressKeys(t, sc, id, "Enter")
	scr := screenShows(t, sc, id, `(?m)^first-edited\nprompt\$$`)
	assert.Contains(t, scr.Text(), "prompt$ echo first-edited\n")

	literal(t, sc, id, "exit")
	pressKeys(t, sc, id, "Enter")
	awaitExitByCall(t, sc, id)
}

func TestScreenAction(t *testing.T) {
	t.Parallel()
	sc := newTestRegistry(t, Config{}).Scope("agent")

	t.Run("a pipe session has no terminal", func(t *testing.T) {
		t.Parallel()
		res := callTool(t, sc, ToolExec, map[string]any{"command": "sleep 30", "background": true})
		id := res.Details.SessionID
		defer sc.Process(testCtx(t), &ProcessRequest{Action: "remove", SessionID: id})
		scr := callTool(t, sc, ToolProcess, map[string]any{"action": "screen", "sessionId": id})
		assert.True(t, scr.IsError)
		assert.Equal(t, StatusFailed, scr.Details.Status)
		assert.Equal(t, "Session "+id+" has no terminal; use poll or log.", scr.Text())
	})
	t.Run("an unknown session", func(t *testing.T) {
		t.Parallel()
		scr := callTool(t, sc, ToolProcess, map[string]any{"action": "screen", "sessionId": "nope"})
		assert.Equal(t, "No session found for nope", scr.Text())
	})
	t.Run("a bad idleMs is refused", func(t *testing.T) {
		t.Parallel()
		id := startTUI(t, sc, "sleep 30")
		scr, err := sc.Process(testCtx(t), &ProcessRequest{Action: "screen", SessionID: id, IdleMs: ptr(-1.0)})
		require.NoError(t, err)
		assert.Equal(t, "Invalid idleMs: pass milliseconds from 0 to 600000.", scr.Text())
	})
	t.Run("the details, trimmed rows and the title", func(t *testing.T) {
		t.Parallel()
		id := startTUI(t, sc, `printf '\033]0;the title\007\033[2J\033[Hrow one   \r\n\r\n  row three\033[5;7H'; sleep 30`)
		scr := screenShows(t, sc, id, `row three`)
		assert.Equal(t, "row one\n\n  row three\n[cursor row 5 col 7; alternate screen off]", scr.Text())
		raw, err := json.Marshal(scr.Details)
		require.NoError(t, err)
		assert.JSONEq(t, fmt.Sprintf(`{"status":"running","sessionId":%q,"name":%q,"cols":120,"rows":30,"cursorRow":5,"cursorCol":7,"alternateScreen":false,"title":"the title"}`,
			id, scr.Details.Name), string(raw))
	})
	t.Run("resize resizes the screen", func(t *testing.T) {
		t.Parallel()
		id := startTUI(t, sc, `trap 'stty size' WINCH; printf 'ready\n'; while :; do sleep 0.1; done`)
		screenShows(t, sc, id, `ready`)
		agentProcess(t, sc, map[string]any{"action": "resize", "sessionId": id, "cols": 50, "rows": 12})
		scr := screenShows(t, sc, id, `(?m)^12 50$`)
		assert.Equal(t, 50, scr.Details.Cols)
		assert.Equal(t, 12, scr.Details.Rows)
	})
	t.Run("idleMs waits for the output to settle", func(t *testing.T) {
		t.Parallel()
		id := startTUI(t, sc, `printf 'one\n'; sleep 0.2; printf 'two\n'; sleep 30`)
		scr := agentProcess(t, sc, map[string]any{"action": "screen", "sessionId": id, "idleMs": 3000, "timeout": 30000})
		assert.Equal(t, "one\ntwo\n[cursor row 3 col 1; alternate screen off]", scr.Text())
	})
}

func TestIdleWaits(t *testing.T) {
	t.Parallel()
	sc := newTestRegistry(t, Config{}).Scope("agent")

	t.Run("poll with idleMs returns the burst whole", func(t *testing.T) {
		t.Parallel()
		res := callTool(t, sc, ToolExec, map[string]any{"command": "sleep 0.3; printf 'part one\\n'; sleep 0.2; printf 'part two\\n'; sleep 30", "background": true})
		id := res.Details.SessionID
		defer sc.Process(testCtx(t), &ProcessRequest{Action: "remove", SessionID: id})
		poll := agentProcess(t, sc, map[string]any{"action": "poll", "sessionId": id, "idleMs": 3000, "timeout": 30000})
		assert.Equal(t, "part one\npart two\n\nProcess still running.", poll.Text())
	})
	t.Run("wait with idleMs ends with the idle condition", func(t *testing.T) {
		t.Parallel()
		res := callTool(t, sc, ToolExec, map[string]any{"command": "sleep 0.3; printf 'a\\n'; sleep 0.2; printf 'b\\n'; sleep 30", "background": true})
		id := res.Details.SessionID
		defer sc.Process(testCtx(t), &ProcessRequest{Action: "remove", SessionID: id})
		w := agentProcess(t, sc, map[string]any{"action": "wait", "sessionId": id, "idleMs": 3000, "timeout": 30000})
		assert.Equal(t, "idle", w.Details.Condition)
		assert.Equal(t, "Output has been quiet for 3000 ms.\n\na\nb\n\nProcess still running.", w.Text())
	})
	t.Run("an exit ends an idle wait", func(t *testing.T) {
		t.Parallel()
		res := callTool(t, sc, ToolExec, map[string]any{"command": "sleep 0.3; printf 'bye\\n'; exit 3", "background": true})
		id := res.Details.SessionID
		w := agentProcess(t, sc, map[string]any{"action": "poll", "sessionId": id, "idleMs": 20000, "timeout": 30000})
		assert.Equal(t, "bye\n\nProcess exited with code 3.", w.Text())
	})
	t.Run("without new output poll waits no longer than its timeout", func(t *testing.T) {
		t.Parallel()
		res := callTool(t, sc, ToolExec, map[string]any{"command": "sleep 30", "background": true})
		id := res.Details.SessionID
		defer sc.Process(testCtx(t), &ProcessRequest{Action: "remove", SessionID: id})
		start := time.Now()
		poll := agentProcess(t, sc, map[string]any{"action": "poll", "sessionId": id, "idleMs": 100, "timeout": 300})
		assert.Equal(t, "(no new output)\n\nProcess still running.", poll.Text())
		assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	})
}

func TestWaitingForInput(t *testing.T) {
	t.Parallel()
	sc := newTestRegistry(t, Config{}).Scope("agent")
	start := func(t *testing.T, command, stdin string) string {
		res := callTool(t, sc, ToolExec, map[string]any{"command": command, "background": true, "stdin": stdin})
		require.Equal(t, StatusRunning, res.Details.Status, res.Text())
		id := res.Details.SessionID
		t.Cleanup(func() { _, _ = sc.Process(testCtx(t), &ProcessRequest{Action: "remove", SessionID: id}) }) // Best effort.
		return id
	}
	t.Run("a prompt without a newline on an open stdin is flagged, and answered", func(t *testing.T) {
		t.Parallel()
		id := start(t, `printf 'Continue? [y/N] '; read answer; echo "got $answer"`, "pipe")
		poll := agentProcess(t, sc, map[string]any{"action": "poll", "sessionId": id, "idleMs": 300, "timeout": 30000})
		assert.Equal(t, "Continue? [y/N] \n(waiting for input?)\n\nProcess still running.", poll.Text())
		again := agentProcess(t, sc, map[string]any{"action": "poll", "sessionId": id, "idleMs": 300, "timeout": 0})
		assert.Equal(t, "(no new output)\n(waiting for input?)\n\nProcess still running.", again.Text(), "still waiting")
		agentProcess(t, sc, map[string]any{"action": "write", "sessionId": id, "data": "y\n"})
		w := agentProcess(t, sc, map[string]any{"action": "wait", "sessionId": id, "timeout": 30000})
		assert.Equal(t, "The process ended.\n\ngot y\n\nProcess exited with code 0.", w.Text())
	})
	t.Run("a closed stdin is not flagged", func(t *testing.T) {
		t.Parallel()
		id := start(t, `printf 'no newline'; sleep 30`, "closed")
		poll := agentProcess(t, sc, map[string]any{"action": "poll", "sessionId": id, "idleMs": 300, "timeout": 30000})
		assert.Equal(t, "no newline\n\nProcess still running.", poll.Text())
	})
	t.Run("a finished line is not flagged", func(t *testing.T) {
		t.Parallel()
		id := start(t, `printf 'a line\n'; sleep 30`, "pipe")
		poll := agentProcess(t, sc, map[string]any{"action": "poll", "sessionId": id, "idleMs": 300, "timeout": 30000})
		assert.Equal(t, "a line\n\nProcess still running.", poll.Text())
	})
	t.Run("output still arriving is not flagged", func(t *testing.T) {
		t.Parallel()
		id := start(t, `printf 'loading'; sleep 30`, "pipe")
		// No idleMs: poll returns at the first bytes, before 20 s of quiet.
		poll := agentProcess(t, sc, map[string]any{"action": "poll", "sessionId": id, "timeout": 30000})
		require.Equal(t, "loading\n\nProcess still running.", poll.Text())
		poll = agentProcess(t, sc, map[string]any{"action": "poll", "sessionId": id, "idleMs": 20000, "timeout": 0})
		assert.NotContains(t, poll.Text(), "waiting for input")
	})
}
