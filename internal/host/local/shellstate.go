package local

// StatePrologue goes before the command, on its first line (so $LINENO
// stays right), when a spec asks for the shell's state ([host.Carry]).
// At the shell's exit, however it exits (the end, `exit`, set -e, a
// failure), the EXIT trap writes the working directory and the exported
// environment to fd 4, a memfd only this process reads; it checks first
// that fd 4 is still that memfd, so a command that redirected fd 4 itself
// does not get the state in its file. The command's output is not
// touched. A command that sets an EXIT trap of its own replaces this one,
// and leaves no state. The block it writes is
// "\x00bgexec-state\x00" cwd "\n\x00" env -0 "\x00bgexec-end\x00".
const StatePrologue = `__bgexec_state() { case $(readlink /dev/fd/4 2>/dev/null) in /memfd:bgexec-state*) { printf '\000bgexec-state\000'; pwd; printf '\000'; command -p env -0; printf '\000bgexec-end\000'; } >&4 2>/dev/null;; esac; }; trap __bgexec_state EXIT; `

// StateMaxBytes bounds the state read back, in bytes; a larger one is
// not carried.
const StateMaxBytes = 4 << 20
