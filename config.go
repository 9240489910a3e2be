package bgexec

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/bgexec/bgexec/internal/host/sandbox"
	sshhost "github.com/bgexec/bgexec/internal/host/ssh"
)

// Documented defaults and clamps. They are constants, never mutated.
const (
	// DefaultYieldMs is the default yield window of exec in milliseconds.
	DefaultYieldMs = 10000
	// MinYieldMs and MaxYieldMs clamp a per-call or configured yield window (ms).
	MinYieldMs = 10
	// MaxYieldMs is the largest yield window in milliseconds.
	MaxYieldMs = 120000
	// DefaultTimeoutSec is the default exec timeout in seconds.
	DefaultTimeoutSec = 1800
	// DefaultJobTTLMs is how long a finished background session is kept (ms).
	DefaultJobTTLMs = 1800000
	// DefaultMaxFinishedSessionsPerScope is how many finished background
	// sessions a scope keeps at most.
	DefaultMaxFinishedSessionsPerScope = 50
	// MinJobTTLMs and MaxJobTTLMs clamp the finished-session TTL (ms).
	MinJobTTLMs = 60000
	// MaxJobTTLMs is the largest finished-session TTL in milliseconds.
	MaxJobTTLMs = 10800000
	// DefaultMaxOutputChars is the aggregate output cap per session, in characters (code points).
	DefaultMaxOutputChars = 200000
	// DefaultPendingMaxOutputChars is the per-stream cap on output not yet
	// returned by poll, in characters (code points).
	DefaultPendingMaxOutputChars = 30000
	// MinOutputChars and MaxOutputChars clamp both output caps (characters).
	MinOutputChars = 1000
	// MaxOutputChars is the largest output cap in characters.
	MaxOutputChars = 200000
	// DefaultKillGrace is the time between SIGTERM and SIGKILL.
	DefaultKillGrace = 3 * time.Second
	// DefaultDrainTimeout bounds how long output is still read after the
	// command exited, while something outside its process group holds the pipe.
	DefaultDrainTimeout = 2 * time.Second
	// DefaultShellMarker is the environment entry every child gets unless
	// Config.ShellMarker names another.
	DefaultShellMarker = "OPENCLAW_SHELL=exec"
	// CLIMarker is an environment entry every child gets in addition to the
	// shell marker, as the reference gives its host children. It is not
	// configurable; a ShellMarker with the key OPENCLAW_CLI replaces it.
	CLIMarker = "OPENCLAW_CLI=1"
	// maxTimeoutSec bounds an absurd per-call timeout (30 days).
	maxTimeoutSec = 30 * 24 * 3600
)

// Environment variables read by [ConfigFromEnv]. Their names are part of
// the contract. Where a setting has two names, the OPENCLAW_BASH_ one is
// read first and the older PI_BASH_ one is its alias, used when the first
// is unset or blank.
const (
	EnvYieldMs               = "OPENCLAW_BASH_YIELD_MS"
	EnvMaxOutputChars        = "OPENCLAW_BASH_MAX_OUTPUT_CHARS"
	EnvPendingMaxOutputChars = "OPENCLAW_BASH_PENDING_MAX_OUTPUT_CHARS"
	EnvJobTTLMs              = "OPENCLAW_BASH_JOB_TTL_MS"
	EnvYieldMsAlias          = "PI_BASH_YIELD_MS"
	EnvMaxOutputCharsAlias   = "PI_BASH_MAX_OUTPUT_CHARS"
	EnvJobTTLMsAlias         = "PI_BASH_JOB_TTL_MS"
	EnvNotifyOnExit          = "OPENCLAW_EXEC_NOTIFY_ON_EXIT"
	EnvNotifyOnExitEmpty     = "OPENCLAW_EXEC_NOTIFY_ON_EXIT_EMPTY_SUCCESS"
	EnvInputWaitIdleMs       = "OPENCLAW_PROCESS_INPUT_WAIT_IDLE_MS"
)

