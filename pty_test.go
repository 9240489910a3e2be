//go:build linux

package bgexec

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawHexDump is a PTY command that puts its terminal in raw mode without
// echo, prints "ready", reads exactly n bytes and prints them in hex. Reading
// a known count with head lets od see EOF and flush, so the dump is complete
// when the session ends.
func rawHexDump(n int) string {
	return rawHexDumpAfter(`printf 'ready\n'`, n)
}

// rawHexDumpAfter is rawHexDump with announce run instead of printing "ready".
func rawHexDumpAfter(announce string, n int) string {
	return fmt.Sprintf("stty raw -echo; %s; head -c %d | od -An -tx1 -v", announce, n)
}

// odBytes is the hex of one `od -An -tx1` line, at the end of an output line.
var odBytes = regexp.MustCompile(`( [0-9a-f]{2})+$`)

// dumpedHex waits for a rawHexDump session to end and returns what it read,
// as hex digits without spaces. Text that is not od output (the announce
// line, or the echo of input that arrived before raw mode was on, which
// ends without a newline) is skipped.
func dumpedHex(t *testing.T, sc *Scope, id string) string {
	t.Helper()
	res := waitExit(t, sc, id)
	require.NotNil(t, res.Details.ExitCode, res.Text())
	require.Equal(t, 0, *res.Details.ExitCode, res.Text())
	log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0)})
	var b strings.Builder
	for _, line := range strings.Split(log.Text(), "\n") {
		b.WriteString(strings.ReplaceAll(odBytes.FindString(line), " ", ""))
	}
	return b.String()
}

// startPTY starts command in the background under a PTY.
func startPTY(t *testing.T, sc *Scope, command string) string {
	t.Helper()
	return startBackground(t, sc, &ExecRequest{Command: command, PTY: true})
}

// startRawHexDump starts rawHexDump(n) and waits until the child is in raw mode.
func startRawHexDump(t *testing.T, sc *Scope, n int) string {
	t.Helper()
	id := startPTY(t, sc, rawHexDump(n))
	waitFor(t, sc, id, `^ready$`)
	return id
}

// ptyLines splits PTY output, whose lines end in CRLF, into lines.
func ptyLines(s string) []string {
	return strings.Split(strings.ReplaceAll(strings.TrimSpace(s), "\r\n", "\n"), "\n")
}

