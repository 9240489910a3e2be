package bgexec

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/bgexec/bgexec/internal/allowlist"
	"github.com/bgexec/bgexec/internal/envpolicy"
)

// ElevationPolicy gates elevated:true: both gates must pass.
// The zero value refuses elevation.
//
// A ElevationPolicy is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type ElevationPolicy struct {
	// Enabled turns elevated mode on for this runtime (tools.elevated.enabled).
	// Default false.
	Enabled bool
	// Allow reports whether the agent scope may elevate. Nil allows every
	// scope once Enabled is true. It must be safe for concurrent use.
	Allow func(scopeKey string) bool
}

// ApprovalRequest describes a command that needs a decision from an [Approver].
//
// A ApprovalRequest is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type ApprovalRequest struct {
	// ScopeKey is the agent scope asking.
	ScopeKey string
	// Command is the shell command as given.
	Command string
	// Workdir is the resolved working directory.
	Workdir string
	// Security and Ask are the effective (strictest) levels for this call.
	Security string
	Ask      string
	// Commands lists every simple command the line runs, as the shell
	// parser sees it, in source order (a command wrapped by nohup, env,
	// timeout … follows its wrapper), each with whether it is on
	// Config.Allowlist and, if not, why.
	Commands []ApprovalCommand
	// Allowlisted is true only when every command is allowlisted and the
	// line has nothing else the allowlist refuses (an output redirection to
	// a file, arithmetic on variables, …).
	Allowlisted bool
	// Reason says why the line is not allowlisted, when it is not.
	Reason string
}

// ApprovalCommand is one simple command of a line to approve.
//
// A ApprovalCommand is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type ApprovalCommand struct {
	// Args are the command's words after quote removal; a word only known
	// at run time ($x, $(cmd)) is shown as written.
	Args []string
	// Allowlisted reports whether this command is on the allowlist.
	Allowlisted bool
	// Reason says why it is not, when it is not.
	Reason string
}

// Approver decides whether a command may run. It may block (for example
// while a human is asked); the exec call's context bounds that wait. It must
// be safe for concurrent use.
//
// Approve is called on the goroutine of the Exec call that needs the
// decision, before anything is spawned, so [Registry.Close] does not wait
// for it: a call still blocked when Close returns is left to finish on its
// own, and its Exec then returns [ErrClosed] without spawning.
type Approver interface {
	// Approve returns whether the command may run and, when it may not,
	// the reason the refusal gives the model ("exec denied: <reason>.";
	// "" means "not approved"). An err wrapping [ErrApprovalDeferred]
	// makes the exec approval-pending; any other err fails the exec call
	// with a Go error, and nothing runs.
	Approve(ctx context.Context, req *ApprovalRequest) (allowed bool, reason string, err error)
}

type securityLevel int

const (
	securityFull securityLevel = iota
	securityAllowlist
	securityDeny
)

var securityNames = []string{"full", "allowlist", "deny"}

type askMode int

const (
	askOff askMode = iota
	askOnMiss
	askAlways
)

var askNames = []string{"off", "on-miss", "always"}

// parseLevel finds s (case-insensitive, trimmed) in an ordered list of level
// names; empty means the first, the most permissive.
func parseLevel[T ~int](what string, names []string, s string) (T, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return 0, nil
	}
	i := slices.Index(names, s)
	if i < 0 {
		return 0, fmt.Errorf("%s %q is not one of %s", what, s, strings.Join(names, ", "))
	}
	return T(i), nil
}

func parseSecurity(s string) (securityLevel, error) {
	return parseLevel[securityLevel]("security", securityNames, s)
}

func parseAsk(s string) (askMode, error) { return parseLevel[askMode]("ask", askNames, s) }

// configuredHosts says which of the optional hosts a configuration sets.
type configuredHosts struct {
	sandbox, docker, kubernetes bool
}

// resolveHost resolves Config.Host: "auto" is the bubblewrap sandbox
// when Sandbox is set, else Docker when it is set, else Kubernetes when
// it is set, else this machine. "sandbox" is bubblewrap, or Docker when
// only Docker is set (the reference's sandbox runs in Docker). An
// explicit host needs its configuration, and one that is not the sandbox
// contradicts a configured Sandbox.
func resolveHost(h string, set configuredHosts) (string, error) {
	name := strings.ToLower(strings.TrimSpace(h))
	switch name {
	case "", "auto":
		switch {
		case set.sandbox:
			return "sandbox", nil
		case set.docker:
			return "docker", nil
		case set.kubernetes:
			return "kubernetes", nil
		}
		return "gateway", nil
	case "gateway", "node", "sandbox", "docker", "kubernetes":
	default:
		return "", fmt.Errorf("bgexec: Config.Host %q is not one of auto, sandbox, gateway, node, docker, kubernetes", h)
	}
	switch {
	case name == "sandbox" && !set.sandbox && set.docker:
		return "docker", nil
	case name == "sandbox" && !set.sandbox:
		return "", fmt.Errorf("bgexec: Config.Host %q needs Config.Sandbox (set it to &bgexec.Sandbox{} for the defaults) or Config.Docker", h)
	case name == "docker" && !set.docker:
		return "", fmt.Errorf("bgexec: Config.Host %q needs Config.Docker (a daemon address and an image)", h)
	case name == "kubernetes" && !set.kubernetes:
		return "", fmt.Errorf("bgexec: Config.Host %q needs Config.Kubernetes (kube.New of github.com/bgexec/bgexec/kube builds one)", h)
	case name != "sandbox" && set.sandbox:
		return "", fmt.Errorf("bgexec: Config.Host %q contradicts Config.Sandbox: use auto or sandbox, or leave Sandbox nil", h)
	}
	return name, nil
}

