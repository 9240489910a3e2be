//go:build linux

package bgexec

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests drive terminal programs at think time 0: each step is one
// call, read once, with no retries and no sleeps between calls, as a model
// that answers at once would.

// step sends input with screen: true and returns the settled screen.
func step(t *testing.T, sc *Scope, id, action string, args map[string]any) *Result {
	t.Helper()
	a := map[string]any{"action": action, "sessionId": id, "screen": true, "idleMs": 300, "timeout": 10000}
	for k, v := range args {
		a[k] = v
	}
	return agentProcess(t, sc, a)
}

// firstScreen reads the screen once with idleMs 300.
func firstScreen(t *testing.T, sc *Scope, id string) *Result {
	t.Helper()
	return agentProcess(t, sc, map[string]any{"action": "screen", "sessionId": id, "idleMs": 300, "timeout": 15000})
}

func TestScreenSettlesAfterTheKeys(t *testing.T) {
	t.Parallel()
	t.Run("a program that starts late is waited for", func(t *testing.T) {
		t.Parallel()
		needTool(t, "vim")
		sc := newTestRegistry(t, Config{}).Scope("agent")
		id := startTUI(t, sc, "sleep 1.5; vim --clean -n")
		scr := firstScreen(t, sc, id)
		assert.Regexp(t, `(?m)^~$`, scr.Text(), "one screen call shows vim")
		assert.Equal(t, true, *scr.Details.AlternateScreen)
	})
	t.Run("a screen with nothing drawn says so", func(t *testing.T) {
		t.Parallel()
		sc := newTestRegistry(t, Config{}).Scope("agent")
		id := startTUI(t, sc, "sleep 30")
		scr := agentProcess(t, sc, map[string]any{"action": "screen", "sessionId": id, "timeout": 200})
		assert.Regexp(t, `^\(blank screen: no output yet after \d+ ms\)`, scr.Text())
	})
	t.Run("screen: true on a pipe session is refused before sending", func(t *testing.T) {
		t.Parallel()
		sc := newTestRegistry(t, Config{}).Scope("agent")
		res := callTool(t, sc, ToolExec, map[string]any{"command": "cat", "stdin": "pipe", "background": true})
		id := res.Details.SessionID
		w := callTool(t, sc, ToolProcess, map[string]any{"action": "write", "sessionId": id, "data": "x\n", "screen": true})
		require.True(t, w.IsError)
		assert.Contains(t, w.Text(), "has no terminal")
		log := agentProcess(t, sc, map[string]any{"action": "log", "sessionId": id})
		assert.Equal(t, "(no output yet)", log.Text(), "nothing was sent")
		agentProcess(t, sc, map[string]any{"action": "kill", "sessionId": id})
	})
}

func TestTUILessThinkTimeZero(t *testing.T) {
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

	assert.Regexp(t, `^number 1\n`, firstScreen(t, sc, id).Text())
	page := step(t, sc, id, "send-keys", map[string]any{"keys": []string{"Space"}})
	assert.Regexp(t, `(?m)^Sent 1 bytes to session \S+\.\n\nnumber 30\n`, page.Text(), "the page after Space")
	page = step(t, sc, id, "send-keys", map[string]any{"keys": []string{"PgDn"}})
	assert.Regexp(t, `\n\nnumber 59\n`, page.Text(), "the page after PgDn")
	found := step(t, sc, id, "send-keys", map[string]any{"literal": "/number 250$", "keys": []string{"Enter"}})
	assert.Regexp(t, `\n\nnumber 250\n`, found.Text(), "the search result at the top")
	step(t, sc, id, "send-keys", map[string]any{"keys": []string{"q"}})
	awaitExitByCall(t, sc, id)
}

func TestTUIVimThinkTimeZero(t *testing.T) {
	t.Parallel()
	needTool(t, "vim")
	sc := newTestRegistry(t, Config{}).Scope("agent")
	file := filepath.Join(t.TempDir(), "notes.txt")
	id := startTUI(t, sc, "vim --clean -n "+shellQuote(file))

	assert.Regexp(t, `(?m)^~$`, firstScreen(t, sc, id).Text())
	ins := step(t, sc, id, "send-keys", map[string]any{"keys": []string{"i"}})
	assert.Regexp(t, `(?m)^-- INSERT --`, ins.Text())
	two := step(t, sc, id, "paste", map[string]any{"text": "first line\nsecond line", "bracketed": false})
	assert.Regexp(t, `\n\nfirst line\nsecond line\n`, two.Text())
	step(t, sc, id, "send-keys", map[string]any{"keys": []string{"Escape"}, "literal": ""})
	w := step(t, sc, id, "send-keys", map[string]any{"literal": ":wq", "keys": []string{"Enter"}})
	assert.NotContains(t, w.Text(), "-- INSERT --")
	end := awaitExitByCall(t, sc, id)
	assert.NotContains(t, end.Text(), "first line", "the wait after :wq returns only what came after the last screen")
	assert.Less(t, len(end.Text()), 400, "no raw dump:\n%q", end.Text())
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "first line\nsecond line\n", string(got))
}

