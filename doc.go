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
// with the output so far (the last 2000 characters; on a PTY at most the
// last 20 lines, after a line naming the log offset and limit of the
// lines before them, while details.tail keeps the 2000). From then on:
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
// end, then reaped by the registry's single sweeper goroutine; a scope
// keeps at most 50 of them (Config.MaxFinishedSessionsPerScope), forgetting
// the one that ended first. The timeout (timeoutSeconds, 30 min default;
// timeout is its older name) applies in the foreground and in the
// background. A timed-out command may have done part of its work: exec,
// poll, log and the exit event say so and ask to verify the state before
// retrying, and its list line carries "[timed out]". poll and log of a
// killed session say "Process stopped by request (signal SIGTERM)."
//
// exec's optional title (at most 120 characters) is kept with the session
// and returned as details.title by exec, poll and list. A running result's
// follow-up line names the process actions that apply to the session
// (write only when its stdin takes input, send-keys, submit, paste and
// screen only on a terminal), and details.followUp lists them.
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
// retryInMs, 5 s for a poll with output, then 10 s, 30 s and 60 s for the
// empty polls after it; a session never polled with output starts at 5 s
// for its first empty poll.
//
// For a full-screen program, read the first screen, then send each step
// with screen: true, which answers with the screen settled after the keys:
//
//	exec {"command":"vim notes.txt","pty":true,"background":true}
//	process {"action":"screen","sessionId":"<id>","idleMs":300}
//	process {"action":"send-keys","sessionId":"<id>","keys":["i"],"screen":true,"idleMs":300}
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
// which can be passed back to process. A Heartbeat may still arrive for an
// event a poll then withdrew; a runtime treats a heartbeat that finds no
// events as nothing to do. [Queue] is a ready-made Notifier
// with per-scope FIFOs that implements [Retractor].
//
// # Exit notices in results
//
// Hosts that show the model nothing but tool results (MCP clients, whose
// logging messages the mainstream hosts do not show) can set
// Config.ExitNoticesInResults. Then the scope's next tool result (Exec,
// Process or Call, any action) starts with one line per backgrounded
// session that ended since, and a blank line:
//
//	[bgexec] Exec completed (warm-falcon, code 0) :: done
//
// The line is the event text (the same summary the Notifier gets) after
// [NoticePrefix]. The choice made at the exit still decides: an end a
// poll or wait was waiting for, a kill, a remove, a foreground run and a
// quiet success never become notices, and a poll or wait that reports an
// end before a result carried its notice takes it over. A notice shown
// once is never shown again, also when several calls of the scope return
// at once. A call that fails with a Go error carries none; they wait for
// the next result. A result that reports a session running never carries
// that session's own notice (it ended just after its status was taken,
// say a background job that finished as its exec returned); that notice
// comes with the next result. Notices are kept in memory with their session and go
// when it is cleared, removed or reaped.
//
// The Notifier, if any, still receives every event, for user interfaces
// that show them. With this option its events do not count as telling the
// agent: a runtime should not also feed them to the model. Without a
// Notifier the option works alone.
//
// # Results that never reached the model
//
// A poll (or wait) hands out the output it drains once. When its result does not
// reach the model (the MCP request was cancelled, writing the response
// failed, the agent loop dropped it), the runtime gives it back with
// [Scope.Undelivered]: the drained output goes back in front of the
// pending output, so the next poll returns it before anything newer
// (within the pending cap; when it does not fit, the oldest part is
// dropped and the poll says so), an exit the poll reported is reported
// again (by the next poll, or by an exit event and notice as for any end
// no call reported), and exit notices the result carried come with the
// next result. A result whose call's context had ended by the time the
// call returned is given back by Exec, Process and Call themselves: a
// host that cancelled a request does not show its result. Giving back is
// committed per result, once; a result of another scope is not given
// back. An MCP server calls Undelivered when a request is cancelled after
// its result was computed but before it was written, and when the write
// fails.
//
// # Calls that fit the host
//
// Config.MaxCallWaitMs caps how long one call waits: the exec yield
// window, the poll timeout, the wait timeout, and every other action that
// waits for a caller-chosen time goes through the same cap. A call that
// stops at the cap returns what it would at its own timeout (exec: the
// command keeps running in the background and the result is "running")
// and adds a sentence naming the cap and what was asked, e.g.
// "This call returned at the server's limit of 50000 ms per call (yieldMs
// asked for 120000 ms); …". Background-disabled exec runs are not capped,
// since they cannot return before the end. The default is no cap: the MCP
// server sets 50000 ms, under the 60 s request timeout of common clients.
//
// # Output
//
// stdout and stderr are read concurrently into one aggregate per session,
// which keeps the last MaxOutputChars characters (code points of the
// decoded UTF-8; invalid bytes become U+FFFD). Each stream also has a
// pending buffer for the next poll, capped per stream. Model-facing text is
// cleaned: ANSI escape sequences are removed whole, as are DEL, C1
// controls and Unicode format characters, and the C0 controls other than
// TAB, LF and CR stay visible as the four characters \xNN (a NUL is
// \x00); the cleaner keeps state across reads. Caps count cleaned
// characters, so such a control counts four. Texts start with a notice when output was dropped at a cap;
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
// With Config.NonInteractive, every child also gets [NonInteractiveEnv]
// (GIT_TERMINAL_PROMPT=0, GCM_INTERACTIVE=never,
// DEBIAN_FRONTEND=noninteractive, PIP_NO_INPUT=1) over inherited values,
// on this machine, in the sandbox and on nodes; a key the call's env
// sets keeps the call's value. PAGER=cat and GIT_PAGER=cat are set for
// every child on this machine whatever the option:
//
//	reg, err := bgexec.NewRegistry(bgexec.Config{NonInteractive: true})
//	// git clone https://… now fails at once instead of asking for a password.
//
// # Shell conveniences
//
// Options that make sessions behave more like an agent's own shell. All
// are off by default, so the default behaviour is the reference's.
//
// Head and tail. With Config.Truncation "head-tail", output cut at a cap
// keeps its beginning: each session keeps its first min(2000,
// MaxOutputChars/10) characters, at most 50 lines, apart (taken out of
// MaxOutputChars, so the retained text is that much shorter), and a
// finished exec result whose output was cut shows that head, a marker,
// and the retained end:
//
//	line 0000
//	…
//	[... 400 lines (4000 characters) left out: lines 10-409. They were dropped at the retention cap and cannot be recovered.]
//
//	line 0410
//	…
//
// A poll or wait whose poll buffer dropped output shows the first part of
// what it should have returned (at most as much as the head buffer, 50
// lines) and its last part, within the poll cap; the marker then names
// the log offsets that still hold what was left out ("process log
// offset=50 limit=400 reads them."), and which lines are gone for good
// when the retention cap dropped them too. The head of a running exec
// result ("Output so far") and log pages are not cut this way: log
// returns the retained lines, and line numbers count as before.
//
// Split streams. exec streams "split" (an addition to the schema) keeps
// each stream's output apart as well: finished exec results and poll
// results carry details.stdout and details.stderr beside the merged text
// ("" for a stream that printed nothing), each the stream's retained
// output, cleaned and capped at MaxOutputChars like the merged one. The
// text the model reads stays merged, in arrival order. A PTY has one
// stream, so split with pty is a failure result and nothing runs:
//
//	res, _ := sc.Exec(ctx, &bgexec.ExecRequest{Command: "make", Streams: "split"})
//	fmt.Println(*res.Details.Stderr) // the compiler's errors alone
//
// Shell state. With Config.KeepShellState, a scope's execs behave as if
// they ran one after another in one shell: when a foreground exec ends
// (or one that ended within its yield window), its final working
// directory and exported variables are where the scope's next exec
// starts.
//
//	sc.Exec(ctx, &bgexec.ExecRequest{Command: "cd build && . ../.venv/bin/activate && export MODE=ci"})
//	res, _ := sc.Exec(ctx, &bgexec.ExecRequest{Command: "pwd; command -v python; echo $MODE"})
//	// /src/build, /src/.venv/bin/python, ci
//
// What carries and what does not:
//
//   - What the command changes carries: cd, export, unset, and also a
//     failing command's changes, and those of a command that ran exit
//     part way or stopped under set -e. A command killed by a signal or a
//     timeout, one that replaced the shell (exec prog), and one that set
//     an EXIT trap of its own leave the state as it was.
//   - A call's own workdir and env apply to that call only; a relative
//     workdir is taken from the state's directory.
//   - Variables the environment rules refuse as per-call overrides
//     (NODE_OPTIONS, LD_*, VIRTUAL_ENV, …) are not carried: the result's
//     text ends with a note naming them, and details.notCarried lists
//     them. PATH is the exception: its changes carry, so a virtualenv's
//     activation does. Under security "allowlist", a listed name that
//     the carried PATH resolves to a different file than the host's PATH
//     is not the listed program.
//   - Background sessions (background, a run past its yield window, one
//     whose shell left processes running) leave the state alone.
//   - Each scope has its own state. [Scope.ResetShellState], or the
//     process action "reset-shell" (no sessionId), forgets it. A state
//     directory removed meanwhile gives the workdir warning and the
//     default directory.
//
// The state is captured without touching the output: the command runs
// behind a one-line prologue that sets an EXIT trap, which writes `pwd`
// and `env -0` to descriptor 4, a memfd that only bgexec reads (at most
// 4 MiB; a larger state is not carried). The command's processes inherit
// that descriptor; a command that opens its own fd 4 (exec 4>file) keeps
// its file as it is, and leaves no state. It works under bash, dash and
// any POSIX sh, and in the sandbox, whose paths are the host's.
//
// On nodes (Host "node") the state is kept per node: a scope's exec on a
// node starts from what the scope's last exec on that node left, never
// from another node's or this machine's; reset-shell forgets them all.
// There descriptor 4 is a private temporary file the wrapper makes with
// mktemp (in the node's $TMPDIR, else /tmp); bgexec reads it over the
// connection when the session ends and removes it (it stays only when
// the connection dropped). What carries is what the commands changed,
// set or unset, on top of the node's login environment, by the rules
// above. Under security "allowlist", once a scope's state on a node
// changed PATH, a bare listed name is no longer taken for the listed
// program there, since which file it names on the node cannot be checked
// from here: give the full path, or reset-shell.
//
// Full output in a file. With Config.SpillDir, each session's whole
// output, the cleaned text log shows (escape sequences removed, a PTY's
// CRLF as LF, both streams in arrival order), is copied as it arrives to
// a file of its own in that directory (mode 0600, named after the session
// id). A result whose text was cut names that file in a last paragraph
// and in details.outputFile: an exec result (finished or running) when
// the retention cap dropped output, a poll or wait result whose poll
// buffer dropped output, and every log page once the retention cap
// dropped lines. Results whose text was not cut name nothing.
//
//	[The full output, with what this text leaves out, is in the file /var/tmp/bgexec/swift-otter-4012.out (30000 bytes). It is deleted with the session.]
//
// The file is deleted with its session: by remove (at once, even while
// the command runs), clear, the TTL reaper, the cap on finished sessions
// per scope, and Close. A foreground exec's session is forgotten as the
// exec returns, so the file its result named is kept for the job TTL
// (Config.JobTTLMs) and deleted then, or at Close; the file of a
// foreground run whose text was not cut is deleted at once. Files of a
// process that dies without Close stay: use a directory of your own.
//
// Each file holds at most Config.SpillMaxBytesPerSession bytes (64 MiB by
// default), and the registry's files together at most
// Config.SpillMaxBytes (512 MiB by default; a deleted file's bytes are
// free again). At a quota, or when creating or writing the file fails (a
// full disk, the directory removed), the file stops growing, the session
// runs on, and a result that names the file says it is incomplete, with
// details.outputFileTruncated true and details.outputFileIncomplete the
// reason:
//
//	[The output file /var/tmp/bgexec/swift-otter-4012.out is incomplete: it holds the first 5000 bytes of the output; the per-session spill quota (5000 bytes) was reached.]
//
// The output is written by the goroutine that read it, after the
// session's lock is released: a slow disk slows that reader, and through
// the full pipe the command (as tee would), never a poll, a log or a
// kill, and at most what the other stream read meanwhile waits in
// memory. Use a local directory: Close waits for a write in progress.
// The file is on the machine that runs bgexec, for sandbox and node
// sessions too; a sandboxed command reads it only where the sandbox
// exposes SpillDir.
//
// # PTY versus pipes
//
// Pipe sessions (the default) have separate stdout and stderr; stdin is
// closed at spawn (the child reads EOF) unless stdin:"pipe" is passed.
// PTY sessions (pty:true) run under a 120×30 terminal with TERM from the
// environment or xterm-256color, one merged stream, and an always writable
// terminal. They do not inherit COLUMNS and LINES, which would override
// the terminal's size (a per-call env may set them). A terminal emulator
// keeps the session's screen (see Terminal screens); it answers the
// program's queries, cursor-position ones with the real cursor. The
// cursor-key mode is tracked from the output for send-keys. A write to a
// terminal in canonical mode is cut by the kernel at 4095 bytes per line.
//
// # Terminal screens
//
// Full-screen programs (vim, less, top, htop) redraw by moving the cursor,
// so their output stream, even cleaned, is unreadable: the process
// action screen returns what a terminal would show instead, one line per
// row, with the cursor position, the size, the title and whether the
// alternate screen is on. Each PTY session keeps an emulated terminal
// (github.com/charmbracelet/x/vt) fed with its raw output, which resize
// resizes with the PTY. The emulator answers the program's queries
// (cursor position, device attributes, modes, colours) as a real terminal
// would, and keeps no scrollback: log keeps the history. Pipe sessions
// have no emulator and pay nothing for it; screen on one fails with
// "Session <id> has no terminal; use poll or log." At the end the
// emulator is released and only the last screen is kept, for screen
// calls until the session is cleared. docs/terminal.md says how the
// emulator is fed (a flood of lines costs it little) and why this one.
//
// Choices where the contract is silent:
//
//   - The agent's last input (write, send-keys, submit, paste) is recorded
//     by the session. Input that no output has followed yet, and that no
//     screen, poll or wait has read since, is first given time to be
//     answered: screen (and poll and wait with idleMs) wait for output
//     after it, bounded by their timeout. A screen of a session that has
//     printed nothing yet waits for its first output. idleMs (poll, wait,
//     screen) then counts quiet from the later of the call's start, the
//     last input and the last bytes read, escape sequences included; poll
//     and wait also need new output first. Without a timeout a poll's idle
//     wait is bounded by 5000 ms, a screen's too.
//   - A screen consumes the pending output it shows (it renders under the
//     session's lock, and the reader feeds the emulator before it records
//     the text), so the poll or wait after it returns what came after; log
//     keeps everything. A wait returns at most the last 20 lines (2000
//     characters) of new output, with the log offset and limit of the rest.
//   - Every screen's text ends with "[cursor row R col C; alternate screen
//     on|off]"; a blank one says "(blank screen: no output yet after N
//     ms)" or "(blank screen)". attributes: true marks bold, underlined and
//     reverse-video runs with ⟦b⟧…⟦/b⟧, ⟦u⟧…⟦/u⟧ and ⟦r⟧…⟦/r⟧, read from
//     the emulator's cell styles.
//   - A screen call does not report an exit (it does not take over the
//     exit event, unlike a poll or wait that sees the end).
//   - "(waiting for input?)" follows a poll's output on a running pipe
//     session whose stdin is open (stdin:"pipe") when its output ends in an
//     unfinished line (or it printed nothing yet), no output arrived for
//     idleMs (500 ms without idleMs), and its process is blocked reading
//     its stdin (see "Waiting for input" below). PTY sessions get only the
//     longer rule below.
//
// # Waiting for input
//
// When a running session has printed nothing for Config.InputWaitIdleMs
// (default 15000; env OPENCLAW_PROCESS_INPUT_WAIT_IDLE_MS) and its
// foreground process is blocked reading its stdin or terminal, poll ends
// with "No new output for Ns; this session may be waiting for input. Use
// process write, send-keys, submit, or paste to provide input." in place
// of "Process still running.", log adds the same line, and the list line
// carries "[input-wait]" before its " :: ". poll and log of a running
// session carry details stdinWritable, waitingForInput, idleMs and
// lastOutputAt (Unix epoch milliseconds).
//
// The decision comes from what the process does, never from the shape of
// its output: a line of progress dots is not a prompt, and bash's
// read -p on a pipe, which prints no prompt, is one. The kernel is asked
// whether the session's foreground process is blocked reading the
// session's stdin pipe or terminal (docs/terminal.md says how), which
// needs ptrace access to it: a root host has it; an unprivileged host has
// it for its own children unless Yama's ptrace_scope is 2 or more, or a
// child changed its credentials (setuid). Where the kernel will not say,
// no session is reported as waiting. Node (SSH) sessions and other
// operating systems are never reported as waiting: asking the remote
// /proc would cost a command per poll.
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
// A gateway session in a cgroup also runs in a cgroup namespace rooted at
// that cgroup (when the host has CAP_SYS_ADMIN), so a root session that
// writes itself into another cgroup still ends with its session and with
// the host; one that also enters another cgroup namespace escapes.
// docs/containment.md says what holds where, and [ContainmentReport] says
// which holds on the running host: CgroupNamespace, MigrationRefused and
// Migration.
//
// # Limits and the resource view
//
// [Config.Limits] gives every session a memory limit, a task limit
// (default 4096, so a fork bomb fails its own forks and nobody else's)
// and a CPU quota, through the session's cgroup: cgroup v2 controllers
// where the host's own cgroup enables them for its children (on a pure
// v2 host only the root cgroup can; a host in a delegated leaf, as a
// systemd service is, gets none: placing the registry's cgroup beside the
// leaf is not done), else the v1 hierarchies of a hybrid host (memory,
// pids, cpu under /sys/fs/cgroup/<controller>). The memory controller is
// used even without a memory limit: it gives the resource view its
// memory figure. docs/containment.md has the files each limit is written
// to and how a session is in its v1 cgroups from its first instruction.
//
// A limit set in the Config that no controller can apply makes
// NewRegistry fail under [ContainmentRequired] and logs a warning
// (Config.Logger, else slog.Default) otherwise; the default task limit
// only warns, so hosts without a delegated pids controller keep working.
//
// Sessions' tasks also count against every pids.max above the host (a
// systemd service's TasksMax); a fork bomb that took them all would leave
// the host's Go runtime unable to start a thread, which aborts the
// process. So NewRegistry reads the tightest pids.max above the host's
// cgroup (in the v2 tree and in the v1 pids hierarchy), subtracts the
// tasks in use and a reserve for the host (a quarter of that limit, at
// least 64), and gives the sessions together the rest, at least 8: it
// becomes the registry cgroup's pids.max. An explicit Limits.Tasks is
// capped to it, the default to half of it, so that other sessions still
// start beside a runaway one. [ContainmentReport] shows TaskBudget, where
// it comes from, and SessionTasks. The reserve is fixed at NewRegistry: a
// host that later starts many threads of its own can still run short.
// Where no pids controller reaches the registry's cgroup (a cgroup v2
// host whose own cgroup is a leaf, as a systemd service's is), nothing
// caps the sessions' tasks: NewRegistry then logs a warning, which
// [ContainmentReport].Warnings repeats.
// [Registry.Containment] says, per limit, whether it is applied and by
// which file.
//
// A session the kernel's OOM killer hit (oom_kill in memory.events or
// memory.oom_control grew) ends "failed" with exitReason "oom" and the
// text "Command killed: out of memory (limit 64 MiB).", unless it was
// killed or timed out first, or exited 0 anyway (`hog || true`).
//
// Quotas are checked before anything is spawned: [Config.MaxSessions]
// (1024) and [Config.MaxSessionsPerScope] (64) count running sessions,
// foreground runs and sessions kept for their leftovers included; and a
// session is refused when it would leave the host process fewer than a
// twentieth of RLIMIT_NOFILE (at least 64) free descriptors, counted from
// /proc/self/fd (one stat on Linux 6.2+). [Config.MaxTimeoutSec] caps
// every exec timeout, "none" included, with a warning line when the call
// asked for more; it caps Config.TimeoutSec silently. [Config.MaxOutputBytes]
// (1 GiB) bounds the output all sessions retain together: the sweeper
// looks after every session end (and every 2 s while the total is above
// half the budget), and cuts the sessions that ended first down to their
// last 2000 characters, with the retention notice, until the total fits.
// Running sessions are never cut: their share is bounded by the
// per-session caps and MaxSessions.
//
// list entries and poll details of running sessions carry resources:
// cpuMs (cpu.stat usage_usec, present in every v2 cgroup), memoryBytes
// (memory.current or memory.usage_in_bytes; without a memory cgroup the
// sum of resident sets), tasks (pids.current; else the process count)
// and ports, the TCP sockets in LISTEN state (from /proc/<pid>/net/tcp
// and tcp6 in the session's network namespace) whose inodes are among the
// session processes' descriptors. The list line ends with
// "  [:3000, 412 MiB]". A session's view is read at most once per 250 ms
// and reused by the polls and lists in between, so it may be that old;
// kill always reads it anew. The session's processes are its cgroup's;
// without a cgroup, its process tree: the shell, what it started
// (/proc/<pid>/task/<tid>/children), and every process seen so far that
// still runs, even after its parent exited. Neither reads all of /proc,
// so a poll costs the same on a host with thousands of processes. A
// process that left the tree before any look saw it (a quick double
// fork) is not counted there, though kill still kills it with the
// process group. The ports last seen by such a look
// (or by kill, which looks first) are named when the session ends:
// poll's and wait's exit lines and kill's text add "Its listening port
// :3000 is closed.".
// A server that exits before anybody looked is not named.
//
// # When the host dies
//
// If the embedding process dies without calling Close, even by SIGKILL,
// its sessions do not live on as orphans: two small sh watchdog
// processes per registry, each reading a lifeline of its own from the
// host, kill every session when the lifeline closes (its cgroup, its
// process group, and the processes of its cgroup namespace that left the
// cgroup). A killed watchdog is replaced and the other stands in
// meanwhile; killing both watchdogs and then the host within the few
// milliseconds a restart takes leaves the sessions running. A session
// without a cgroup also gets Pdeathsig SIGKILL.
//
// The watchdog takes orders only from its registry, but it is not a
// boundary: a process allowed to ptrace the watchdog or the host (the
// same user where ptrace is not restricted, or CAP_SYS_PTRACE) can make
// either do anything, and a session may signal the watchdogs like any
// process of its user (a stopped one is not noticed). Where sessions must
// not touch the host, run them as another user or in a sandbox.
// docs/containment.md says how the watchdog works.
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
// Each registry holds three goroutines (sweeper, notifier, spawner thread)
// and two watchdog processes, and from its first spawn on one keeper
// goroutine per watchdog; each SSH node connection adds two (its reader
// and its keepalives). Each session has one owner goroutine that waits
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
// run; a call may only make the levels stricter. ask "on-miss" asks only
// when security is "allowlist" and the allowlist misses; under "full"
// nothing misses, so only "always" asks there. Under "allowlist" (and
// for "on-miss" approvals) the command line is parsed as shell, in the
// dialect of the configured shell (both POSIX and Bash for sh, whose
// quoting differs between dash and bash), by mvdan.cc/sh/v3/syntax, the
// parser behind shfmt: a line is allowlisted only when every simple
// command anywhere in it (pipelines, lists, subshells, groups, loops,
// function bodies, command and process substitutions, here-documents) is
// matched by an entry of Config.Allowlist, and the line has nothing whose
// effect is only known at run time: a computed command name, eval, exec,
// source, command, builtin, trap, alias; shells and interpreters given
// code (sh -c, python -c); xargs, find -exec and other programs that run
// their arguments; arithmetic on variables; an output redirection to a
// file other than /dev/null; an assignment the per-call environment rules
// refuse (PATH=., LD_PRELOAD=…). The wrappers env, nice, nohup, setsid,
// stdbuf, sudo and timeout pass when they and the command they wrap are
// listed. A line that does not parse is refused with the parser's
// message. The [Approver] gets every parsed command in
// [ApprovalRequest.Commands], and Allowlisted is true only when the whole
// line is.
//
// An entry is a program name or absolute path, optionally followed by an
// argument prefix, split on white space: "git status" allows git status
// and its further arguments, nothing else of git. A bare name does not
// cover the options through which the common tools run another program,
// which the checker reads the way getopt does (bundled short options,
// --name=value, abbreviated long names): git -c, --exec-path, aliases
// and config writes; sed's e command; tar --to-command, -I and
// --checkpoint-action; ssh -o ProxyCommand and -F; rsync -e; wget
// --use-askpass; zip -TT; env -S; sort --compress-program; the
// interpreters' code options (python -c and -m, perl -e and -M, node
// --eval, --import and --require …); and bash builtins that evaluate an
// array subscript in a variable name (printf -v, test -v, read, unset).
// A program that reads its program text from standard input (an
// interpreter with no script, "-", /dev/stdin) is inline code and never
// allowlisted, so process write, paste and send-keys cannot feed code to
// a listed interpreter. The refusal names the construct. An entry's own
// prefix words are exempt: "python3 -m pytest" allows that module.
//
// The allowlist limits what the shell starts and those options. Beyond
// them, a listed program runs whatever its arguments and inputs make it
// run: a listed python3 runs any script, one written or downloaded by
// another listed program too; make, npm and go run their build files; git
// runs hooks and the programs its existing configuration names; an editor
// or pager a listed program starts (git commit, git log on a terminal)
// obeys the keys sent to the session. The boundary against a hostile
// command is the sandbox host, not the policy; RELIABILITY.md's security
// model says what each layer protects against.
//
// Approvals can wait. An [Approver] that cannot decide now (a human is
// asked in another window, a framework pauses the run) returns
// [ErrApprovalDeferred]: exec then returns at once with status
// "approval-pending", details approvalId, expiresAtMs and
// allowedDecisions ["allow-once", "allow-always", "deny"], and the text
// "Approval required (id <approvalId>): <command>. Nothing has run yet;
// the result will follow once it is decided." [Scope.Decide] later runs
// the command as a background session, as if the exec had been approved
// then (every other check is made again), or refuses it. The agent hears
// the outcome as it hears a background session's end, through the
// Notifier and, with Config.ExitNoticesInResults, in the scope's next
// result: "Exec approved (approval <id>): running as session <sessionId>:
// <command>", then the session's own exit event; or "Exec denied
// (approval <id>): …" for a denial, an expiry (Config.ApprovalTimeout,
// default 10 minutes, served by one registry timer), or a start that
// failed. "allow-always" also adds an allowlist rule for each command of
// the line that was not allowlisted (its words, e.g. "git status
// --short"), kept by the registry and, through Config.ApprovalStore,
// across restarts. Pending approvals belong to their scope: another
// scope's id is unknown ([ErrUnknownApproval]). Close drops pending
// approvals without events. [Scope.Check] tells beforehand, without
// running anything or calling the approver, whether a call would run, be
// refused (and why) or need approval, for adapters that pause a run
// before the tool call.
//
// # Audit trail
//
// Config.Observer sees every exec call and session, foreground runs, quiet
// successes, refusals, kills and removes included, as [Event] values of
// five kinds: "decision" (what the approval rules decided about a call:
// allowed by the policy or the allowlist, approved or denied by the
// approver or by [Scope.Decide], pending, expired; with who decided and
// why), "spawn" (scope, call id, session id, host or node, command,
// workdir, and the names but never the values of the call's env
// overrides; sent before the process is created), "input" (each write,
// send-keys, paste, submit and eof: its size, and its bytes only with
// Config.ObserveInputData), "control" (kill, remove, clear) and "end"
// (exit code or signal, exit reason, duration, output bytes, truncation,
// and the CPU time of the processes the shell waited for, from wait4's
// rusage; a spawn that failed ends with "spawn-error"). An exec's decision
// and spawn share Event.CallID. Peak memory is not reported: wait4's
// ru_maxrss counts the embedding process's own resident set, which a
// child shares until its exec.
//
// Events go through one bounded queue (Config.ObserverQueue, 4096 by
// default), delivered in order by one goroutine the registry owns, so a
// session's events arrive in the order they happened and a slow observer
// never blocks a call: when the queue is full the event is dropped and
// counted ([Registry.ObserverStats]). Close delivers what is queued,
// the ends of the sessions it kills included, then stops the goroutine
// (a delivery still blocked when Close's ctx ends is left to finish on
// its own, as with the Notifier).
//
// With Config.ObserverRequired, an exec waits until the observer took its
// decision and spawn events, and a write until it took the input event; an
// observer fails by implementing [CheckedObserver] and returning an error
// from ObserveErr. A failure, a full queue or the call's context ending
// first makes the exec a failure result and nothing is spawned (nothing
// is written). Ends and control events are still queued without waiting:
// a kill is never held back by the audit.
//
// [NewAuditLog] is an observer that appends one JSON line per event to a
// writer (the MCP server's -audit-log). An observer that also implements
// [SpawnEnvObserver] adds environment entries to each child, which is how
// the OpenTelemetry module passes TRACEPARENT. See ExampleNewAuditLog.
//
// # The sandbox host
//
// With [Config.Sandbox] set, the host "auto" is "sandbox" and every
// command runs as `bwrap <options> -- $SHELL -c command` in bubblewrap
// (0.10.0 or newer, or Debian 12's 0.8.0-2+deb12u1): in user, pid,
// mount, ipc, uts, cgroup and (unless Sandbox.Network) network
// namespaces of its own, with no capabilities, no_new_privs and a seccomp
// filter that refuses with EPERM what Docker's default profile refuses a
// container without capabilities (mount, ptrace, unshare, setns, bpf,
// perf, keyrings, modules …). The root is read-only; only the working
// directory, Sandbox.WritablePaths, a private /tmp and the hidden paths
// (empty tmpfs: $HOME, Sandbox.HidePaths and, without network, /run) are
// writable, and /proc shows only the command's own processes. NewRegistry
// runs `bwrap … true` once and, if that fails, adds one feature at a time
// to say which the host refuses. docs/sandbox.md says how the sandbox is
// built and why bubblewrap. What to know when using it:
//
//   - The working directory of each call is bound at its real path. It
//     must lie, once its links are resolved on the host, in the default
//     workdir or a WritablePaths entry (bound read-write) or in a
//     ReadOnlyPaths entry (bound read-only, which the read-only hint then
//     says), and not below a hidden path its directory does not lie in;
//     "/" never. Anything else (/etc, the hidden $HOME, a link the
//     sandbox made to /etc) is a failure result naming the allowed
//     directories, and nothing runs. HOME stays the host's path when the
//     command can write there (it is hidden by default, so it is an empty
//     tmpfs), else it is /tmp; TMPDIR likewise. The environment rules
//     apply unchanged.
//   - A root host's commands can read what root can read of the bound
//     file system (/etc/shadow, host keys under /etc/ssh, other users'
//     homes): the uid is unchanged and the root (or, with MinimalRoot,
//     /etc) is bound. They cannot write there, and no workdir reaches
//     into a hidden path. Hide such directories with Sandbox.HidePaths,
//     or run the host as an unprivileged user, whose permissions then
//     hold inside as well.
//   - Processes a shell leaves running (`server &`) end with the shell,
//     since the sandbox ends with its first process, and exec reports the
//     shell's end; run a server as the command itself, in the background.
//     setsid, double forks and cgroup moves do not outlive the session.
//   - kill and timeout give the command its grace period, and their
//     signals keep their names. A signal death that comes from inside the
//     sandbox (a crash, `kill -9 $$`) is exit code 128+n: bubblewrap tells
//     nothing more.
//   - elevated:true runs that one call on this machine, only when
//     Config.Elevation enables and allows it for the scope. A sandbox
//     failure is a failure result; nothing falls back to the gateway.
//   - The first "Read-only file system" in a session's output adds one
//     line to the exec or poll result naming the writable paths (and
//     saying so when the workdir itself is read-only); the exec tool
//     description of [Registry.ToolDefinitions] says where commands run,
//     with or without network, what is writable and where a workdir may
//     lie.
//
// # Nodes over SSH
//
// With Config.Host "node", every exec runs on one of [Config.Nodes] (the
// call's node, else [Config.DefaultNode]) over SSH (golang.org/x/crypto/ssh,
// the one dependency this adds; SSH is what such hosts already run, so
// nothing is installed on them). There is one connection per node,
// dialed by the first session that needs it; sessions, kills and port
// probes are channels on it, and a keepalive request every
// [Node.KeepaliveInterval] (15 s) watches it. Host keys are always checked
// against [Node.KnownHostsFile]; a mismatch, an unknown key, a refused key
// and an unreachable node are failure results that say which
// ("host key mismatch for <addr>", "authentication failed for
// <user>@<addr>"), and nothing is retried behind the call: the next exec
// dials again.
//
// Each session runs in a small sh wrapper that changes to the workdir
// (falling back to the node's default, with the usual warning), exports
// the per-call environment, the markers and BGEXEC_SESSION=<random tag>,
// and execs the shell. Kill, timeout and Close signal the session's
// process group on the node and every process there whose environment
// carries the session's tag, so processes that left the group (setsid, a
// double fork) end too; only one that cleared its environment escapes,
// and kill says so if something is left. When `systemd-run --user
// --scope` works on the node, the shell runs in a transient scope that is
// signalled too. Exit codes and signal names are the ones the node
// reports. The local environment is not sent; the node's login
// environment is the base. Node sessions report resources (below) and name
// the ports that closed at their end. docs/node.md says how a session
// runs there.
//
// When the connection drops (the TCP connection fails, a keepalive goes
// unanswered for KeepaliveCountMax intervals, or a kill or check gets no
// answer within 10 s, which also bounds Close on a hung node), every running session
// on it ends "failed" with exitReason "lost", after one attempt to kill
// its process group over a new connection; its poll, wait and exit-event
// texts say "Connection to node <name> lost; the remote process may still
// be running." and whether that kill worked. The kill checks first that
// the group's leader, if it still lives, carries the session's tag, so a
// reused pid is never signalled. New sessions use the new connection.
//
// A remote shell's leftovers (`server &`, `setsid server &`) are kept as on
// this machine when they hold the session's output: OpenSSH keeps the
// channel open for them, bgexec lists the process group's members and the
// tagged processes from the node's /proc, and a command on a channel of its
// own waits there until they are gone. Like a leftover on this machine, one
// whose output was redirected away ends with the shell.
//
// Running node sessions report resources in list and poll, read on the
// node over the control shell (no new login) by one sh script for all
// the connection's sessions at once, in the background, at most once per
// 250 ms: a poll or list gets the last view at once (kill, and a
// session's first view, wait for a new one at most 1 s): cpuMs is the user and system CPU time of the session's live
// processes, memoryBytes the sum of their resident sets, tasks the
// number of its processes, and ports the TCP sockets they listen on
// (the node's /proc/net/tcp and tcp6). Its processes are its process
// group and every process carrying its tag. A node whose /proc cannot be
// read reports no resources.
//
// What differs from this machine: a write that runs into the
// write bound may have delivered up to 32 KiB more than it reports (an SSH
// write cannot be cancelled, so it stops between chunks); the emulator's
// answers to a remote terminal's queries (the cursor position, say) are
// dropped while a write to that session is in flight; Details.Pid is the
// pid on the node. docs/node.md has the details and a
// design note for Kubernetes pods as nodes.
//
// # Errors
//
// A tool-level failure (blank command, refused env key, unknown session,
// refused policy) is a [Result] with IsError set (JSON "isError": true),
// Details.Status "failed" and a text for the model that says what to fix.
// A command that ran is never IsError, however it ended: one that exits
// non-zero is "completed", with its exit code, and one ended by a signal,
// a timeout or a kill is "failed" with the reason. A Go error means the call could not be made: a nil request,
// malformed JSON or a wrong type in [Scope.Call], a closed registry
// ([ErrClosed]), or a context that ended first. Every result about an
// ended session carries exitSignal (null when no signal ended it), and
// every failed process result carries error, the reason its text gives.
//
// [Scope.Call] runs a call with keys the schema does not define, as the
// reference tools do, after the first line
// "Warning: ignored unknown parameter(s): a, b."; keys match exactly
// ("Command" is not "command"). A key given twice in one JSON object, env
// included, is refused and nothing runs. A workdir that is not an existing
// directory is refused too: a command meant for one directory never runs
// in another. A host equal to what auto resolves to runs.
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
