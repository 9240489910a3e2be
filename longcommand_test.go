//go:build linux

package bgexec

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// padded returns `: xxx…; tail` of exactly n bytes: a no-op command with a
// long argument, then tail.
func padded(t *testing.T, n int, tail string) string {
	t.Helper()
	head, sep := ": ", "; "
	pad := n - len(head) - len(sep) - len(tail)
	require.Positive(t, pad)
	return head + strings.Repeat("x", pad) + sep + tail
}

func TestCommandsOfAnyLength(t *testing.T) {
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")

	t.Run("a 10 MB command runs", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: padded(t, 10<<20, "echo ok")})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		assert.Equal(t, "ok", res.Text())
		assert.Equal(t, 0, *res.Details.ExitCode)
	})

	t.Run("a 10 MB command runs through Call, all of it", func(t *testing.T) {
		// A here-document of 10 MB: wc counts what reached the shell.
		line := strings.Repeat("y", 999) + "\n"
		body := strings.Repeat(line, 10<<10)
		args, err := json.Marshal(map[string]string{"command": "wc -c <<'EOF'\n" + body + "EOF\necho ok"})
		require.NoError(t, err)
		res, err := sc.Call(testCtx(t), ToolExec, args)
		require.NoError(t, err)
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text()[:min(len(res.Text()), 200)])
		assert.Equal(t, strconv.Itoa(len(body))+"\nok", res.Text())
		assert.Equal(t, 0, *res.Details.ExitCode)
	})

	// The shell's own argv says how the command was passed.
	argvBytes := `n=$(wc -c < /proc/$$/cmdline); echo "argv $n"`
	t.Run("a command of exactly the threshold is the -c argument", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: padded(t, maxArgCommand, argvBytes)})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		n, err := strconv.Atoi(strings.TrimPrefix(res.Text(), "argv "))
		require.NoError(t, err, res.Text())
		assert.Greater(t, n, maxArgCommand)
	})
	t.Run("one byte more is a script on fd 3", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: padded(t, maxArgCommand+1, argvBytes)})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		n, err := strconv.Atoi(strings.TrimPrefix(res.Text(), "argv "))
		require.NoError(t, err, res.Text())
		assert.Less(t, n, 100)
	})

	t.Run("under a PTY too", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: padded(t, 1<<20, "echo ok"), PTY: true})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		assert.Equal(t, "ok", res.Text())
	})

	t.Run("in the background, killed like any other", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: padded(t, 1<<20, "echo ready; sleep 30")})
		waitFor(t, sc, id, `^ready$`)
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		res := waitExit(t, sc, id)
		assert.Equal(t, ExitReasonKilled, res.Details.ExitReason)
	})
}

func TestLongCommandsBehaveAsWithDashC(t *testing.T) {
	for _, shell := range []string{"", "sh", "bash"} {
		reg := newTestRegistry(t, Config{Shell: shell})
		sc := reg.Scope("a")
		cases := []struct{ name, tail string }{
			{"$0 and the positional parameters", `echo "$0 $#"`},
			{"exit ends the shell with its status", `exit 7; echo unreachable`},
			{"set -e ends the shell at a failure", `set -e; false; echo unreachable`},
			{"the exit status is the last command's", `sh -c 'exit 5'`},
			{"a missing command is 127", `no-such-command-bgexec`},
			{"the line number is the command's", `echo "line $LINENO"`},
		}
		for _, c := range cases {
			label := shell
			if label == "" {
				label = "$SHELL"
			}
			t.Run(label+": "+c.name, func(t *testing.T) {
				short := mustExec(t, sc, &ExecRequest{Command: c.tail})
				long := mustExec(t, sc, &ExecRequest{Command: padded(t, maxArgCommand+100, c.tail)})
				assert.Equal(t, short.Details.Status, long.Details.Status)
				assert.Equal(t, short.Details.ExitCode, long.Details.ExitCode)
				if c.tail != `no-such-command-bgexec` {
					// The shell's messages name /dev/fd/3 instead.
					assert.Equal(t, short.Text(), long.Text())
				}
			})
		}
	}
}

func TestLongCommandsLeakNoDescriptor(t *testing.T) {
	const list = `ls -l /proc/self/fd | sed -n 's/.* \([0-9]*\) -> .*/\1/p' | tr '\n' ' '; echo; ls -l /proc/self/fd`
	for _, shell := range []string{"sh", "bash"} {
		reg := newTestRegistry(t, Config{Shell: shell})
		sc := reg.Scope("a")
		short := mustExec(t, sc, &ExecRequest{Command: list}) // the registry's own descriptors are open now
		want, _, _ := strings.Cut(short.Text(), "\n")
		require.Equal(t, "0 1 2 3 ", want, "stdin, stdout, stderr and ls's own directory")
		fds := openFDs(t)
		for _, pty := range []bool{false, true} {
			res := mustExec(t, sc, &ExecRequest{Command: padded(t, 1<<20, list), PTY: pty})
			require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
			got, _, _ := strings.Cut(res.Text(), "\n")
			assert.Equal(t, want, got, "%s, pty %v: the command's processes get a short command's descriptors", shell, pty)
			assert.NotContains(t, res.Text(), "memfd")
		}
		assert.Equal(t, fds, openFDs(t), "%s: the parent closed the script", shell)
	}
}
