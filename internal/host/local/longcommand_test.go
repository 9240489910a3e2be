//go:build linux

package local

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bgexec/bgexec/internal/host"
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

// shells are the shells the long-command tests run under: sh always,
// bash where it is installed (CI installs it).
func shells(t *testing.T) []string {
	t.Helper()
	out := []string{"sh"}
	if _, err := exec.LookPath("bash"); err == nil {
		out = append(out, "bash")
	} else if os.Getenv("CI") == "true" {
		t.Fatal("bash is needed under CI")
	}
	return out
}

// A command handed over as a script on fd 3 behaves as the same command
// given with -c.
func TestLongCommandsBehaveAsWithDashC(t *testing.T) {
	t.Parallel()
	for _, shell := range shells(t) {
		h := newHost(t, Options{Shell: shell, Containment: ContainmentOff})
		for _, c := range []struct{ name, tail string }{
			{"$0 and the positional parameters", `echo "$0 $#"`},
			{"exit ends the shell with its status", `exit 7; echo unreachable`},
			{"set -e ends the shell at a failure", `set -e; false; echo unreachable`},
			{"the exit status is the last command's", `sh -c 'exit 5'`},
			{"a missing command is 127", `no-such-command-bgexec`},
			{"the line number is the command's", `echo "line $LINENO"`},
		} {
			t.Run(shell+": "+c.name, func(t *testing.T) {
				short, _ := run(t, h, &host.Spec{Command: c.tail})
				long, _ := run(t, h, &host.Spec{Command: padded(t, MaxArgCommand+100, c.tail)})
				assert.Equal(t, short.ws, long.ws)
				if c.tail != `no-such-command-bgexec` {
					// The shell's messages name /dev/fd/3 instead.
					assert.Equal(t, short.out, long.out)
				}
			})
		}
	}
}

// Neither the script nor anything else of the host's reaches a long
// command's processes, on pipes or a terminal, and the host closes its
// copy of the script after the start. Not parallel: it counts this
// process's descriptors.
func TestLongCommandsLeakNoDescriptor(t *testing.T) {
	const list = `ls -l /proc/self/fd | sed -n 's/.* \([0-9]*\) -> .*/\1/p' | tr '\n' ' '; echo; ls -l /proc/self/fd`
	for _, shell := range shells(t) {
		h := newHost(t, Options{Shell: shell, Containment: ContainmentOff})
		short, _ := run(t, h, &host.Spec{Command: list}) // the host's own descriptors are open now
		want, _, _ := strings.Cut(short.out, "\n")
		require.Equal(t, "0 1 2 3 ", want, "stdin, stdout, stderr and ls's own directory")
		fds := openFDs(t)
		for _, pty := range []bool{false, true} {
			long, _ := run(t, h, &host.Spec{Command: padded(t, 1<<20, list), PTY: pty, Cols: 200, Rows: 50})
			require.True(t, long.ws.Exited() && long.ws.ExitStatus() == 0, long.out)
			got, _, _ := strings.Cut(long.out, "\n")
			assert.Equal(t, want, strings.TrimSuffix(got, "\r"), "%s, pty %v: the command's processes get a short command's descriptors", shell, pty)
			assert.NotContains(t, long.out, "memfd")
		}
		assert.Equal(t, fds, openFDs(t), "%s: the host closed the script", shell)
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}