// newAllowlist builds the allowlist checker of a registry: entries from
// the configuration, the dialect of the configured shell, names resolved on
// PATH, and assignment keys vetted by the per-call environment rules.
func newAllowlist(st *settings, env envpolicy.Policy) *allowlist.Checker {
	return &allowlist.Checker{
		Entries:  st.allowlist,
		Shell:    st.shell,
		LookPath: exec.LookPath,
		AssignKey: func(key string) string {
			if msg := env.ValidateOverrides(map[string]string{key: "x"}); msg != "" {
				return fmt.Sprintf("the assignment to %s is refused (%s)", key, strings.TrimSuffix(msg, "."))
			}
			return ""
		},
	}
}

// runtimeName is the host as the elevated refusal names it: the gateway
// runs commands directly.
func runtimeName(host string) string {
	if host == "gateway" {
		return "direct"
	}
	return host
}

// checkPolicy applies the host, elevation, security and approval rules to
// one call. It returns a model-facing refusal text, or "" when the command
// may run. An approver that defers gives an error wrapping
// ErrApprovalDeferred. A call that runs a decided approval (see
// [Scope.Decide]) is not asked about again. The verdict says who decided
// what, for the observer.
func (sc *Scope) checkPolicy(ctx context.Context, req *ExecRequest, cwd string) (string, verdict, error) {
	refusal, areq := sc.policyGate(req, cwd)
	switch {
	case refusal != "":
		return refusal, verdict{DecisionDenied, DecidedByPolicy, refusal}, nil
	case areq == nil:
		return "", sc.allowedVerdict(req), nil
	case isDecided(ctx):
		return "", verdict{DecisionApproved, DecidedByDecide, fmt.Sprint(ctx.Value(decidedKey{}))}, nil
	}
	st := &sc.reg.cfg
	if st.approver == nil {
		return noApprover, verdict{DecisionDenied, DecidedByPolicy, noApprover}, nil
	}
	ok, reason, err := st.approver.Approve(ctx, areq)
	if errors.Is(err, ErrApprovalDeferred) {
		return "", verdict{DecisionPending, DecidedByApprover, "approval required: " + areq.Reason}, fmt.Errorf("bgexec: approval: %w", err)
	}
	if err != nil {
		return "", verdict{DecisionDenied, DecidedByApprover, "the approver failed: " + err.Error()}, fmt.Errorf("bgexec: approval: %w", err)
	}
	if !ok {
		if reason == "" {
			reason = "not approved"
		}
		return "exec denied: " + reason + ".", verdict{DecisionDenied, DecidedByApprover, reason}, nil
	}
	if reason == "" {
		reason = "approved: " + areq.Reason
	}
	return "", verdict{DecisionApproved, DecidedByApprover, reason}, nil
}

// noApprover refuses a call that needs approval when no approver is set.
const noApprover = "exec denied: approval required but no approver is configured."

// policyGate applies the host, elevation and security rules, without
// asking anyone: it returns a refusal text, or the request for an
// approver when the call needs approval, or neither when it may run.
func (sc *Scope) policyGate(req *ExecRequest, cwd string) (string, *ApprovalRequest) {
	st := &sc.reg.cfg
	// A host equal to the configured one, or to what auto resolves to, runs.
	if h := strings.ToLower(strings.TrimSpace(req.Host)); h != "" && h != st.hostSetting && (st.hostSetting != "auto" || h != st.host) {
		return fmt.Sprintf("exec host not allowed (requested %s; configure tools.exec.host=%s to allow).", h, h), nil
	}
	if req.Elevated {
		gate := ""
		switch {
		case !st.elevation.Enabled:
			gate = "enabled (tools.elevated.enabled)"
		case st.elevation.Allow != nil && !st.elevation.Allow(sc.key):
			gate = "allowFrom (tools.elevated.allowFrom)"
		}
		if gate != "" {
			return fmt.Sprintf("elevated is not available right now (runtime=%s).\nFailing gates: %s\nContext: session=%s", runtimeName(st.host), gate, sc.key), nil
		}
	}
	sec, err := parseSecurity(req.Security)
	if err != nil {
		return "Invalid security: " + err.Error() + ".", nil
	}
	ask, err := parseAsk(req.Ask)
	if err != nil {
		return "Invalid ask: " + err.Error() + ".", nil
	}
	sec, ask = max(sec, st.security), max(ask, st.ask)
	if sec == securityDeny {
		return fmt.Sprintf("exec denied: host=%s security=deny", st.host), nil
	}
	// on-miss asks only when an allowlist misses; under full nothing
	// misses, so only always asks there.
	if sec == securityFull && ask != askAlways {
		return "", nil
	}
	verdict, err := sc.allowlistChecker(req.Node).Check(req.Command)
	if err != nil {
		return fmt.Sprintf("exec denied: the command does not parse as shell (%v). Fix the syntax and retry.", err), nil
	}
	listed := verdict.Allowed
	if sec == securityAllowlist && !listed && ask == askOff {
		return fmt.Sprintf("exec denied: %s (security=allowlist).", verdict.Reason()), nil
	}
	if ask == askOff || ask == askOnMiss && listed {
		return "", nil
	}
	areq := &ApprovalRequest{
		ScopeKey: sc.key, Command: req.Command, Workdir: cwd,
		Security: securityNames[sec], Ask: askNames[ask],
		Allowlisted: listed, Reason: verdict.Reason(),
	}
	for _, c := range verdict.Commands {
		areq.Commands = append(areq.Commands, ApprovalCommand{Args: c.Args, Allowlisted: c.Allowlisted, Reason: c.Reason})
	}
	return "", areq
}
