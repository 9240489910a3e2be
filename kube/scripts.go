package kube

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
)

// tagKey is the environment entry that marks every process of a session
// inside the container: every process the session's shell starts
// inherits it, so the signals and the end check find the session's
// processes even when they left its process group (setsid, a double
// fork), and never reach a process that merely got the same pid.
const tagKey = "BGEXEC_SESSION"

// reportHeader starts the wrapper's report line.
const reportHeader = "\x1fbgexec1 "

// trailerHeader starts the wrapper's last line, before the session's tag.
const trailerHeader = "\x1fbgexec-end "

// wrapper is the sh script each session runs in, as
// sh -c wrapper bgexec SHELL DEFAULT-DIR DIR COMMAND TAG ENV...: it
// applies the environment entries (KEY=value set, a bare KEY unset; the
// tag is one of them), changes to the default directory and then the
// asked one (a warning code when one is missing), and reports its pid,
// process group, warning code and working directory on the first line of
// stderr (of the terminal with a PTY). It then runs the shell in the
// foreground, catching INT, QUIT and TERM so that it outlives them (the
// shell gets them with their default action: a caught signal is reset at
// exec). When the shell ended, it drops the tag from its own environment,
// sends SIGKILL to every process still carrying it until none is left
// (5 seconds at most), and writes the trailer on stderr:
// "\x1fbgexec-end TAG CODE LEFT", CODE the shell's exit status (128+n
// for signal n), LEFT 1 when processes were still left. It exits with
// CODE. The wrapper's own environment never carries the tag (it arrives
// as an argument), so the session's signals reach the shell and what it
// started, not the wrapper. The arguments travel as the exec's argv, so
// nothing is quoted.
const wrapper = `s=$1; dd=$2; r=$3; c=$4; k=$5; shift 5; ` +
	`for a in "$@"; do case $a in *=*) export "$a";; *) unset -v "$a" 2>/dev/null;; esac; done; ` +
	`w=0; if [ -n "$dd" ]; then cd -- "$dd" 2>/dev/null || w=1; fi; ` +
	`if [ -n "$r" ]; then cd -- "$r" 2>/dev/null || w=2; fi; ` +
	`g=$$; read -r _ _ _ _ g _ </proc/$$/stat 2>/dev/null || g=$$; ` +
	`p=$PWD; { [ -n "$p" ] && [ "$p" -ef . ]; } || p=$(pwd); ` +
	`printf '\037bgexec1 %s %s %s %s\n' "$$" "$g" "$w" "$p" >&2; ` +
	`trap : INT QUIT TERM; "$s" -c "$c"; x=$?; unset -v ` + tagKey + `; ` +
	`i=0; l=0; while t=$(grep -la "` + tagKey + `=$k" /proc/[0-9]*/environ 2>/dev/null); [ -n "$t" ]; do ` +
	`for f in $t; do f=${f#/proc/}; kill -s KILL "${f%/environ}" 2>/dev/null; done; ` +
	`i=$((i+1)); if [ $i -gt 50 ]; then l=1; break; fi; sleep 0.1; done; ` +
	`printf '\037bgexec-end %s %s %s\n' "$k" "$x" "$l" >&2; exit $x`

// taggedFunc defines tagged, a shell function that prints the pid of
// every live process carrying the session's tag, one a line (zombies,
// whose environment reads empty, are not listed). The control script's
// own processes do not carry it: the tag is in their arguments, never in
// their environment. Every tag search here is a regular expression, not
// grep -F: busybox's -F (alpine and busybox images) stops at the first
// NUL byte of an environment or command line, and tags are hex.
func taggedFunc(tag string) string {
	return "tagged() { grep -la " + tagKey + "=" + tag + " /proc/[0-9]*/environ 2>/dev/null | while read -r f; do f=${f#/proc/}; echo \"${f%/environ}\"; done; }; "
}

// signalScript sends sig (a name without SIG) to every process carrying
// the session's tag, wherever it is: in the shell's process group, or in
// a session of its own (setsid, a double fork).
func signalScript(sig, tag string) string {
	return taggedFunc(tag) + "for p in $(tagged); do kill -s " + sig + " \"$p\" 2>/dev/null; done; exit 0"
}

// endScript runs when the session's exec stream ended without the
// wrapper's trailer: it says whether the wrapper (pid, its arguments
// holding the tag) was still running and kills it, then sends SIGKILL to
// every process carrying the tag until none is left (for about 5 seconds
// at most: one that forks as fast as it is killed is caught by a later
// round). Its one line of output is "bgexec-end ALIVE LEFT": ALIVE 1 when
// the wrapper was still running, LEFT 1 when processes are still left.
func endScript(pid int, tag string) string {
	p := strconv.Itoa(pid)
	return taggedFunc(tag) +
		"a=0; if grep -qa " + tag + " /proc/" + p + "/cmdline 2>/dev/null; then a=1; kill -s KILL " + p + " 2>/dev/null; fi; " +
		"i=0; l=0; while t=$(tagged); [ -n \"$t\" ]; do " +
		"for q in $t; do kill -s KILL \"$q\" 2>/dev/null; done; " +
		"i=$((i+1)); if [ $i -gt 50 ]; then l=1; break; fi; sleep 0.1; done; " +
		"echo \"bgexec-end $a $l\""
}

// listenScript exits 0 when a TCP socket of the container's network
// namespace listens on port (state 0A in /proc/net/tcp or tcp6).
func listenScript(port int) string {
	return "grep -qiE ':" + fmt.Sprintf("%04X", port) + " [0-9A-F]+:0000 0A ' /proc/net/tcp /proc/net/tcp6 2>/dev/null"
}

func newTag() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
