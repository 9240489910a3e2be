package local

import (
	"io"
	"os"
	"strings"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/session"
)

// spawnSpec is everything needed to start one command.
type spawnSpec struct {
	path      string
	args      []string
	dir       string
	env       []string
	script    string // non-empty: the command, passed as a script on fd 3 (see shellArgs)
	stdinPipe bool   // pipe mode: keep stdin open for write/eof
	pty       bool
	cols      uint16
	rows      uint16
	cgroup    *contain.Cgroup // nil: process group only
	pdeathsig bool            // SIGKILL the child when the forking thread exits
	stateFile *os.File        // non-nil: the child's fd 4, for its shell state
	// wrap, when set, runs the command inside a wrapper (see
	// Host.StartWrapped).
	wrap *Wrap
}

// spawned is a started command and the descriptors the session owns.
type spawned struct {
	child   session.Process
	outputs []io.Reader // stdout, stderr; or the PTY master alone (*os.File for real children)
	stdin   io.Writer   // nil when the child reads EOF; the PTY master in PTY mode
	ttyName string      // the PTY slave's path, "" for pipes
}

// MaxArgCommand is the longest command passed to the shell as its -c
// argument, in bytes. Linux refuses to exec with one argument over
// MAX_ARG_STRLEN (128 KiB) or with argv and environment together over
// ARG_MAX (a quarter of the stack limit, often 2 MiB). A longer command
// reaches the shell as a script on a descriptor instead.
const MaxArgCommand = 64 << 10

// scriptFromFD is the -c argument that runs a script handed over as fd 3.
//
// Sourcing it from -c, rather than running [shell, "/dev/fd/3"], keeps
// what a -c command sees: $0 is still the shell's name, there are no
// positional parameters, `exit` and `set -e` end the shell, and the exit
// status is the script's. What differs: `return` outside a function ends
// the script (bash would refuse it and go on), and some of the shell's own
// messages name the script (dash: "dash: 1: /dev/fd/3: x: not found").
// /dev/fd must exist, as it does wherever /proc is mounted.
const scriptFromFD = ". /dev/fd/3"

// scriptPrefix closes fd 3 before the command's first word runs, so the
// processes it starts do not inherit the script. The shell has opened
// /dev/fd/3 by then, which on Linux opens the memfd anew, at offset 0;
// dash reads on through a close-on-exec descriptor of its own, bash has
// read the script whole. The prefix sits on the command's first line, so
// $LINENO and line numbers in messages stay right; only bash's syntax
// error message, which quotes the line, shows it.
const scriptPrefix = "exec 3<&-; "

// shellArgs returns the shell's argv for command, and the script to hand
// over on fd 3 when command is too long for an argument.
func shellArgs(shell, command string) (args []string, script string) {
	if len(command) <= MaxArgCommand {
		return []string{shell, "-c", command}, ""
	}
	return []string{shell, "-c", scriptFromFD}, scriptPrefix + command
}

// withDefaults returns environ with defaults ("K=V") set over the
// inherited values of the same keys; a per-call env merged afterwards
// still wins.
func withDefaults(environ, defaults []string) []string {
	if len(defaults) == 0 {
		return environ
	}
	keys := make(map[string]bool, len(defaults))
	for _, d := range defaults {
		k, _, _ := strings.Cut(d, "=")
		keys[k] = true
	}
	out := make([]string, 0, len(environ)+len(defaults))
	for _, e := range environ {
		if k, _, _ := strings.Cut(e, "="); !keys[k] {
			out = append(out, e)
		}
	}
	return append(out, defaults...)
}

// withoutSizeVars drops COLUMNS and LINES from an inherited environment:
// in a PTY session they would override the terminal's own size (programs
// prefer them to the size the terminal reports), and the host's values
// describe the host's terminal, not the session's. A per-call env may
// still set them.
func withoutSizeVars(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, e := range environ {
		if !strings.HasPrefix(e, "COLUMNS=") && !strings.HasPrefix(e, "LINES=") {
			out = append(out, e)
		}
	}
	return out
}