func TestPTYTerminal(t *testing.T) {
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	const probe = `tty; stty size; printf '[%s]\n' "$TERM"`

	t.Run("the child has a controlling terminal of 120x30 and a default TERM", func(t *testing.T) {
		skipInSandboxSuite(t, "bwrap shows the terminal inside as /dev/console")
		t.Setenv("TERM", "")
		res := mustExec(t, sc, &ExecRequest{Command: probe, PTY: true})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		lines := ptyLines(res.Text())
		require.Len(t, lines, 3, res.Text())
		assert.Regexp(t, `^/dev/pts/\d+$`, lines[0])
		assert.Equal(t, "30 120", lines[1])
		assert.Equal(t, "[xterm-256color]", lines[2])
	})

	t.Run("an unset TERM also gets the default", func(t *testing.T) {
		t.Setenv("TERM", "")
		require.NoError(t, os.Unsetenv("TERM"))
		res := mustExec(t, sc, &ExecRequest{Command: probe, PTY: true})
		assert.Equal(t, "[xterm-256color]", ptyLines(res.Text())[2])
	})

	t.Run("a TERM in the environment is inherited", func(t *testing.T) {
		t.Setenv("TERM", "vt100")
		res := mustExec(t, sc, &ExecRequest{Command: probe, PTY: true})
		assert.Equal(t, "[vt100]", ptyLines(res.Text())[2])
	})

	t.Run("a TERM passed in env wins over the default", func(t *testing.T) {
		t.Setenv("TERM", "")
		res := mustExec(t, sc, &ExecRequest{Command: probe, PTY: true, Env: map[string]string{"TERM": "dumb"}})
		assert.Equal(t, "[dumb]", ptyLines(res.Text())[2])
	})

	t.Run("a pipe child gets no default TERM and no terminal", func(t *testing.T) {
		t.Setenv("TERM", "")
		res := mustExec(t, sc, &ExecRequest{Command: `tty; printf '[%s]\n' "$TERM"`})
		assert.Equal(t, "not a tty\n[]", res.Text())
	})

	t.Run("the host's COLUMNS and LINES do not reach a PTY child", func(t *testing.T) {
		t.Setenv("COLUMNS", "80")
		t.Setenv("LINES", "24")
		const sizes = `printf '%s %s\n' "${COLUMNS-unset}" "${LINES-unset}"; python3 -c 'import shutil; print(*shutil.get_terminal_size())'`
		needTool(t, "python3")
		res := mustExec(t, sc, &ExecRequest{Command: sizes, PTY: true})
		// python3 takes COLUMNS and LINES over the terminal's size.
		assert.Equal(t, []string{"unset unset", "120 30"}, ptyLines(res.Text()))
		res = mustExec(t, sc, &ExecRequest{Command: sizes, PTY: true, Env: map[string]string{"COLUMNS": "100"}})
		assert.Equal(t, []string{"100 unset", "100 30"}, ptyLines(res.Text()), "a per-call env may set them")
		res = mustExec(t, sc, &ExecRequest{Command: `printf '%s %s\n' "${COLUMNS-unset}" "${LINES-unset}"`})
		assert.Equal(t, "80 24", res.Text(), "a pipe child inherits them")
	})

	t.Run("stdout and stderr are one stream in order", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "echo one; echo two >&2; echo three", PTY: true})
		assert.Equal(t, []string{"one", "two", "three"}, ptyLines(res.Text()))
	})
}

func TestPTYSendKeys(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{KillGrace: 200 * time.Millisecond})
	sc := reg.Scope("a")

	t.Run("the contract's worked example arrives byte for byte", func(t *testing.T) {
		id := startRawHexDump(t, sc, 16)
		res := mustProcess(t, sc, &ProcessRequest{
			Action: "send-keys", SessionID: id,
			Literal: "你好😀", Hex: []string{"c3", "0xa9", "00", "FF"}, Keys: []string{"C-c", "Enter"},
		})
		assert.Equal(t, "Sent 16 bytes to session "+id+".", res.Text())
		assert.Equal(t, StatusRunning, res.Details.Status)
		assert.Equal(t, "e4bda0e5a5bdf09f9880c3a900ff030d", dumpedHex(t, sc, id))
	})

	t.Run("invalid hex entries are skipped with a warning", func(t *testing.T) {
		id := startRawHexDump(t, sc, 2)
		res := mustProcess(t, sc, &ProcessRequest{Action: "send-keys", SessionID: id, Hex: []string{"41", "zz", "0x123"}, Keys: []string{"Tab"}})
		assert.Equal(t, "Sent 2 bytes to session "+id+".\nWarnings:\n- Invalid hex byte: zz\n- Invalid hex byte: 0x123", res.Text())
		assert.Equal(t, "4109", dumpedHex(t, sc, id))
	})

	t.Run("submit sends one carriage return", func(t *testing.T) {
		id := startRawHexDump(t, sc, 1)
		res := mustProcess(t, sc, &ProcessRequest{Action: "submit", SessionID: id})
		assert.Equal(t, "Submitted session "+id+" (sent CR).", res.Text())
		assert.Equal(t, "0d", dumpedHex(t, sc, id))
	})
}