// Config configures a [Registry]. The zero value means the documented
// defaults; [NewRegistry] copies it and never writes back into it. A Config
// may be shared between goroutines as long as nobody mutates it.
type Config struct {
	// YieldMs is the default yield window in milliseconds (tools.exec.backgroundMs).
	// Zero means 10000. Clamped to 10 … 120000.
	YieldMs int
	// TimeoutSec is the default exec timeout in seconds (tools.exec.timeoutSec).
	// Zero means 1800; negative means no timeout.
	TimeoutSec float64
	// JobTTLMs is how long a finished background session is kept, in
	// milliseconds, measured from its end (tools.exec.cleanupMs). Zero means
	// 1800000. Clamped to 60000 … 10800000.
	JobTTLMs int64
	// MaxFinishedSessionsPerScope is how many finished background sessions
	// one scope keeps: when one more ends, the one that ended first is
	// forgotten, as if its TTL had passed. Zero means 50; negative means no
	// limit but the TTL.
	MaxFinishedSessionsPerScope int
	// MaxOutputChars caps the aggregated output kept per session, in
	// characters (Unicode code points). Zero means 200000. Clamped to 1000 … 200000.
	MaxOutputChars int
	// PendingMaxOutputChars caps, per stream, the output a poll has not yet
	// returned. Zero means 30000. Clamped to 1000 … 200000 and never above MaxOutputChars.
	PendingMaxOutputChars int
	// NotifyOnExit controls exit notifications of backgrounded sessions
	// (tools.exec.notifyOnExit). Nil means true.
	NotifyOnExit *bool
	// NotifyOnExitEmptySuccess also notifies for successful runs that printed
	// nothing (tools.exec.notifyOnExitEmptySuccess). Default false.
	NotifyOnExitEmptySuccess bool
	// Notifier receives exit notifications. Nil means none are sent.
	Notifier Notifier
	// KillGrace is the time between SIGTERM and SIGKILL for kill, timeout,
	// remove and Close. Zero means 3s.
	KillGrace time.Duration
	// DrainTimeout bounds how long output is still read after the command's
	// process group ended while a process outside it (one that called setsid)
	// keeps the pipe open. Zero means 2s.
	DrainTimeout time.Duration
	// Shell is the shell binary; the command runs as [Shell, "-c", command].
	// Empty means $SHELL, or sh when $SHELL is unset; when $SHELL is fish,
	// bash from PATH (else sh). A name without a slash is looked up in PATH
	// once, by NewRegistry; if it is not found then, each exec looks again.
	Shell string
	// Workdir is the default working directory. Empty means the process's
	// cwd, else $HOME when the cwd no longer exists.
	Workdir string
	// BackgroundDisabled makes exec synchronous: the embedding runtime does not
	// offer the process tool, so yieldMs and background are ignored (with a warning).
	// Default false.
	BackgroundDisabled bool
	// ShellMarker is the "KEY=VALUE" entry added to every child's
	// environment. Empty means "OPENCLAW_SHELL=exec". Every child also gets
	// OPENCLAW_CLI=1 ([CLIMarker]) whatever the marker is. Both are set
	// after the inherited and per-call environment, so they always win.
	ShellMarker string
	// ExtraBlockedEnvKeys extends the environment blocklist (see the package doc):
	// these keys are dropped from the inherited environment and refused as overrides.
	// Nil adds none.
	ExtraBlockedEnvKeys []string
	// ExtraOverrideOnlyEnvKeys extends the list of keys refused as per-call
	// overrides but kept when inherited. Nil adds none.
	ExtraOverrideOnlyEnvKeys []string
	// Host is the configured exec host (tools.exec.host): "auto" (default),
	// "gateway", "sandbox", "node", "docker" or "kubernetes". "auto"
	// resolves to "sandbox" when Sandbox is set, else to "docker" when
	// Docker is set, else to "kubernetes" when Kubernetes is set, else to
	// "gateway" (this machine). "sandbox" needs Sandbox, or Docker, which
	// then backs it; "docker" needs Docker and "kubernetes" needs
	// Kubernetes; any host but "sandbox" with Sandbox set is refused as
	// contradictory; "node" runs every exec over SSH on one of Nodes.
	Host string
	// Nodes are the machines that run commands when Host is "node", by
	// name (see [Node]). NewRegistry validates every entry, whatever the
	// host, and fails when Host is "node" and there is none. Nil: no nodes.
	Nodes map[string]Node
	// Docker runs each command in a container of its own on a Docker
	// daemon when Host is "docker" (see [Docker]). Nil: no Docker host.
	Docker *Docker
	// Kubernetes runs commands in Kubernetes pods when Host is
	// "kubernetes": pass what New of the module
	// github.com/bgexec/bgexec/kube returns (a module of its own, so
	// that client-go stays out of this one; see docs/kubernetes.md). A
	// registry that NewRegistry returned owns it and closes it in Close;
	// when NewRegistry fails, the caller still owns it. Nil: no
	// Kubernetes host.
	Kubernetes PodHosts
	// DefaultNode names the node of an exec call that gives none. Empty
	// means the only node when exactly one is configured; with several, a
	// call without node is a failure result listing them.
	DefaultNode string
	// Security is the configured exec security level: "full" (default),
	// "allowlist" or "deny". A call may only make it stricter.
	Security string
	// Ask is the configured approval mode: "off" (default), "on-miss" or
	// "always". A call may only make it stricter.
	Ask string
	// Allowlist lists the rules for commands that run without approval
	// under security "allowlist" (and that skip the Approver under ask
	// "on-miss"). An entry is a program, optionally followed by an
	// argument prefix, split on white space: "git" allows git,
	// "git status" allows only commands whose words start with git
	// status, "python3 -m pytest" only that module. The program is a
	// name, which matches that command name or an absolute path to the
	// same file on PATH, or an absolute path. The command line is parsed
	// as shell, and every command in it (in pipelines, lists,
	// substitutions, subshells, function bodies …) must match an entry;
	// constructs whose program is only known at run time (eval, sh -c,
	// $cmd, xargs, output redirections to files …) never do. A bare name
	// does not cover the options through which the common tools run
	// another program (git -c and aliases, sed e, tar --to-command, ssh -o
	// ProxyCommand, python3 -c or -m, an interpreter reading its program
	// from standard input …). Beyond those, a listed program runs whatever
	// its arguments and inputs make it run: a listed python3 runs any
	// script, a listed git runs hooks. Empty means no command is
	// allowlisted. See the package documentation's "Approvals" section.
	Allowlist []string
	// Approver decides commands that need approval (ask "always", or "on-miss"
	// for commands not on the allowlist). Nil refuses them.
	Approver Approver
	// Elevation gates elevated:true. The zero value refuses elevated runs.
	Elevation ElevationPolicy
	// Containment selects how sessions are contained. ContainmentAuto (the
	// zero value) runs each session in its own cgroup v2 child cgroup when
	// this process may create one, so kill, timeout, remove and Close also
	// end processes that left the process group; otherwise it falls back to
	// the process group. ContainmentOff always uses the process group;
	// ContainmentRequired makes NewRegistry fail without cgroups.
	Containment Containment

	// Limits are the resource limits of each session (memory, tasks, CPU),
	// applied through its cgroup. The zero value means the default task
	// limit (4096, capped to what the host's own pids.max leaves: see
	// Limits.Tasks) and no memory or CPU limit. A limit set here that no
	// cgroup controller can apply makes NewRegistry fail under
	// ContainmentRequired, and is logged as a warning otherwise;
	// [Registry.Containment] says what is in force.
	Limits Limits
	// MaxSessions is how many sessions may run at once in the registry,
	// foreground runs included; an exec beyond it is refused before
	// anything is spawned. Zero means 1024.
	MaxSessions int
	// MaxSessionsPerScope is how many sessions may run at once in one
	// scope (agent). Zero means 64.
	MaxSessionsPerScope int
	// MaxTimeoutSec is a hard cap in seconds on every exec timeout: no
	// call may run longer or disable its timeout (timeout 0 or negative
	// gets the cap), and a call that asked for more gets a warning line.
	// It also caps TimeoutSec, and how long a process poll or wait blocks
	// (silently). Zero means no cap.
	MaxTimeoutSec float64
	// MaxOutputBytes is the budget in bytes for the output all sessions
	// retain together. Past it, the retained output of the sessions that
	// ended first is cut to its last 2000 characters (with the retention
	// notice); a running session's output is never cut for it. Zero
	// means 1 GiB.
	MaxOutputBytes int64
	// Logger receives the registry's warnings (a limit that cannot be
	// applied). Nil means slog.Default().
	Logger *slog.Logger
	// Observer sees every exec call and session: each spawn, policy
	// decision, input, kill/remove/clear and end (see [Event] and the
	// package documentation's "Audit trail"). Events are queued and
	// delivered in order by one goroutine the registry owns, so a slow
	// observer never blocks a call; past ObserverQueue waiting events,
	// new ones are dropped and counted ([Registry.ObserverStats]). Nil
	// (the default) observes nothing. [NewAuditLog] writes JSON lines.
	Observer Observer
	// ObserverRequired makes each exec (and each input to a session) wait
	// until the observer took its events before anything runs: when the
	// observer fails (a [CheckedObserver] returning an error), its queue
	// is full, or the call's context ends first, the exec is a failure
	// result and nothing is spawned (nothing is written). Needs Observer.
	// Default false.
	ObserverRequired bool
	// ObserveInputData puts the bytes of each write, send-keys, paste and
	// submit into the input event (Event.Data). Default false: events
	// carry only the size, since input may hold secrets.
	ObserveInputData bool
	// ObserverQueue is how many events may wait for the observer. Zero
	// means DefaultObserverQueue (4096).
	ObserverQueue int
	// ExitNoticesInResults puts the exit notices of a scope's backgrounded
	// sessions into that scope's next tool result, for hosts that show the
	// model nothing but tool results (MCP clients). Default false. See
	// [Scope.Exec] and the package documentation's "Exit notices in
	// results" section.
	ExitNoticesInResults bool
	// MaxCallWaitMs caps how long one tool call waits, in milliseconds: the
	// yield window of exec, the timeout of poll and wait, and every other
	// action that waits. A call that stops at the cap returns the current
	// state and says so in its text. Zero or negative means no cap beyond
	// each parameter's own maximum. Background-disabled (synchronous) exec
	// runs are not capped: they cannot return before the end.
	MaxCallWaitMs int
	// Sandbox, when set, runs every command inside bubblewrap (see
	// [Sandbox]) and makes the host "auto" resolve to "sandbox". Nil (the
	// default) runs commands on this machine. An elevated call that
	// Elevation allows runs outside it. NewRegistry fails when bwrap is
	// missing or cannot create the sandbox here.
	Sandbox *Sandbox
	// InputWaitIdleMs is how long, in milliseconds, a running session must
	// have printed nothing before poll, log and list say it may be waiting
	// for input (when its foreground process is blocked reading its stdin
	// or terminal; see the package documentation's "Waiting for input").
	// Zero means DefaultInputWaitIdleMs (15000); env
	// OPENCLAW_PROCESS_INPUT_WAIT_IDLE_MS.
	InputWaitIdleMs int
	// ApprovalTimeout is how long a deferred approval (see
	// [ErrApprovalDeferred]) stays pending before it expires as a denial.
	// Zero means DefaultApprovalTimeout (10 minutes).
	ApprovalTimeout time.Duration
	// ApprovalStore, when set, keeps the rules that allow-always decisions
	// add, so they last across restarts: NewRegistry loads them, each
	// allow-always saves one. Nil keeps them in memory only.
	ApprovalStore ApprovalStore

	// Agent-shell options (opt-in; the zero values keep the default
	// behaviour). See the package documentation's "Shell conveniences".

	// NonInteractive adds [NonInteractiveEnv] (GIT_TERMINAL_PROMPT=0,
	// GCM_INTERACTIVE=never, DEBIAN_FRONTEND=noninteractive,
	// PIP_NO_INPUT=1) to every child's environment, over inherited
	// values; a key the call's env sets keeps the call's value. Default
	// false.
	NonInteractive bool
	// Truncation says what model-facing text keeps when output was cut:
	// "tail" (the default; "" means it) keeps the end, with the retention
	// notice at the top; "head-tail" keeps the first part too (at most
	// min(2000, MaxOutputChars/10) characters and 50 lines, taken out of
	// MaxOutputChars) and puts a marker between the parts that names how
	// many lines were left out, which of them are gone for good and the
	// log offsets that still hold the rest. It applies to finished exec
	// results and to poll and wait results whose poll buffer dropped
	// output; see the package documentation's "Shell conveniences".
	// Another value makes NewRegistry fail.
	Truncation string
	// KeepShellState carries shell state between a scope's execs: after
	// a foreground exec ends (or one that ended within its yield window),
	// its final working directory and exported variables become the
	// starting point of the scope's next exec, as if both ran in one
	// shell. A call's own workdir and env apply to that call only; what
	// the command changes (cd, export, unset, a venv activation's PATH)
	// carries, except variables the environment rules refuse as
	// overrides (the result names them). Background sessions leave the
	// state alone. [Scope.ResetShellState] and the process action
	// "reset-shell" forget it. On nodes (Host "node") it is kept per
	// node; in Docker containers and Kubernetes pods it is not kept.
	// Default false. See the package documentation's "Shell
	// conveniences".
	KeepShellState bool
	// SpillDir, when set, is a writable directory where each session's
	// whole output (the cleaned text log shows) is copied to a file as it
	// arrives, so a result whose text was cut can name the file that
	// still holds all of it. The file is deleted with the session (see
	// the package documentation's "Full output in a file"). Default ""
	// (off). NewRegistry fails when it is not a writable directory.
	SpillDir string
	// SpillMaxBytesPerSession caps each session's spill file, in bytes;
	// past it the file stops growing and results say it is incomplete.
	// Zero means DefaultSpillMaxBytesPerSession (64 MiB); a negative value
	// makes NewRegistry fail. Used only with SpillDir.
	SpillMaxBytesPerSession int64
	// SpillMaxBytes caps the spill files of all the registry's sessions
	// together, in bytes; past it they stop growing, like at the
	// per-session cap. Zero means DefaultSpillMaxBytes (512 MiB); a
	// negative value makes NewRegistry fail. Used only with SpillDir.
	SpillMaxBytes int64
}