func TestWaitAfterAFloodReturnsABoundedTail(t *testing.T) {
	t.Parallel()
	for _, pty := range []bool{true, false} {
		t.Run(fmt.Sprintf("pty %v", pty), func(t *testing.T) {
			t.Parallel()
			sc := newTestRegistry(t, Config{}).Scope("agent")
			res := callTool(t, sc, ToolExec, map[string]any{"command": "seq 1 5000; echo READY; sleep 30", "pty": pty, "background": true})
			id := res.Details.SessionID
			w := agentProcess(t, sc, map[string]any{"action": "wait", "sessionId": id, "pattern": "^READY$", "timeout": 30000})
			require.Equal(t, "pattern", w.Details.Condition, w.Text())
			assert.Less(t, len(w.Text()), 2600, "a bounded tail, not the flood:\n%s", w.Text())
			assert.Contains(t, w.Text(), "Pattern matched: READY")
			assert.Contains(t, w.Text(), "\n4999\n5000\nREADY\n", "the end of the new output")
			m := regexp.MustCompile(`\[(\d+) earlier lines of new output not shown: process log offset (\d+) limit (\d+)\]`).FindStringSubmatch(w.Text())
			require.NotNil(t, m, w.Text())
			off, _ := strconv.Atoi(m[2])
			lim, _ := strconv.Atoi(m[3])
			log := agentProcess(t, sc, map[string]any{"action": "log", "sessionId": id, "offset": off, "limit": lim})
			lines := strings.Split(log.Text(), "\n")
			assert.Equal(t, "1", lines[0], "the log offset names the first line not shown")
			assert.Equal(t, "4981", lines[len(lines)-1], "and the limit the last")
			agentProcess(t, sc, map[string]any{"action": "kill", "sessionId": id})
		})
	}
}

// menuScript is a curses menu whose selection is shown only in reverse
// video; Enter prints the choice.
const menuScript = `
import curses
def main(w):
    items = ["apple", "banana", "cherry"]
    sel = 0
    while True:
        for i, it in enumerate(items):
            w.addstr(i + 1, 2, it, curses.A_REVERSE if i == sel else curses.A_NORMAL)
        w.addstr(5, 2, "Fruit menu", curses.A_BOLD | curses.A_UNDERLINE)
        w.move(1 + sel, 2)
        w.refresh()
        k = w.getch()
        if k == curses.KEY_DOWN:
            sel = min(sel + 1, len(items) - 1)
        elif k == curses.KEY_UP:
            sel = max(sel - 1, 0)
        elif k in (10, 13, curses.KEY_ENTER):
            return items[sel]
print("chose", curses.wrapper(main))
`

func TestScreenAttributes(t *testing.T) {
	t.Parallel()
	needTool(t, "python3")
	sc := newTestRegistry(t, Config{}).Scope("agent")
	script := filepath.Join(t.TempDir(), "menu.py")
	require.NoError(t, os.WriteFile(script, []byte(menuScript), 0o644))
	id := startTUI(t, sc, "python3 "+shellQuote(script))

	plain := firstScreen(t, sc, id)
	assert.Equal(t, "\n  apple\n  banana\n  cherry\n\n  Fruit menu\n[cursor row 2 col 3; alternate screen on]", plain.Text(),
		"without attributes the selection does not show; the last line gives the cursor")
	first := agentProcess(t, sc, map[string]any{"action": "screen", "sessionId": id, "attributes": true})
	assert.Equal(t, "\n  ⟦r⟧apple⟦/r⟧\n  banana\n  cherry\n\n  ⟦b⟧⟦u⟧Fruit menu⟦/u⟧⟦/b⟧\n[cursor row 2 col 3; alternate screen on]", first.Text())
	moved := step(t, sc, id, "send-keys", map[string]any{"keys": []string{"Down", "Down"}, "attributes": true})
	assert.Contains(t, moved.Text(), "\n  apple\n  banana\n  ⟦r⟧cherry⟦/r⟧\n", "the selection moved")
	assert.True(t, strings.HasSuffix(moved.Text(), "\n[cursor row 4 col 3; alternate screen on]"), moved.Text())
	agentProcess(t, sc, map[string]any{"action": "submit", "sessionId": id})
	end := awaitExitByCall(t, sc, id)
	assert.Contains(t, end.Text(), "chose cherry")
	after := agentProcess(t, sc, map[string]any{"action": "screen", "sessionId": id})
	assert.Regexp(t, `\n\[cursor row \d+ col \d+; alternate screen off\]$`, after.Text(), "the ended program's last screen ends with the cursor line too")
}

func TestIdleWaitsForTheAnswerToInput(t *testing.T) {
	t.Parallel()
	// The session printed "ready" before the input and nobody read it; a
	// poll or wait with idleMs right after the input must not take the
	// quiet since "ready" for the answer's.
	for _, action := range []string{"poll", "wait"} {
		t.Run(action+" returns the answer, not only the output from before", func(t *testing.T) {
			t.Parallel()
			answerer := `echo ready; while read l; do sleep 0.5; echo "got $l"; done`
			reg := newTestRegistry(t, Config{})
			sc := reg.Scope("agent")
			res := callTool(t, sc, ToolExec, map[string]any{"command": answerer, "stdin": "pipe", "background": true})
			id := res.Details.SessionID
			// "ready" must be in the session before the input, or it is
			// output that came after the input: under load the reader took
			// it in after the write. A snapshot reads it without taking it.
			require.Eventually(t, func() bool { return strings.Contains(sessionOf(reg, id).Snapshot(10).Tail, "ready") },
				10*time.Second, 10*time.Millisecond, "the program never printed ready")
			agentProcess(t, sc, map[string]any{"action": "write", "sessionId": id, "data": "x\n"})
			got := agentProcess(t, sc, map[string]any{"action": action, "sessionId": id, "idleMs": 200, "timeout": 10000})
			assert.Contains(t, got.Text(), "got x", got.Text())
			agentProcess(t, sc, map[string]any{"action": "kill", "sessionId": id})
		})
	}
}