func TestPTYPaste(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{KillGrace: 200 * time.Millisecond})
	sc := reg.Scope("a")

	t.Run("a paste is bracketed by default", func(t *testing.T) {
		id := startRawHexDump(t, sc, 6+12+6)
		res := mustProcess(t, sc, &ProcessRequest{Action: "paste", SessionID: id, Text: "line1\nline2\n"})
		assert.Equal(t, "Pasted 12 chars to session "+id+".", res.Text())
		assert.Equal(t, "1b5b3230307e"+"6c696e65310a6c696e65320a"+"1b5b3230317e", dumpedHex(t, sc, id))
	})

	t.Run("bracketed:false pastes the raw text and counts characters, not bytes", func(t *testing.T) {
		id := startRawHexDump(t, sc, 7)
		res := mustProcess(t, sc, &ProcessRequest{Action: "paste", SessionID: id, Text: "héllo\n", Bracketed: ptr(false)})
		assert.Equal(t, "Pasted 6 chars to session "+id+".", res.Text())
		assert.Equal(t, "68c3a96c6c6f0a", dumpedHex(t, sc, id))
	})
}

func TestPTYCursorPositionQuery(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{KillGrace: 200 * time.Millisecond})
	sc := reg.Scope("a")
	// The child prints "ready" (raw mode: no CR LF translation), so the
	// cursor is at row 1, column 6 when it asks.
	for _, q := range []struct{ query, reply string }{
		{`\033[6n`, "\x1b[1;6R"},
		{`\033[?6n`, "\x1b[?1;6R"},
	} {
		t.Run("the query "+strings.ReplaceAll(q.query, `\033`, "ESC")+" is answered with the real cursor position and removed from the output", func(t *testing.T) {
			// The child asks only after raw mode is on, so the answer
			// reaches it unchanged and is not echoed.
			id := startPTY(t, sc, rawHexDumpAfter(`printf 'ready`+q.query+`\n'`, len(q.reply)))
			assert.Equal(t, fmt.Sprintf("%x", q.reply), dumpedHex(t, sc, id))
			log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id})
			assert.True(t, strings.HasPrefix(log.Text(), "ready\n"), log.Text())
			assert.NotContains(t, log.Text(), "\x1b")
			assert.NotContains(t, log.Text(), "6n")
			assert.NotContains(t, log.Text(), "6R")
		})
	}
	t.Run("the answer follows the cursor", func(t *testing.T) {
		id := startPTY(t, sc, rawHexDumpAfter(`printf 'ready\033[12;34H\033[6n\n'`, 8))
		assert.Equal(t, fmt.Sprintf("%x", "\x1b[12;34R"), dumpedHex(t, sc, id))
	})
}

func TestPTYCursorKeyMode(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{KillGrace: 200 * time.Millisecond})
	sc := reg.Scope("a")

	t.Run("an unmodified arrow fails before the first output and a modified one is sent", func(t *testing.T) {
		// Prints nothing until it has read its input.
		id := startPTY(t, sc, "stty raw -echo; head -c 6 | od -An -tx1 -v")
		for _, key := range []string{"Up", "down", "Left", "Right", "Home", "End"} {
			res := mustProcess(t, sc, &ProcessRequest{Action: "send-keys", SessionID: id, Keys: []string{"a", key}})
			assert.Equal(t, StatusFailed, res.Details.Status, key)
			assert.Equal(t, "Session "+id+" cursor key mode is not known yet. Poll or log until startup output appears, then retry send-keys.", res.Text(), key)
		}
		res := mustProcess(t, sc, &ProcessRequest{Action: "send-keys", SessionID: id, Keys: []string{"M-Up"}})
		assert.Equal(t, "Sent 6 bytes to session "+id+".", res.Text())
		// Nothing of the refused calls was sent: the child read M-Up first.
		assert.Equal(t, "1b5b313b3341", dumpedHex(t, sc, id))
	})

	cases := []struct {
		name     string
		announce string
		want     string
	}{
		{"after plain output Up is sent in normal mode", `printf 'ready\n'`, "1b5b41"},
		{"after ESC[?1h Up is sent in application mode", `printf '\033[?1hready\n'`, "1b4f41"},
		{"after ESC[?1h then ESC[?1l Up is sent in normal mode again", `printf '\033[?1h\033[?1lready\n'`, "1b5b41"},
		{"application mode set in a separate write still applies", `printf '\033[?1h'; printf 'ready\n'`, "1b4f41"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := startPTY(t, sc, rawHexDumpAfter(c.announce, 3))
			waitFor(t, sc, id, `^ready$`)
			res := mustProcess(t, sc, &ProcessRequest{Action: "send-keys", SessionID: id, Keys: []string{"Up"}})
			assert.Equal(t, "Sent 3 bytes to session "+id+".", res.Text())
			assert.Equal(t, c.want, dumpedHex(t, sc, id))
		})
	}
}