// Defaults of the input-wait hint and of deferred approvals.
const (
	// DefaultInputWaitIdleMs is the default of Config.InputWaitIdleMs, in
	// milliseconds.
	DefaultInputWaitIdleMs = 15000
	// DefaultApprovalTimeout is the default of Config.ApprovalTimeout.
	DefaultApprovalTimeout = 10 * time.Minute
)

// ConfigFromEnv returns the defaults overlaid with the environment
// variables OPENCLAW_BASH_YIELD_MS, OPENCLAW_BASH_MAX_OUTPUT_CHARS,
// OPENCLAW_BASH_PENDING_MAX_OUTPUT_CHARS and OPENCLAW_BASH_JOB_TTL_MS
// (clamped as documented on [Config]; PI_BASH_YIELD_MS,
// PI_BASH_MAX_OUTPUT_CHARS and PI_BASH_JOB_TTL_MS are read when the
// OPENCLAW_BASH_ name is unset or blank), plus OPENCLAW_EXEC_NOTIFY_ON_EXIT and
// OPENCLAW_EXEC_NOTIFY_ON_EXIT_EMPTY_SUCCESS ("true"/"false"/"1"/"0"),
// and OPENCLAW_PROCESS_INPUT_WAIT_IDLE_MS (positive milliseconds).
// A value that does not parse is ignored and the default stays. getenv is
// usually os.Getenv; nil means os.Getenv. Safe for concurrent use when
// getenv is.
func ConfigFromEnv(getenv func(string) string) Config {
	if getenv == nil {
		getenv = os.Getenv
	}
	var c Config
	if v, ok := envInt(getenv, EnvYieldMs, EnvYieldMsAlias); ok {
		c.YieldMs = int(clamp(v, MinYieldMs, MaxYieldMs))
	}
	if v, ok := envInt(getenv, EnvMaxOutputChars, EnvMaxOutputCharsAlias); ok {
		c.MaxOutputChars = int(clamp(v, MinOutputChars, MaxOutputChars))
	}
	if v, ok := envInt(getenv, EnvPendingMaxOutputChars); ok {
		c.PendingMaxOutputChars = int(clamp(v, MinOutputChars, MaxOutputChars))
	}
	if v, ok := envInt(getenv, EnvJobTTLMs, EnvJobTTLMsAlias); ok {
		c.JobTTLMs = clamp(v, MinJobTTLMs, MaxJobTTLMs)
	}
	if v, err := strconv.ParseBool(strings.TrimSpace(getenv(EnvNotifyOnExit))); err == nil {
		c.NotifyOnExit = &v
	}
	if v, err := strconv.ParseBool(strings.TrimSpace(getenv(EnvNotifyOnExitEmpty))); err == nil {
		c.NotifyOnExitEmptySuccess = v
	}
	if v, ok := envInt(getenv, EnvInputWaitIdleMs); ok && v > 0 {
		c.InputWaitIdleMs = int(min(v, math.MaxInt32))
	}
	return c
}

