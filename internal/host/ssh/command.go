package sshhost

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// nodeTagKey is the environment entry that marks every process of a
// remote session, so no signal, alive check or kill after a lost
// connection reaches a process that merely got the same pid or group id
// (see oursScript).
const nodeTagKey = "BGEXEC_SESSION"

// maxInlineNodeCommand is the longest encoded command sent inside the
// SSH exec request. OpenSSH takes packets up to 256 KiB; a longer command
// is uploaded to a private temporary file over a channel of its own and
// read by the shell from a descriptor, as on this machine.
const maxInlineNodeCommand = 32 << 10

// nodeWrapper is the sh script each remote session runs in: it decodes
// its arguments (shell, default, kept and requested workdir, command,
// mode, systemd unit, shell-state tag, environment), reports its pid,
// process group, workdir fallback, state file and working directory on
// the first line of stderr, and execs the shell, so the shell keeps the
// pid the SSH server made a session (and process group) leader. An
// environment argument without "=" is a name to unset (a kept shell
// state's unset). With a state tag other than "-", it opens a private
// temporary file named after the tag as fd 4 and writes the environment
// the shell starts with there (see nodeStatePrologue); the tools it runs
// for that are found with command -p, not on a kept PATH. It is one line
// without single quotes, backslash pairs or "!", so any login shell (sh,
// bash, zsh, fish, csh) passes it on unchanged.
const nodeWrapper = `d() { v=$(printf %bx "$1"); v=${v%x}; }; ` +
	`d "$1"; s=$v; [ -n "$s" ] || s=${SHELL:-sh}; case $s in *fish) s=sh;; esac; w=0; ` +
	`d "$2"; if [ -n "$v" ]; then cd -- "$v" 2>/dev/null || w=1; fi; ` +
	`d "$4"; r=$v; d "$3"; if [ -n "$v" ]; then cd -- "$v" 2>/dev/null || { [ -n "$r" ] || w=3; }; fi; ` +
	`if [ -n "$r" ]; then cd -- "$r" 2>/dev/null || w=2; fi; ` +
	`d "$5"; c=$v; m=$6; u=$7; k=$8; shift 8; for a in "$@"; do d "$a"; case $v in *=*) export "$v";; *) unset -v "$v" 2>/dev/null;; esac; done; ` +
	`f=-; if [ "$k" != - ]; then f=$(command -p mktemp "${TMPDIR:-/tmp}/bgexec-state-$k.XXXXXX" 2>/dev/null) || f=-; ` +
	`if [ "$f" != - ] && [ -n "$(printf %s "$f" | command -p tr -d A-Za-z0-9/._-)" ]; then command -p rm -f -- "$f"; f=-; fi; ` +
	`if [ "$f" != - ]; then exec 4>"$f"; { printf "\000bgexec-start\000"; command -p env -0; printf "\000bgexec-started\000"; } >&4 2>/dev/null; fi; fi; ` +
	`read -r _ _ _ _ g _ </proc/$$/stat 2>/dev/null || g=$$; ` +
	`printf "\037bgexec1 %s %s %s %s %s\n" "$$" "$g" "$w" "$f" "$(pwd)" >&2; ` +
	`if [ "$m" = f ]; then exec 3<"$c" || exit 126; rm -f -- "$c"; c=". /dev/fd/3"; fi; ` +
	`if [ "$u" != - ]; then exec systemd-run --user --scope --quiet --collect --unit="$u" -- "$s" -c "$c"; fi; ` +
	`exec "$s" -c "$c"`

// scriptPrefix closes fd 3 (the uploaded script the wrapper opened)
// before the command's first word runs, so the processes it starts do not
// inherit it; it sits on the command's first line, so $LINENO stays right.
const scriptPrefix = "exec 3<&-; "

// maxNodePreamble bounds the output taken before the wrapper's report.
const maxNodePreamble = 16 << 10

// nodeHeader starts the wrapper's report line.
const nodeHeader = "\x1fbgexec1 "

// encodeNodeArg quotes s as one shell word that the wrapper's d decodes:
// plain characters stay, every other byte becomes a printf %b octal escape.
func encodeNodeArg(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte(" _.,/:=+@%-", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\0%03o`, c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// nodeCommand is the exec request's command line. stateTag is "-" when
// no shell state is kept.
func nodeCommand(shell, defDir, stateDir, dir, cmd, mode, unit, stateTag string, env []string) string {
	var b strings.Builder
	b.WriteString("exec /bin/sh -c '" + nodeWrapper + "' bgexec")
	for _, a := range []string{shell, defDir, stateDir, dir, cmd} {
		b.WriteString(" " + encodeNodeArg(a))
	}
	b.WriteString(" " + mode + " " + unit + " " + stateTag)
	for _, e := range env {
		b.WriteString(" " + encodeNodeArg(e))
	}
	return b.String()
}

func newNodeTag() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