func TestPTYWriteEOF(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{KillGrace: 200 * time.Millisecond})
	sc := reg.Scope("a")

	t.Run("write with eof ends cat on a terminal with EOT", func(t *testing.T) {
		id := startPTY(t, sc, "cat; echo cat-ended")
		res := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "hello\n", EOF: true})
		assert.Equal(t, "Wrote 6 bytes to session "+id+" (stdin closed).", res.Text())
		end := waitExit(t, sc, id)
		require.NotNil(t, end.Details.ExitCode, end.Text())
		assert.Equal(t, 0, *end.Details.ExitCode)
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id})
		// The terminal echoes the line, then cat prints it.
		assert.Equal(t, "hello\nhello\ncat-ended", log.Text())
	})

	t.Run("eof after an unfinished line still ends cat", func(t *testing.T) {
		id := startPTY(t, sc, "cat; echo; echo cat-ended")
		res := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "abc", EOF: true})
		assert.Equal(t, "Wrote 3 bytes to session "+id+" (stdin closed).", res.Text())
		waitFor(t, sc, id, `^cat-ended$`)
		end := waitExit(t, sc, id)
		require.NotNil(t, end.Details.ExitCode, end.Text())
	})

	t.Run("eof alone ends cat", func(t *testing.T) {
		id := startPTY(t, sc, "cat; echo cat-ended")
		res := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, EOF: true})
		assert.Equal(t, "Wrote 0 bytes to session "+id+" (stdin closed).", res.Text())
		waitFor(t, sc, id, `^cat-ended$`)
		waitExit(t, sc, id)
	})
}