// envInt reads the first of keys that is set and not blank.
func envInt(getenv func(string) string, keys ...string) (int64, bool) {
	var s string
	for _, k := range keys {
		if s = strings.TrimSpace(getenv(k)); s != "" {
			break
		}
	}
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v != v { // NaN
		return 0, false
	}
	if v > 1e15 {
		v = 1e15
	} else if v < -1e15 {
		v = -1e15
	}
	return int64(v), true
}

func clamp[T int | int64 | float64](v, lo, hi T) T {
	return max(lo, min(v, hi))
}

// settings is the resolved, validated form of Config used internally.
type settings struct {
	yield          time.Duration
	timeout        time.Duration // 0 = none
	ttl            time.Duration
	maxFinished    int // finished sessions kept per scope; 0 = no limit
	maxChars       int
	pendingChars   int
	notifyOnExit   bool
	notifyEmpty    bool
	notifier       Notifier
	killGrace      time.Duration
	drainTimeout   time.Duration
	shell          string
	shellPath      string // shell resolved against PATH; "" if it was not found
	workdir        string
	backgroundOff  bool
	marker         string
	host           string // where commands run: "gateway", "sandbox", "node", "docker" or "kubernetes"
	hostSetting    string // the configured value: "auto" or the host
	security       securityLevel
	ask            askMode
	allowlist      []string
	approver       Approver
	elevation      ElevationPolicy
	extraBlocked   []string
	extraOverrides []string
	limitSettings
	notices     bool                      // ExitNoticesInResults
	maxCallWait time.Duration             // 0 = no cap
	sandbox     *sandbox.Plan             // nil: commands run on the gateway
	sandboxPool int                       // sandboxes started ahead (Sandbox.Pool resolved); 0: none
	nodes       map[string]sshhost.Config // validated Nodes; nil without any
	defaultNode string
	inputWait   time.Duration // InputWaitIdleMs
	approvalTTL time.Duration // ApprovalTimeout
	approvals   ApprovalStore
	observer    observerSettings
	shellOpts
}

