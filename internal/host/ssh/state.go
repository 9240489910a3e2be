package sshhost

import (
	"encoding/hex"
	"strconv"
	"strings"
)

// Shell state on nodes (host.Spec.Carry).
//
// It is captured without touching the output: the wrapper (nodeWrapper)
// opens a private temporary file on the node as the shell's fd 4 and
// writes the environment the shell starts with there, between
// "\0bgexec-start\0" and "\0bgexec-started\0"; the EXIT trap of
// StatePrologue appends the final working directory and environment, in
// the format of this machine's state (package local's StatePrologue;
// bgexec parses both). When the session ends, Release reads the file over
// the control shell (hex, through od) and removes it, in the round trip
// of its alive check.

// StatePrologue goes before a node command whose state is kept, on its
// first line: its EXIT trap writes the shell's working directory and
// environment to fd 4 when fd 4 is still the state file the wrapper made
// for the session tagged tag. It is package local's StatePrologue with
// that check in place of the memfd's; it is exported so that a test in
// package bgexec keeps the two one.
func StatePrologue(tag string) string {
	return `__bgexec_state() { case $(readlink /dev/fd/4 2>/dev/null) in */bgexec-state-` + tag + `.*) { printf '\000bgexec-state\000'; pwd; printf '\000'; command -p env -0; printf '\000bgexec-end\000'; } >&4 2>/dev/null;; esac; }; trap __bgexec_state EXIT; `
}

// StateMaxBytes bounds a node's state read back, in bytes: a larger one
// is not carried. It is package local's bound for this machine's state
// (a test in package bgexec keeps the two one).
const StateMaxBytes = 4 << 20

// validStatePath reports whether path is a state file the wrapper made
// for the session tagged tag: absolute, of plain characters only (it goes
// into a control script), named after the tag.
func validStatePath(path, tag string) bool {
	if !strings.HasPrefix(path, "/") || !strings.Contains(path, "/bgexec-state-"+tag+".") {
		return false
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/._-", c) >= 0) {
			return false
		}
	}
	return true
}

// stateFileScript is the control script's part that reads the state file
// (when read), as "S" and its bytes in hex on one line, if it is at most
// StateMaxBytes, and removes it.
func stateFileScript(path string, read bool) string {
	s := "f=" + path + "; "
	if read {
		s += "n=$(wc -c <\"$f\" 2>/dev/null) && [ $n -le " + strconv.Itoa(StateMaxBytes) + " ] && { printf S; od -An -v -tx1 \"$f\" | tr -d \" \\n\"; echo; }; "
	}
	return s + "rm -f -- \"$f\"; "
}

// parseStateDump decodes stateFileScript's output.
func parseStateDump(lines []string) ([]byte, bool) {
	for _, l := range lines {
		if h, ok := strings.CutPrefix(l, "S"); ok {
			data, err := hex.DecodeString(strings.TrimSpace(h))
			return data, err == nil
		}
	}
	return nil, false
}
