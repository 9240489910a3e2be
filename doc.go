// Package bgexec gives AI agent runtimes background shell sessions: an
// exec tool that runs a command and returns its output if it finishes
// within a yield window, or a session id if it does not, and a process tool
// to list, poll, page, write to, send keys to, resize, wait on, read the
// screen of, kill, clear and remove those sessions. The tool contract
// (parameters, defaults, texts) follows the exec/process tools of the
// OpenClaw agent gateway.
//
// This is a user's guide; how each part is built, and why, is in the
// repository's docs/ directory.
//
// # Life of a session
//
// Build a [Registry] with [NewRegistry] (a zero [Config] means the
// documented defaults), take a [Scope] per agent with [Registry.Scope],
// and call [Scope.Exec], [Scope.Process] or [Scope.Call]
// ([Registry.ToolDefinitions] has the tools' schemas). Exec runs
// [shell, "-c", command] (the shell is Config.Shell, else $SHELL, else
// sh; bash when $SHELL is fish) in its own process group (a new session
// with a controlling terminal under pty:true) and waits: if the command
// exits first, the result is the foreground output and nothing is kept.
// If the yield window (yieldMs, default 10 s) ends first, or
// background:true was passed, the session is backgrounded: the result is
// status "running" with a session id and the output so far (its last
// 2000 characters; on a PTY its last 20 lines). From then on:
//
//   - poll drains output not yet returned (optionally waiting for some);
//   - wait blocks until a pattern appears, a port opens, or the command ends;
//   - log pages the retained output by lines without draining it; line
//     numbers count from the first line the session ever printed, so an
//     offset names the same line however much is dropped later;
//   - write, send-keys, submit and paste feed its input;
//   - kill sends SIGTERM to the whole process group, then SIGKILL after
//     the grace period (Config.KillGrace, 3 s);
//   - clear and remove forget it.
//
// A finished backgrounded session is kept for the TTL (Config.JobTTLMs,
// 30 min) after its end, then reaped; a scope keeps at most 50
// (Config.MaxFinishedSessionsPerScope), forgetting the one that ended
// first. The timeout (timeoutSeconds, 30 min default; timeout is its older
// name) applies in the foreground and in the background; a timed-out
// command may have done part of its work, and its texts say so. exec's
// optional title (at most 120 characters) comes back in exec and poll
// details and list entries.
//
// Processes the shell leaves running (`npm run dev &`) are kept: exec
// returns with the shell's exit code and a line naming them, and the
// session runs on until the last of them ends (under
// Config.BackgroundDisabled they end with the shell). The request context
// bounds the call, never a backgrounded process. A command of any length
// runs. docs/sessions.md in the repository says how leftovers are tracked
// and long commands passed.
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
// retryInMs, 5 s after a poll with output, then 10 s, 30 s and 60 s for
// the empty polls after it.
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
// # Results and errors
//
// "The call failed" and "the command failed" are kept apart. A tool-level
// failure (blank command, refused env key, unknown session, refused
// policy, a spawn that failed, input the command did not take) is a
// [Result] with IsError set (JSON "isError": true), Details.Status
// "failed" and a text for the model that says what to fix. A refused
// exec runs nothing. A command that ran is never IsError, however it
// ended: one that exits non-zero is "completed" with its exit code, and
// one ended by a signal, a timeout or a kill is "failed" with the reason.
// Every result about an ended session carries exitSignal (null when no
// signal ended it), and every failed process result carries error, the
// reason its text gives.
//
// A Go error means the call could not be made: a nil request, malformed
// JSON or a wrong type in [Scope.Call], a closed registry ([ErrClosed]),
// or a context that ended first.
//
// [Scope.Call] takes the JSON arguments of either tool. Keys the schema
// does not define are ignored, as the reference tools do, after the first
// line "Warning: ignored unknown parameter(s): a, b."; keys match exactly
// ("Command" is not "command"). A key given twice in one JSON object, env
// included, is refused and nothing runs. A workdir that is not an existing
// directory is refused too: a command meant for one directory never runs
// in another. A host equal to what auto resolves to runs.
//
// Config.MaxCallWaitMs caps how long one call waits (yield window, poll
// and wait timeouts …): a call stopped there returns what it would at its
// own timeout and says so. The default is no cap; the MCP server sets
// 50000 ms, under the 60 s request timeout of common clients.
//
// # Exit notifications
//
// Each end of a backgrounded session is reported to the agent exactly
// once. A poll or wait that is waiting at that moment returns the exit
// line, and nothing else is sent; otherwise the registry sends one
// SystemEvent and one Heartbeat to the configured [Notifier], never under
// a lock. A poll or wait that reports the end after the event was sent
// withdraws it before it returns, when the Notifier implements
// [Retractor], so a runtime that
// drains its queue right after the poll never sees a duplicate wake; a
// Heartbeat that finds no events is nothing to do. No event is sent for a
// session the agent ended itself (kill, remove), a foreground run, or a
// quiet success (exit 0, no output) unless NotifyOnExitEmptySuccess is
// set; Config.NotifyOnExit false sends none. [Queue] is a ready-made
// Notifier with per-scope FIFOs that implements Retractor.
//
// # Exit notices in results
//
// Hosts that show the model nothing but tool results (MCP clients) can
// set Config.ExitNoticesInResults. Then the scope's next tool result
// (Exec, Process or Call, any action) starts with one line per
// backgrounded session that ended since, and a blank line:
//
//	[bgexec] Exec completed (warm-falcon, code 0) :: done
//
// The line is the event text after [NoticePrefix]; the same ends as for
// events are left out, and a notice is shown once. The Notifier, if any,
// still receives every event, for user interfaces; a runtime should not
// also feed those to the model.
//
// # Results that never reached the model
//
// A poll or wait hands out the output it drains once. When its result
// does not reach the model (the request was cancelled, writing the
// response failed), give it back with [Scope.Undelivered]: the output is
// returned again by the next poll, an exit it reported is reported again,
// and its exit notices come with the next result. A result whose call's
// context had ended by the time the call returned is given back by Exec,
// Process and Call themselves. docs/sessions.md in the repository has the
// exact rules for notifications, notices and give-back.
//
// # Output
//
// stdout and stderr are read concurrently into one aggregate per session,
// which keeps the last Config.MaxOutputChars characters (200000 code
// points; invalid UTF-8 becomes U+FFFD). Each stream also has a pending
// buffer for the next poll (Config.PendingMaxOutputChars, 30000); texts
// say when output was dropped at a cap. Memory per session stays bounded
// by the caps whatever the child prints, and
// Config.MaxOutputBytes (1 GiB) bounds what all sessions retain together:
// past it, sessions that ended first are cut to their last 2000
// characters; running sessions never are.
//
// Model-facing text is cleaned (escape sequences removed, other controls
// shown as \xNN) and uses LF: a PTY's CRLF becomes LF, and a lone CR (a
// progress bar's redraw) ends the line. Pipe output keeps its bytes; log
// lines and wait patterns leave out the CR of a CRLF. docs/sessions.md in
// the repository has the cleaning and line-ending rules in full.
//
// # Environment
//
// A child inherits the host's environment minus keys that change how
// shells, loaders, interpreters or package managers behave (NODE_OPTIONS,
// BASH_ENV, LD_*, …; Config.ExtraBlockedEnvKeys adds more). A call's env
// is merged over it; PATH, those keys, further override-only keys (HOME,
// GIT_SSH_COMMAND, proxies, …; Config.ExtraOverrideOnlyEnvKeys) and
// non-portable names are refused, and the call fails without running
// anything. Every child then gets OPENCLAW_SHELL=exec (Config.ShellMarker)
// and OPENCLAW_CLI=1, which no inherited or per-call value can replace.
// PAGER=cat and GIT_PAGER=cat are set for every child on this machine.
//
// With Config.NonInteractive, every child also gets [NonInteractiveEnv]
// (GIT_TERMINAL_PROMPT=0, GCM_INTERACTIVE=never,
// DEBIAN_FRONTEND=noninteractive, PIP_NO_INPUT=1) over inherited values,
// on this machine, in the sandbox and on nodes; a key the call's env sets
// keeps the call's value:
//
//	reg, err := bgexec.NewRegistry(bgexec.Config{NonInteractive: true})
//	// git clone https://… now fails at once instead of asking for a password.
//
// # Shell conveniences
//
// Options that make sessions behave more like an agent's own shell, all
// off by default. docs/shell.md in the repository has the full rules,
// examples and how each works.
//
// Head and tail. With Config.Truncation "head-tail", finished exec
// results and poll and wait results cut at a cap keep their beginning too
// (at most min(2000, MaxOutputChars/10) characters and 50 lines), then a
// marker naming the lines left out and the log offsets that hold them.
//
// Split streams. exec streams "split" also returns each stream's retained
// output in details.stdout and details.stderr of finished exec and poll
// results; the text stays merged. With pty it is a failure result.
//
// Shell state. With Config.KeepShellState, when a scope's exec ends in
// the foreground, its final working directory and exported variables
// (cd, export, unset, a virtualenv's PATH) are where the scope's next exec
// starts. A call's own workdir and env apply to that call only; variables
// the environment rules refuse are not carried (details.notCarried names
// them); background sessions, a kill or timeout, `exec prog` and a
// command's own EXIT trap leave the state alone. On nodes it is kept per
// node; in Docker containers and Kubernetes pods it is not kept.
// [Scope.ResetShellState] or the process action "reset-shell"
// forgets it.
//
// Full output in a file. With Config.SpillDir, each session's whole
// cleaned output is copied to a file of its own there (mode 0600, named
// after the session id). A result whose text was cut names it in a last
// paragraph and in details.outputFile. The file is deleted with its
// session (a foreground run's after the job TTL, or at once when its text
// was not cut); files of a process that dies without Close stay, so use a
// directory of your own. Quotas: Config.SpillMaxBytesPerSession (64 MiB)
// per file, Config.SpillMaxBytes (512 MiB) in all; past one, or on a
// write error, the file stops growing and results say it is incomplete.
//
// # PTY versus pipes
//
// Pipe sessions (the default) have separate stdout and stderr; stdin is
// closed at spawn (the child reads EOF) unless stdin:"pipe" is passed.
// PTY sessions (pty:true) run under a 120×30 terminal with TERM from the
// environment or xterm-256color, one merged stream, and an always
// writable terminal. They do not inherit COLUMNS and LINES (a per-call
// env may set them). send-keys encodes arrow, Home and End keys for the
// cursor-key mode the program set, so before its first output they fail
// with "… cursor key mode is not known yet. Poll or log until startup
// output appears, then retry send-keys." A write to a terminal in
// canonical mode is cut by the kernel at 4095 bytes per line.
//
// # Terminal screens
//
// The process action screen returns what a terminal would show of a PTY
// session (vim, less, top), one line per row, ending with "[cursor row R
// col C; alternate screen on|off]"; a blank one says "(blank screen: no
// output yet after N ms)" or "(blank screen)". attributes: true marks bold,
// underlined and reverse-video runs with ⟦b⟧…⟦/b⟧, ⟦u⟧…⟦/u⟧ and ⟦r⟧…⟦/r⟧.
// Screen on a pipe session fails with "Session <id> has no terminal; use
// poll or log."; after the end the last screen is kept until the session is
// cleared.
//
//   - Input the program has not answered yet is given time: screen (and
//     poll and wait with idleMs) first wait for output after the agent's
//     last input, bounded by their timeout; idleMs then counts quiet from
//     the later of the call's start, the last input and the last output.
//     Without a timeout, a poll's or screen's idle wait stops at 5000 ms.
//   - A screen consumes the pending output it shows (the next poll or
//     wait returns what came after) and does not report an exit.
//   - A wait returns at most the last 20 lines (2000 characters) of new
//     output, with the log offset and limit of the rest.
//
// docs/terminal.md in the repository says how the emulator is fed and why
// this one.
//
// # Waiting for input
//
// When a running session has printed nothing for Config.InputWaitIdleMs
// (default 15000; env OPENCLAW_PROCESS_INPUT_WAIT_IDLE_MS) and its
// foreground process is blocked reading its stdin or terminal, poll ends
// with "No new output for Ns; this session may be waiting for input. Use
// process write, send-keys, submit, or paste to provide input." in place of
// "Process still running.", log adds the same line, and the list line
// carries "[input-wait]". poll and log of a running session carry details
// stdinWritable, waitingForInput, idleMs and lastOutputAt (Unix ms). A pipe
// session with stdin:"pipe" whose output ends in an unfinished line (or is
// empty) gets the shorter hint "(waiting for input?)" after idleMs (500 ms
// without it) when it is blocked reading. The decision is the kernel's,
// never a guess from the output; it needs ptrace access to the child
// (docs/terminal.md in the repository says when that holds), and node
// sessions are never reported as waiting.
//
// # Containment
//
// Every session leads its own process group, and kill, timeout, remove
// and Close signal the whole group: SIGTERM, then SIGKILL after the grace
// period. With [ContainmentAuto] (the default), when this process may
// create child cgroups in a cgroup v2 hierarchy and a probe child runs in
// one, each session also runs in a cgroup of its own from its first
// instruction, and its end goes through cgroup.kill: children that called
// setsid or double-forked end too. Otherwise (or with [ContainmentOff])
// such escapers survive, and kill says which may have escaped.
// [ContainmentRequired] makes NewRegistry fail without cgroups.
// Containment fails closed: when a cgroup file cannot be read or written,
// kill answers "Termination requested" with a warning instead of "Killed
// session", and the cgroup is killed again until it is seen empty.
//
// If the embedding process dies without calling Close, even by SIGKILL,
// its sessions do not live on: two watchdog processes per registry kill
// them when the host's lifeline closes. The watchdog is not a security
// boundary: where sessions must not touch the host, run them as another
// user or in the sandbox. [Registry.Containment] returns a
// [ContainmentReport] of what holds on the running host. docs/containment.md
// in the repository has cgroup namespaces, the watchdog and the probe.
//
// # Limits and the resource view
//
// [Config.Limits] gives every session a memory limit, a task limit (default
// 4096, so a fork bomb fails its own forks and nobody else's) and a CPU
// quota, through its cgroup (v2 controllers the host's cgroup enables for
// its children, else a hybrid host's v1 hierarchies). A limit no controller
// can apply fails NewRegistry under ContainmentRequired and is logged as a
// warning otherwise (Config.Logger, else slog.Default); the default task
// limit only warns. The sessions' tasks together are capped below the
// host's own pids.max, keeping a reserve for the host
// (ContainmentReport.TaskBudget). A session the OOM killer hit ends
// "failed" with exitReason "oom" and a text such as "Command killed: out of
// memory (limit 64 MiB).", unless it was killed or timed out first or
// exited 0.
//
// Quotas are checked before anything is spawned: Config.MaxSessions (1024)
// and Config.MaxSessionsPerScope (64) count running sessions, foreground
// runs included, and a session is refused when it would leave the host
// fewer than a twentieth of RLIMIT_NOFILE (at least 64) free descriptors
// once the hosts gave up what they hold for sessions not started yet
// (pooled sandboxes, the descriptors of spare cgroups).
// Config.MaxTimeoutSec caps every exec timeout, "none" included, with a
// warning line when the call asked for more.
//
// list entries and poll details of running sessions carry resources:
// cpuMs, memoryBytes, tasks and ports (TCP ports its processes listen on);
// the list line ends with "  [:3000, 412 MiB]". A view is at most 250 ms
// old (kill reads anew), and the ports last seen are named when the
// session ends ("Its listening port :3000 is closed."). docs/containment.md
// in the repository has the files each figure and limit comes from, the
// task budget and the output sweep.
//
// # Approvals
//
// Config.Security ("full", "allowlist", "deny"), Config.Ask ("off",
// "on-miss", "always") and Config.Allowlist decide which commands run; a
// call may only make them stricter. ask "on-miss" asks only when security
// is "allowlist" and the allowlist misses. Under "allowlist" the command
// line is parsed as shell (mvdan.cc/sh), and it is allowlisted only when
// every command in it (pipelines, substitutions, subshells, function
// bodies …) matches an entry and nothing in it is only known at run time
// (eval, sh -c, $cmd, xargs, an output redirection to a file …). An entry
// is a program name or absolute path, optionally followed by an argument
// prefix: "git status" allows git status and its further arguments. A
// bare name does not cover the options through which common tools run
// another program (git -c, sed e, python -c …). A line that does not parse
// is refused with the parser's message. The [Approver] gets every parsed
// command in [ApprovalRequest.Commands].
//
// The allowlist limits what the shell starts, not what a listed program
// then does (a listed python3 runs any script): the boundary against a
// hostile command is the sandbox host, not the policy. A nil Approver
// refuses what needs approval. An Approver that cannot decide now returns
// [ErrApprovalDeferred]: exec returns at once with status
// "approval-pending", details approvalId, expiresAtMs and allowedDecisions,
// and "Approval required (id <id>): <command>. Nothing has run yet; …".
// [Scope.Decide] later runs it as a background session (every other check
// made again) or refuses it; the agent hears "Exec approved (approval
// <id>): running as session …" or "Exec denied (approval <id>): …" like a
// session's end. Unanswered approvals expire after Config.ApprovalTimeout
// (10 minutes). "allow-always" adds allowlist rules, kept across restarts
// through Config.ApprovalStore. Another scope's id is [ErrUnknownApproval];
// Close drops pending approvals. [Scope.Check] says beforehand, without
// running anything, whether a call would run, be refused or need approval.
// docs/approvals.md in the repository has the full list of refused
// constructs and how the parser reads options.
//
// # Audit trail
//
// Config.Observer sees every exec call and session, foreground runs,
// refusals, kills and removes included, as [Event] values of six kinds:
// "decision" (what the approval rules decided, by whom and why), "spawn"
// (command, workdir, host, and the names but never the values of the
// call's env overrides), "input" (its size; its bytes only with
// Config.ObserveInputData), "control" (kill, remove, clear), "end"
// (exit, reason, duration, output bytes, CPU time, peak memory) and
// "result" (each exec call's status and its own duration).
//
// Events are delivered in order by one goroutine through a bounded queue
// (Config.ObserverQueue, 4096): a slow observer never blocks a call; when
// the queue is full the event is dropped and counted
// ([Registry.ObserverStats]). Close delivers what is queued. With
// Config.ObserverRequired, an exec or an input waits until the observer
// took its events, and fails (nothing spawned, nothing written) when a
// [CheckedObserver] returns an error, the queue is full or the context
// ends; a kill is never held back. [NewAuditLog] writes one JSON line per
// event; a [SpawnEnvObserver] adds environment entries to each child (the
// OpenTelemetry module's TRACEPARENT). docs/audit.md in the repository has
// each kind's fields.
//
// # The sandbox host
//
// With [Config.Sandbox] set, the host "auto" is "sandbox" and every
// command runs in bubblewrap (0.10.0 or newer, or Debian 12's
// 0.8.0-2+deb12u1) with namespaces of its own (network too, unless
// Sandbox.Network), no capabilities and a seccomp filter. The root is
// read-only; only the working directory, Sandbox.WritablePaths, a private
// /tmp and the hidden paths (empty tmpfs: $HOME, Sandbox.HidePaths and,
// without network, /run) are writable. NewRegistry fails, naming the
// refused feature, when the sandbox cannot be built here. A workdir must
// lie, links resolved, in the default workdir, a WritablePaths or a
// ReadOnlyPaths entry, and not in a hidden path; anything else is a
// failure result naming the allowed directories. A root host's commands
// can read what root can read (hide such paths with Sandbox.HidePaths).
// Processes a shell leaves running (`server &`) end with the shell: run a
// server as the command itself, in the background. A signal death from
// inside the sandbox is exit code 128+n. elevated:true runs one call on
// this machine, only when Config.Elevation allows it for the scope;
// nothing falls back to the gateway on a sandbox failure.
// docs/sandbox.md in the repository says how the sandbox is built, and
// why bubblewrap.
//
// # Nodes over SSH
//
// With Config.Host "node", every exec runs on one of [Config.Nodes] (the
// call's node, else [Config.DefaultNode]) over SSH; nothing is installed
// on the node. There is one connection per node, dialed on first use and
// watched by a keepalive every [Node.KeepaliveInterval] (15 s). Host keys
// are always checked against [Node.KnownHostsFile]; a mismatch, an
// unknown or refused key and an unreachable node are failure results that
// say which, and the next exec dials again.
//
// The node's login environment is the base (the local one is not sent).
// Kill, timeout and Close reach the session's process group and every
// process carrying its tag, so setsid and double forks end too. Exit
// codes and signal names are the node's. When the connection drops,
// every running session on it ends "failed" with exitReason "lost", after
// one attempt to kill it over a new connection, and its texts say
// "Connection to node <name> lost; the remote process may still be
// running." Running node sessions report resources and closed ports like
// local ones (a node without a readable /proc reports none); they are
// never reported as waiting for input, and Details.Pid is the pid on the
// node. docs/node.md in the repository has the protocol and the
// differences from this machine.
//
// # Containers: Docker and Kubernetes
//
// With [Config.Docker] set, the host "docker" runs each session in a
// Docker container of its own, made from [Docker.Image] (never pulled)
// on the daemon at [Docker.Host], with a spare container kept ready. The
// host "auto" is "docker" when Docker is set and Sandbox is not, and so is
// "sandbox" then; an elevated call runs on this machine. The container
// sees only its mounts (by default the workspace, read-write at the same
// path; a call's workdir must lie inside one), has no network but
// loopback unless [Docker.Network], and carries the session's memory,
// process and CPU caps. Kill, timeout and Close reach every process of
// the session, wherever it moved, and the container is removed at the
// end. A session the memory cap ends is "oom"; resources are the
// container's stats, without ports. When the daemon goes away, running
// sessions end "failed" with exitReason "lost". A signal bgexec did not
// send (a crash inside) is exit code 128+n.
//
// With [Config.Kubernetes] set (what New of the module
// github.com/bgexec/bgexec/kube returns), the host "kubernetes" runs
// commands in a container of a pod through the API server's pods/exec
// ("auto" picks it when neither Sandbox nor Docker is set);
// the session's processes are tagged and signalled there, and a stream
// or API server that goes away ends them "lost". docs/docker.md and
// docs/kubernetes.md in the repository have the configuration, what is
// not supported and how each is tested.
//
// # Concurrency and resources
//
// All exported methods of [Registry], [Scope] and [Queue] are safe for
// concurrent use. [Registry.Close] kills every running session, waits for
// every goroutine the registry started, and is idempotent; a Notifier or
// Observer call in flight is waited for only until Close's context ends.
// A registry holds three goroutines (a fourth with Config.Observer) and
// two watchdog processes; a session holds one owner goroutine and one
// reader per stream, and no OS thread while idle. A child gets stdin,
// stdout and stderr and no other descriptor of the host, but for the two
// of its own that docs/sessions.md in the repository names, with every
// goroutine. Sessions live in memory and are lost when the process exits;
// nothing is written to disk but what the Config asks for (SpillDir, an
// audit log, an ApprovalStore).
//
// # Platform
//
// Sessions run on Linux (kernel 5.3+ for pidfds; older kernels use a
// blocking waitid per session), contained by process groups and, where
// available, cgroups. The package builds and vets on other systems (macOS
// among them), so code that embeds it compiles on a developer's machine,
// but there [NewRegistry] returns an error wrapping
// [errors.ErrUnsupported]: nothing runs uncontained.
package bgexec