func resolveConfig(c Config, getenv func(string) string) (settings, error) {
	s := settings{
		notifyOnExit:   c.NotifyOnExit == nil || *c.NotifyOnExit,
		notifyEmpty:    c.NotifyOnExitEmptySuccess,
		notifier:       c.Notifier,
		backgroundOff:  c.BackgroundDisabled,
		approver:       c.Approver,
		elevation:      c.Elevation,
		allowlist:      append([]string(nil), c.Allowlist...),
		extraBlocked:   append([]string(nil), c.ExtraBlockedEnvKeys...),
		extraOverrides: append([]string(nil), c.ExtraOverrideOnlyEnvKeys...),
		notices:        c.ExitNoticesInResults,
		approvals:      c.ApprovalStore,
	}
	s.resolveTimes(&c)
	s.resolveOutput(&c)
	var err error
	if s.observer, err = resolveObserver(&c); err != nil {
		return s, err
	}
	if err := s.resolveShell(&c, getenv); err != nil {
		return s, err
	}
	if err := s.resolveHostAndPolicy(&c, getenv); err != nil {
		return s, err
	}
	if s.limitSettings, err = resolveLimits(&c); err != nil {
		return s, err
	}
	if s.shellOpts, err = resolveShellOpts(&c); err != nil {
		return s, err
	}
	if s.maxTimeout > 0 && (s.timeout == 0 || s.timeout > s.maxTimeout) {
		s.timeout = s.maxTimeout
	}
	return s, nil
}