func TestPTYResize(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{KillGrace: 200 * time.Millisecond})
	sc := reg.Scope("a")

	t.Run("the child gets one SIGWINCH per resize and sees the new size", func(t *testing.T) {
		// The trap only counts: a shell does not run a trap again for a
		// signal that arrives while that trap runs, so a trap that forks
		// stty could miss the next resize. The loop reports outside the trap.
		id := startPTY(t, sc, `n=0; trap 'n=$((n+1))' WINCH; echo ready; seen=0; `+
			`while :; do sleep 0.05; if [ "$n" != "$seen" ]; then seen=$n; echo "winch $n $(stty size)"; fi; done`)
		waitFor(t, sc, id, `^ready$`)
		for i, size := range []struct{ cols, rows int }{{100, 40}, {1000, 1}, {1, 1000}} {
			res := mustProcess(t, sc, &ProcessRequest{Action: "resize", SessionID: id, Cols: size.cols, Rows: size.rows})
			assert.Equal(t, fmt.Sprintf("Resized session %s to %dx%d.", id, size.cols, size.rows), res.Text())
			assert.Equal(t, StatusRunning, res.Details.Status)
			waitFor(t, sc, id, fmt.Sprintf(`^winch %d %d %d$`, i+1, size.rows, size.cols))
		}
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("sizes outside 1 to 1000 are refused", func(t *testing.T) {
		id := startPTY(t, sc, "echo ready; exec sleep 60")
		waitFor(t, sc, id, `^ready$`)
		for _, size := range []struct{ cols, rows int }{{0, 30}, {1001, 30}, {120, 0}, {120, 1001}, {-1, 30}} {
			res := mustProcess(t, sc, &ProcessRequest{Action: "resize", SessionID: id, Cols: size.cols, Rows: size.rows})
			assert.Equal(t, StatusFailed, res.Details.Status)
			assert.Equal(t, fmt.Sprintf("Invalid size %dx%d: pass cols and rows from 1 to 1000.", size.cols, size.rows), res.Text())
		}
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("a pipe session cannot be resized", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: "echo ready; exec sleep 60", Stdin: "pipe"})
		waitFor(t, sc, id, `^ready$`)
		res := mustProcess(t, sc, &ProcessRequest{Action: "resize", SessionID: id, Cols: 100, Rows: 40})
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.Equal(t, "Session "+id+" has no terminal; resize needs a session started with pty:true.", res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
}

func TestPTYInputFailures(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{KillGrace: 200 * time.Millisecond})
	sc := reg.Scope("a")

	t.Run("input to a finished session finds no active session", func(t *testing.T) {
		id := startPTY(t, sc, "echo bye")
		waitExit(t, sc, id)
		for _, req := range []ProcessRequest{
			{Action: "write", Data: "x"},
			{Action: "write", EOF: true},
			{Action: "send-keys", Keys: []string{"Enter"}},
			{Action: "submit"},
			{Action: "paste", Text: "x"},
			{Action: "resize", Cols: 80, Rows: 24},
		} {
			req.SessionID = id
			res := mustProcess(t, sc, &req)
			assert.Equal(t, StatusFailed, res.Details.Status, req.Action)
			assert.Equal(t, "No active session found for "+id, res.Text(), req.Action)
		}
	})

	t.Run("empty send-keys and an empty unbracketed paste are refused", func(t *testing.T) {
		id := startPTY(t, sc, "echo ready; exec sleep 60")
		waitFor(t, sc, id, `^ready$`)
		res := mustProcess(t, sc, &ProcessRequest{Action: "send-keys", SessionID: id})
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.Equal(t, "No key data provided.", res.Text())
		res = mustProcess(t, sc, &ProcessRequest{Action: "send-keys", SessionID: id, Keys: []string{"", ""}, Hex: []string{"zz"}})
		assert.Equal(t, "No key data provided.\nWarnings:\n- Invalid hex byte: zz", res.Text())
		res = mustProcess(t, sc, &ProcessRequest{Action: "paste", SessionID: id, Bracketed: ptr(false)})
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.Equal(t, "No paste text provided.", res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("terminal input to a pipe session without stdin is refused", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: "echo ready; exec sleep 60"})
		waitFor(t, sc, id, `^ready$`)
		for _, req := range []ProcessRequest{
			{Action: "send-keys", Keys: []string{"Up"}},
			{Action: "submit"},
			{Action: "paste", Text: "x"},
			{Action: "write", Data: "x"},
		} {
			req.SessionID = id
			res := mustProcess(t, sc, &req)
			assert.Equal(t, StatusFailed, res.Details.Status, req.Action)
			assert.Equal(t, "Session "+id+" stdin is not writable.", res.Text(), req.Action)
		}
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
}

func TestPTYOutput(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")

	t.Run("colour codes and titles are removed", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: `printf '\033[31mred\033[0m \033]0;title\007plain\n'`, PTY: true})
		assert.Equal(t, "red plain", res.Text())
		assert.Equal(t, "red plain", res.Details.Aggregated, "the output part of the text")
	})

	t.Run("the last output before exit is never lost", func(t *testing.T) {
		const n = 3000
		for i := range 20 {
			res := mustExec(t, sc, &ExecRequest{Command: fmt.Sprintf(`printf 'line %%d\n' $(seq 0 %d)`, n-1), PTY: true})
			require.Equal(t, StatusCompleted, res.Details.Status, "run %d", i)
			lines := ptyLines(res.Text())
			require.Len(t, lines, n, "run %d", i)
			assert.Equal(t, fmt.Sprintf("line %d", n-1), lines[n-1], "run %d", i)
		}
	})
}

func TestPTYReleasesEverything(t *testing.T) {
	// The first PTY session may create descriptors the runtime keeps (the
	// poller), so count after one has run in a registry closed again.
	warm, err := NewRegistry(sandboxed(Config{}))
	require.NoError(t, err)
	mustExec(t, warm.Scope("a"), &ExecRequest{Command: "true", PTY: true})
	require.NoError(t, warm.Close(testCtx(t)))

	fds := openFDs(t)
	reg, err := NewRegistry(sandboxed(Config{KillGrace: 200 * time.Millisecond}))
	require.NoError(t, err)
	sc := reg.Scope("a")
	finished := startPTY(t, sc, "echo done")
	waitExit(t, sc, finished)
	var running []string
	for range 3 {
		id := startPTY(t, sc, "echo ready; sleep 300")
		waitFor(t, sc, id, `^ready$`)
		running = append(running, id)
	}
	list := mustProcess(t, sc, &ProcessRequest{Action: "list"})
	require.NoError(t, reg.Close(testCtx(t)))

	for _, id := range running {
		pid := sessionPid(list, id)
		require.NotZero(t, pid)
		assert.True(t, pidGone(t, pid), "session %s (pid %d) outlived Close", id, pid)
	}
	assert.Empty(t, children(t), "no child process (or zombie) is left")
	assert.Equal(t, fds, openFDs(t), "no descriptor leaks")
}

func TestPTYCursorQueryFlood(t *testing.T) {
	t.Parallel()
	// If ingest waited for the child to take each answer, this would
	// deadlock: the reader blocked writing answers to a child blocked
	// writing output to it, and Registry.Close would never return.
	reg := newTestRegistry(t, Config{KillGrace: 200 * time.Millisecond})
	sc := reg.Scope("a")

	t.Run("a child that queries the cursor without reading its input does not stall the output", func(t *testing.T) {
		// 2000 answers (16 KiB: ESC[30;1R each) overflow the terminal's
		// 4 KiB input buffer four times. (Not more: every line also scrolls
		// the emulated screen, which the race detector makes slow enough to
		// pass the wait's deadline on a loaded machine.)
		id := startPTY(t, sc, `stty raw -echo; yes "$(printf '\033[6n')" | head -n 2000 >/dev/tty; echo done`)
		waitFor(t, sc, id, `^done$`)
		waitExit(t, sc, id)
	})
}

func TestPTYCanonicalLineLimit(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{KillGrace: 200 * time.Millisecond})
	sc := reg.Scope("a")

	t.Run("an over-long line in canonical mode reports what the kernel kept", func(t *testing.T) {
		id := startPTY(t, sc, "stty -echo; echo ready; wc -c")
		waitFor(t, sc, id, `^ready$`)
		res := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: strings.Repeat("x", 5000) + "\nshort\n", EOF: true})
		assert.Equal(t, "Wrote 4102 bytes to session "+id+" (stdin closed). The terminal is in canonical (line) mode, which keeps at most 4095 bytes per line: the kernel dropped 905 bytes of over-long lines. Send shorter lines, or use a program that switches the terminal to raw mode.", res.Text())
		end := waitExit(t, sc, id)
		assert.Contains(t, end.Text(), "4102", "wc counts exactly what was reported")
	})

	t.Run("raw mode keeps every byte", func(t *testing.T) {
		id := startPTY(t, sc, "stty raw -echo; echo ready; head -c 6000 | wc -c")
		waitFor(t, sc, id, `^ready`)
		res := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: strings.Repeat("y", 6000)})
		assert.Equal(t, "Wrote 6000 bytes to session "+id+".", res.Text())
		end := waitExit(t, sc, id)
		assert.Contains(t, end.Text(), "6000")
	})
}
