// Package bgexec gives AI agent runtimes background shell sessions: an
// exec tool that runs a command and returns its output if it finishes
// within a yield window, or a session id if it does not, and a process tool
// to list, poll, page, write to, send keys to, resize, wait on, read the
// screen of, kill, clear and remove those sessions. The tool contract (parameters, defaults, texts)
// follows the exec/process tools of the OpenClaw agent gateway.
//
// # Life of a session
//
// [Scope.Exec] spawns [$SHELL, "-c", command] in its own process group (a
// new session with a controlling terminal under pty:true). The call then
// waits: if the command exits first, the result is the foreground output
// and nothing is kept. If the yield window (yieldMs, default 10 s) ends
// first, or background:true was passed, the session becomes backgrounded
// and the result is status "running" with a session id, its text ending
// with the output so far (the last 2000 characters). From then on:
//
//   - poll drains output not yet returned (optionally waiting for some);
//   - wait blocks until a pattern appears, a port opens, or the command ends;
//   - log pages the retained output by lines without draining it; line
//     numbers count from the first line the session ever printed, so an
//     offset names the same line however much is dropped later;
//   - write, send-keys, submit and paste feed its input;
//   - kill sends SIGTERM to the whole process group, then SIGKILL after the
//     grace period (3 s);
//   - clear and remove forget it.
//
// A finished backgrounded session is kept for the TTL (30 min) after its
// end, then reaped by the registry's single sweeper goroutine. The timeout
// (30 min default) applies in the foreground and in the background.
//
// When the shell exits while processes it started still run (`npm run dev
// &`, `nohup x &`, a daemon), they are kept, not killed: exec returns at
// once with the shell's exit code and a line naming them, and the session
// stays running and backgrounded until the last of them ends; its end is
// reported like any other, with the shell's exit code. What counts is the
// session's cgroup (one read of cgroup.events when nothing is left), or,
// without cgroups, its process group, looked for only while something
// still holds the session's output open, since that look reads all of
// /proc: there a job that redirected all its output away is killed with
// the shell, as is one that called setsid. The shell is not reaped
// meanwhile, so its process group id stays reserved and kill, timeout and
// Close still reach the whole group. When background execution is disabled,
// nothing could reach such processes, so they end with the shell and the
// result says so.
//
// The request context bounds the call, never a backgrounded process:
// cancelling it before the run was backgrounded kills the run; afterwards
// it changes nothing.
//
// A command too long for one exec argument (over 64 KiB; Linux refuses an
// argument over 128 KiB) is not refused: the shell runs
// [$SHELL, "-c", ". /dev/fd/3"] and reads the command from a sealed memfd
// on descriptor 3. $0, the positional parameters, exit, set -e and the
// exit status are as under -c; only `return` outside a function (it ends
// the script) and the prefix of the shell's own messages differ.
//
// # The agent pattern
//
// For long work, start once and let the runtime wake the agent:
//
//	exec {"command":"npm run dev","background":true}
//	process {"action":"wait","sessionId":"<id>","pattern":"listening on"}
//	… carry on; when the server exits, a [Notifier] event wakes the agent.
//
// Polling is for status on demand, not for scheduling: poll returns
// retryInMs, 5 s for a poll with output and for the first empty one, then
// 10 s, 30 s and 60 s for repeated empty polls.
//
// For a full-screen program, read the screen, waiting for it to settle
// before each key press:
//
//	exec {"command":"vim notes.txt","pty":true,"background":true}
//	process {"action":"screen","sessionId":"<id>","idleMs":500}
//	process {"action":"send-keys","sessionId":"<id>","keys":["i"]}
//	process {"action":"screen","sessionId":"<id>","idleMs":300}
//
// For a REPL, paste, submit, and poll with idleMs so the answer is read
// whole rather than at its first bytes:
//
//	process {"action":"paste","sessionId":"<id>","text":"def f(x):\n    return 2*x\n"}
//	process {"action":"submit","sessionId":"<id>"}
//	process {"action":"poll","sessionId":"<id>","idleMs":300,"timeout":10000}
//
// # Exit notifications
//
// Each end of a backgrounded session is reported to the agent exactly once,
// and who reports it is decided atomically when the process ends, by the
// session itself: a poll or wait that is waiting at that moment returns the
// exit line, and nothing else is sent; otherwise the registry sends one
// SystemEvent and one Heartbeat to the configured [Notifier], from one
// goroutine of its own, never under a lock. A poll or wait that reports the
// end before that event is sent cancels it; one that reports it after
// withdraws it through [Retractor] before the poll returns, so a runtime
// that drains its queue right after the poll never sees a duplicate wake.
// No event is sent for a session the agent ended itself (kill, remove), a
// foreground run, or a quiet success (exit 0, no output) unless
// NotifyOnExitEmptySuccess is set. Event texts name the whole session id,
// which can be passed back to process. [Queue] is a ready-made Notifier
// with per-scope FIFOs that implements [Retractor].
//
// # Output
//
// stdout and stderr are read concurrently into one aggregate per session,
// which keeps the last MaxOutputChars characters (code points of the
// decoded UTF-8; invalid bytes become U+FFFD). Each stream also has a
// pending buffer for the next poll, capped per stream. Model-facing text is
// cleaned: ANSI escape sequences are removed whole, as are C0 controls
// other than TAB, LF and CR, DEL, C1 controls and Unicode format
// characters; the cleaner keeps state across reads. Caps count cleaned
// characters. Texts start with a notice when output was dropped at a cap;
// a poll's notice tells output dropped only from its pending buffer (still
// in log) from output the retention cap dropped for good. Memory per
// session stays bounded by the caps whatever the child prints.
//
// Model text uses LF. A PTY's line endings become LF as its output is read,
// before anything is counted or kept, so caps, counts and every text
// (exec, poll, wait, log, list tails, events) agree: the terminal writes
// each LF as CRLF and programs redraw a line with a lone CR (progress
// bars), so a CR after text ends the line, while the LF of a CRLF (also one
// split between two reads) and a CR at the start of a line are dropped.
// `a\r\nb\rc\n` reads as the lines a, b and c, and wait patterns match lines
// without their line ending. A CR is turned into LF at once, never held
// back for the next read. Pipe output keeps its bytes as the child wrote
// them; only log lines and wait patterns leave out the CR of a CRLF.
//
// The engine (internal/session) owns each session's state: buffers,
// timers, input, end state and exit report are read and written only by
// its methods, under its lock, and the tool layer works on copies. A poll
// or log that finds nothing new copies nothing; log copies only the lines
// it returns; list looks only at the scope's own sessions; an ended
// session's expiry is kept in a heap, so reaping costs O(log n).
//
// # Environment
//
// A child inherits the host's environment minus keys that change how
// shells, loaders, interpreters or package managers behave (NODE_OPTIONS,
// BASH_ENV, LD_*, …). A call's env is merged over it; PATH, those keys,
// further override-only keys (HOME, GIT_SSH_COMMAND, proxies, …) and
// non-portable names are refused, and the call fails without running
// anything. Every child then gets OPENCLAW_SHELL=exec (Config.ShellMarker)
// and OPENCLAW_CLI=1, which no inherited or per-call value can replace.
//
// # PTY versus pipes
//
// Pipe sessions (the default) have separate stdout and stderr; stdin is
// closed at spawn (the child reads EOF) unless stdin:"pipe" is passed.
// PTY sessions (pty:true) run under a 120×30 terminal with TERM from the
// environment or xterm-256color, one merged stream, and an always writable
// terminal. A terminal emulator keeps the session's screen (see Terminal
// screens); it answers the program's queries, cursor-position ones with
// the real cursor. The cursor-key mode is tracked from the output for
// send-keys. A write to a terminal in canonical mode is cut by the kernel
// at 4095 bytes per line.
//
// # Terminal screens
//
// Full-screen programs (vim, less, top, htop) redraw by moving the cursor,
// so their output stream, even cleaned, is unreadable: the process
// action screen returns what a terminal would show instead, one line per
// row, with the cursor position, the size, the title and whether the
// alternate screen is on. Each PTY session feeds its raw output, before
// cleaning, to an emulator (github.com/charmbracelet/x/vt) in its reader
// goroutine, behind a lock of the terminal's own; screen renders it on
// demand, and resize resizes it with the PTY, holding back output
// meanwhile so no redraw lands at the old size. Pipe sessions have no
// emulator and pay nothing for it; screen on one fails with "Session <id>
// has no terminal; use poll or log." At the end the emulator is released
// and only the last screen is kept, for screen calls until the session is
// cleared.
//
// Choices where the contract is silent:
//
//   - The emulator answers every query it understands (cursor position,
//     device attributes, modes, colours), as a real terminal would; the
//     answers are written without ever blocking the reader and are dropped
//     when the child does not read them. Cursor-position answers skip the
//     emulator's reply pipe (one goroutine per PTY session reads the rest).
//   - The emulator keeps no scrollback: log keeps the history.
//   - Emulating a line feed at the bottom row shifts the whole screen, so a
//     flood of lines would cost the emulator ~25 µs per line, much slower
//     than the PTY delivers them. Within a run of plain text (printable
//     characters, CR, LF, TAB, UTF-8, colour sequences) the reader feeds the
//     first rows+1 lines and then holds back the rest, keeping only the
//     last rows+1 lines, which alone decide what the screen shows; any
//     other sequence, a screen call or a resize feeds what is held back
//     first. The screen text is the same as with every byte fed (a fuzz
//     test compares them); colours of dropped text are lost, which the text
//     does not show. While a scroll region is set nothing is held back.
//   - idleMs (poll, wait, screen) counts from the last bytes read,
//     escape sequences included. poll and wait first wait for new output,
//     then for idleMs of quiet; screen waits only for the quiet, so a
//     program that printed long ago is read at once. Without a timeout a
//     poll's idle wait is bounded by 5000 ms, a screen's too.
//   - A screen call does not report an exit (it does not take over the
//     exit event, unlike a poll or wait that sees the end).
//   - "(waiting for input?)" follows a poll's output on a running pipe
//     session whose stdin is open (stdin:"pipe") when its output ends in an
//     unfinished line and no output arrived for idleMs (500 ms without
//     idleMs). PTY sessions are not flagged: their prompts are the normal
//     state of a shell or REPL, and screen shows them.
//
// The emulator was chosen by replaying the raw output of vim (insert and
// :wq), less (page, search), top, htop, python3's REPL and bash -i,
// recorded in tmux at 120×30, into charmbracelet/x/vt v0.1.0 and
// github.com/hinshun/vt10x (the last release, 2022): both reproduce
// tmux's capture-pane row for row on all seven. vt10x is about five times
// faster on a line flood but is unmaintained and puts a wide character
// (CJK, emoji) in one cell, so its cursor reports and columns are wrong
// after one; x/vt is maintained, measures grapheme widths, tracks the
// alternate screen, title and modes, and answers queries like xterm. Its
// cost is speed (bounded by the skipping above) and a 4 MiB parser buffer
// allocated per emulator, that is per PTY session. vito/midterm was not
// available from the module proxy.
//
// # Containment
//
// Every session leads its own process group, and kill, timeout, remove and
// Close signal the whole group: SIGTERM, then SIGKILL after the grace
// period. With [ContainmentAuto] (the default), when this process may
// create child cgroups in a cgroup v2 hierarchy (found from
// /proc/self/cgroup and /proc/self/mountinfo, at /sys/fs/cgroup or
// /sys/fs/cgroup/unified), each session also runs in a cgroup of its own,
// entered at clone time, and its end goes through cgroup.kill: children
// that called setsid or setpgid, or double-forked, end too. An emptied
// session cgroup that was never killed is kept for the next session (at
// most four per registry); any other is removed. Containment fails closed:
// a cgroup counts as empty only once its cgroup.events was read and said
// so, and a process group is gone only when kill(2) says ESRCH. When a
// cgroup file cannot be opened, read or written (the host has no free
// descriptor, say), the kill escalates to cgroup.kill, kill answers
// "Termination requested" with a warning that names the error instead of
// "Killed session", and the cgroup is never reused: the registry's sweeper
// kills it again every second until it is seen empty, and Close kills it
// at the latest. NewRegistry first clones
// one short shell into a test cgroup: some kernels (6.18 among them)
// SIGKILL every child cloned into a new cgroup once the host's own cgroup
// has been killed before, and there containment falls back to process
// groups (or NewRegistry fails with [ContainmentRequired]), with the
// reason. Without cgroups (or with [ContainmentOff]) such
// escapers survive; kill then compares the session's descendants, taken
// from /proc before the kill, with what is left, and says which may have
// escaped. [ContainmentRequired] makes NewRegistry fail without cgroups.
//
// # When the host dies
//
// If the embedding process dies without calling Close, even by SIGKILL,
// its sessions do not live on as orphans. Each registry starts one small sh
// watchdog process that reads its lifeline, a Unix socket only the host
// writes to; when the lifeline closes it SIGKILLs the registry's cgroup (and
// with it every session cgroup inside) and every process group still
// listed. If the watchdog itself dies while the registry is open (someone
// killed it), the registry starts another and lists every group again. A
// session in a cgroup is there from its first instruction (clone3 with
// CLONE_INTO_CGROUP), so nothing more is needed for it. A session without
// a cgroup is listed by process group right after the fork, and its shell
// also gets Pdeathsig SIGKILL; because Linux sends that when the forking
// thread exits, not the process, those children are forked from one OS
// thread that the registry keeps locked for its whole life. (Forking there
// costs a hop between threads, about 6 % of a spawn, which cgroup sessions
// skip.)
//
// The watchdog takes orders only from its registry. Its sessions run as the
// same user and can see it in /proc, but a socket, unlike a pipe, cannot be
// opened again through /proc/<pid>/fd; the watchdog has a fixed argv, an
// environment of PATH alone, / as its directory and no descriptor of the
// host's but the lifeline; and it never runs what it reads: a line counts
// only if it names one process group above 1 by its number. What remains
// is ptrace: a process allowed to ptrace the watchdog or the host (the
// same user where ptrace is not restricted, or CAP_SYS_PTRACE; that also
// covers pidfd_getfd) can make either do anything, and a session may
// signal the watchdog like any process of its user (a killed watchdog is
// replaced; a stopped one is not noticed). Where sessions must not touch
// the host, run them as another user or in a sandbox: that is the
// boundary, not the watchdog.
//
// # Descriptors
//
// A child gets stdin, stdout and stderr and nothing else of the host: before
// each spawn every descriptor above 2 is marked close-on-exec, which also
// covers descriptors the host inherited without the flag. The one
// exception is a long command's script on descriptor 3, for the shell
// alone: the script's first words close it, so the processes the command
// starts do not inherit it, and the host closes its copy after the spawn.
//
// # Resources and concurrency
//
// Each registry holds three goroutines (sweeper, notifier, spawner thread),
// a fourth from its first spawn on (the watchdog keeper), and one watchdog
// process. Each session has one owner goroutine that waits
// for the exit on a pidfd
// through the runtime's netpoller (no OS thread per idle session), plus one
// reader goroutine per stream; read buffers are pooled and only held during
// a read. Timeouts and kill escalation use runtime timers, not goroutines.
// All exported methods of [Registry], [Scope] and [Queue] are safe for
// concurrent use. [Registry.Close] kills every running session, waits for
// every goroutine the registry started, and is idempotent; a Notifier call
// in flight is waited for only until Close's context ends (see
// [Registry.Close]). Nothing is written to disk; sessions are lost
// when the process exits.
//
// # Approvals
//
// Config.Security, Config.Ask and Config.Allowlist decide which commands
// run; a call may only make the levels stricter. Under "allowlist" (and
// for "on-miss" approvals) the command line is parsed as shell, in the
// dialect of the configured shell (both POSIX and Bash for sh, whose
// quoting differs between dash and bash), by mvdan.cc/sh/v3/syntax, the
// parser behind shfmt: a line is allowlisted only when every simple
// command anywhere in it (pipelines, lists, subshells, groups, loops,
// function bodies, command and process substitutions, here-documents) is
// a listed program, and the line has nothing whose effect is only known at
// run time: a computed command name, eval, exec, source, command, builtin,
// trap, alias; shells and interpreters given code (sh -c, python -c);
// xargs, find -exec and other programs that run their arguments;
// arithmetic on variables; an output redirection to a file other than
// /dev/null; an assignment the per-call environment rules refuse (PATH=.,
// LD_PRELOAD=…). The wrappers env, nice, nohup, setsid, stdbuf, sudo and
// timeout pass when they and the command they wrap are listed. A line that
// does not parse is refused with the parser's message. The [Approver] gets
// every parsed command in [ApprovalRequest.Commands], and Allowlisted is
// true only when the whole line is.
//
// The allowlist limits what the shell starts. A listed program that runs
// other programs by its own design (make, npm, a git hook) is trusted as
// far as its listing says. The boundary against a hostile command is the
// sandbox host, not the policy; RELIABILITY.md's security model says what
// each layer protects against.
//
// # Errors
//
// A tool-level failure (blank command, refused env key, unknown session,
// refused policy) is a [Result] with Details.Status "failed" and a text
// for the model; a command that exits non-zero is "completed", with its
// exit code. A Go error means the call could not be made: a nil request,
// malformed JSON or a wrong type in [Scope.Call], a closed registry
// ([ErrClosed]), or a context that ended first.
//
// # Platform
//
// Sessions run on Linux: they are waited for on pidfds (kernel 5.3+;
// older kernels fall back to a blocking waitid per session), contained by
// process groups and, where available, cgroup v2. The package builds and
// vets on other systems (macOS among them), so code that embeds it
// compiles on a developer's machine, but there [NewRegistry] returns an
// error wrapping [errors.ErrUnsupported]: containment is off because the
// engine is, not silently weaker.
package bgexec