// resolveTimes sets the windows, timeouts and grace periods from c, each
// at its default when unset and clamped to its bounds.
func (s *settings) resolveTimes(c *Config) {
	s.yield = time.Duration(DefaultYieldMs) * time.Millisecond
	if c.YieldMs != 0 {
		s.yield = time.Duration(clamp(c.YieldMs, MinYieldMs, MaxYieldMs)) * time.Millisecond
	}
	s.timeout = DefaultTimeoutSec * time.Second
	switch {
	case c.TimeoutSec < 0:
		s.timeout = 0
	case c.TimeoutSec > 0:
		s.timeout = time.Duration(min(c.TimeoutSec, maxTimeoutSec) * float64(time.Second))
	}
	s.ttl = DefaultJobTTLMs * time.Millisecond
	if c.JobTTLMs != 0 {
		s.ttl = time.Duration(clamp(c.JobTTLMs, MinJobTTLMs, MaxJobTTLMs)) * time.Millisecond
	}
	s.inputWait = DefaultInputWaitIdleMs * time.Millisecond
	if c.InputWaitIdleMs > 0 {
		s.inputWait = time.Duration(c.InputWaitIdleMs) * time.Millisecond
	}
	s.approvalTTL = DefaultApprovalTimeout
	if c.ApprovalTimeout > 0 {
		s.approvalTTL = c.ApprovalTimeout
	}
	if c.MaxCallWaitMs > 0 {
		s.maxCallWait = time.Duration(c.MaxCallWaitMs) * time.Millisecond
	}
	s.killGrace = DefaultKillGrace
	if c.KillGrace > 0 {
		s.killGrace = c.KillGrace
	}
	s.drainTimeout = DefaultDrainTimeout
	if c.DrainTimeout > 0 {
		s.drainTimeout = c.DrainTimeout
	}
}

// resolveOutput sets the output caps and the finished-session cap from
// c, each at its default when unset and clamped to its bounds.
func (s *settings) resolveOutput(c *Config) {
	switch {
	case c.MaxFinishedSessionsPerScope == 0:
		s.maxFinished = DefaultMaxFinishedSessionsPerScope
	case c.MaxFinishedSessionsPerScope > 0:
		s.maxFinished = c.MaxFinishedSessionsPerScope
	}
	s.maxChars = DefaultMaxOutputChars
	if c.MaxOutputChars != 0 {
		s.maxChars = clamp(c.MaxOutputChars, MinOutputChars, MaxOutputChars)
	}
	s.pendingChars = DefaultPendingMaxOutputChars
	if c.PendingMaxOutputChars != 0 {
		s.pendingChars = clamp(c.PendingMaxOutputChars, MinOutputChars, MaxOutputChars)
	}
	s.pendingChars = min(s.pendingChars, s.maxChars)
}

// resolveShell checks and sets the shell, its marker and the default
// workdir.
func (s *settings) resolveShell(c *Config, getenv func(string) string) error {
	s.marker = DefaultShellMarker
	if c.ShellMarker != "" {
		if k, _, ok := strings.Cut(c.ShellMarker, "="); !ok || k == "" {
			return fmt.Errorf("bgexec: ShellMarker %q must have the form KEY=VALUE", c.ShellMarker)
		}
		s.marker = c.ShellMarker
	}
	s.shell = c.Shell
	if s.shell == "" {
		s.shell = defaultShell(getenv)
	}
	if p, err := exec.LookPath(s.shell); err == nil {
		s.shellPath = p
	}
	if c.Workdir != "" {
		st, err := os.Stat(c.Workdir)
		if err != nil || !st.IsDir() {
			return fmt.Errorf("bgexec: Workdir %q is not an existing directory", c.Workdir)
		}
		s.workdir = c.Workdir
	}
	return nil
}

// resolveHostAndPolicy checks and sets where commands run (the host and
// the nodes) and the security and ask levels.
func (s *settings) resolveHostAndPolicy(c *Config, getenv func(string) string) error {
	var err error
	s.hostSetting = strings.ToLower(strings.TrimSpace(c.Host))
	if s.hostSetting == "" {
		s.hostSetting = "auto"
	}
	if s.host, err = resolveHost(c.Host, configuredHosts{sandbox: c.Sandbox != nil, docker: c.Docker != nil, kubernetes: c.Kubernetes != nil}); err != nil {
		return err
	}
	if s.nodes, s.defaultNode, err = resolveNodes(c, getenv); err != nil {
		return err
	}
	if s.host == "node" && len(s.nodes) == 0 {
		return fmt.Errorf("bgexec: Config.Host is \"node\" but Config.Nodes is empty: configure at least one node")
	}
	if s.security, err = parseSecurity(c.Security); err != nil {
		return fmt.Errorf("bgexec: Config.Security: %w", err)
	}
	if s.ask, err = parseAsk(c.Ask); err != nil {
		return fmt.Errorf("bgexec: Config.Ask: %w", err)
	}
	return nil
}

// defaultShell picks the shell: $SHELL, sh when it is unset, and bash
// (else sh) when it is fish.
func defaultShell(getenv func(string) string) string {
	sh := strings.TrimSpace(getenv("SHELL"))
	if sh == "" {
		return "sh"
	}
	base := sh[strings.LastIndexByte(sh, '/')+1:]
	if base == "fish" {
		if p, err := exec.LookPath("bash"); err == nil {
			return p
		}
		return "sh"
	}
	return sh
}

// Containment says how sessions are contained (see [Config.Containment]).
//
// A Containment is an immutable value, safe for concurrent use.
type Containment int

const (
	// ContainmentAuto runs each session in its own cgroup v2 child cgroup when
	// this process may create one and a probe child cloned into one runs,
	// and falls back to the process group otherwise.
	ContainmentAuto Containment = iota
	// ContainmentOff uses the process group only.
	ContainmentOff
	// ContainmentRequired refuses to start (NewRegistry fails) without cgroups.
	ContainmentRequired
)
