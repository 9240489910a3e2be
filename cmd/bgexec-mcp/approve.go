package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bgexec/bgexec"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The answers of the approval form.
const (
	decisionAllowOnce    = "allow-once"
	decisionAllowSession = "allow-session"
	decisionDeny         = "deny"
)

// approvalSchema is the approval form's requestedSchema: one choice.
const approvalSchema = `{
  "type": "object",
  "properties": {
    "decision": {
      "type": "string",
      "title": "Decision",
      "description": "allow-once runs this command now; allow-session also runs it again without asking for the rest of this session; deny refuses it.",
      "enum": ["allow-once", "allow-session", "deny"]
    }
  },
  "required": ["decision"]
}`

// sessionKey is the context key of the MCP session a tool call came in on.
type sessionKey struct{}

// withSession returns ctx carrying ss, for the approver of the call.
func withSession(ctx context.Context, ss *mcp.ServerSession) context.Context {
	return context.WithValue(ctx, sessionKey{}, ss)
}

func sessionFrom(ctx context.Context) *mcp.ServerSession {
	ss, _ := ctx.Value(sessionKey{}).(*mcp.ServerSession)
	return ss
}

// deferSlot carries, from the approver to the tool call that asked, the
// request of an approval the approver deferred.
type deferSlot struct {
	req *bgexec.ApprovalRequest
}

type deferKey struct{}

// withDeferSlot returns ctx carrying slot, for the approver of the call.
func withDeferSlot(ctx context.Context, slot *deferSlot) context.Context {
	return context.WithValue(ctx, deferKey{}, slot)
}

// The approval modes (-approval-mode).
const (
	// approvalPending defers: exec returns approval-pending at once, and
	// the person's answer decides the command later.
	approvalPending = "pending"
	// approvalWait asks within the exec call, which waits for the answer.
	approvalWait = "wait"
)

// elicitApprover is the [bgexec.Approver] of one MCP session: it asks the
// person through the client's elicitation form. Commands the person
// allowed for the session run without asking again. It is safe for
// concurrent use; calls that wait for an answer do not block each other.
//
// In pending mode Approve defers at once and the tool call hands the
// approval to ask, which puts the form to the person on a goroutine the
// approver owns and decides the approval with the answer; close stops
// and waits for those goroutines.
type elicitApprover struct {
	// timeout bounds the wait for the person's answer.
	timeout time.Duration
	// pending selects the deferred flow.
	pending bool
	// sc is the scope whose approvals ask decides; set once, before the
	// first call.
	sc *bgexec.Scope
	// stop ends the goroutines of ask; stopped is its context.
	stopped context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	logger  *slog.Logger

	mu      sync.Mutex      // guards allowed, closed and adding to wg
	allowed map[string]bool // commands allowed for the session, exactly as given
	closed  bool            // close was called: ask starts nothing
}

// newElicitApprover returns the approver of one session; mode is
// approvalPending or approvalWait.
func newElicitApprover(timeout time.Duration, mode string, logger *slog.Logger) *elicitApprover {
	ctx, stop := context.WithCancel(context.Background())
	return &elicitApprover{timeout: timeout, pending: mode != approvalWait, stopped: ctx, stop: stop, logger: logger}
}

// close stops the forms still open and waits for their goroutines; their
// approvals stay pending and end with the registry. Idempotent.
func (a *elicitApprover) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.stop()
	a.wg.Wait()
}

// Approve implements [bgexec.Approver]. Every way of not getting an
// allow (no elicitation, declined, cancelled, timed out) denies with a
// reason that says which; only a failure to send the form at all is
// reported the same way, never as an error, so the model reads it.
func (a *elicitApprover) Approve(ctx context.Context, req *bgexec.ApprovalRequest) (bool, string, error) {
	a.mu.Lock()
	known := a.allowed[req.Command]
	a.mu.Unlock()
	if known {
		return true, "", nil
	}
	ss := sessionFrom(ctx)
	if ss == nil {
		return false, "approval required, and this call has no MCP session to ask the person through", nil
	}
	if p := ss.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false, "approval required, but the MCP client cannot ask the person (it does not offer elicitation); " +
			"the server's operator can allowlist the program (-allowlist) or turn asking off (-ask off)", nil
	}
	if a.pending {
		if slot, _ := ctx.Value(deferKey{}).(*deferSlot); slot != nil {
			slot.req = req
			return false, "", bgexec.ErrApprovalDeferred
		}
	}
	return a.elicit(ctx, ss, req)
}

// ask puts the form of the deferred approval id to the person on a
// goroutine of its own and decides the approval with the answer: allow-once
// and allow-session (which also remembers the exact command) run it, every
// other outcome denies it. An approval the registry expired first is
// unknown by then, which is fine: it was denied already.
func (a *elicitApprover) ask(ss *mcp.ServerSession, id string, req *bgexec.ApprovalRequest) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return // the session is closing: its registry drops the approval
	}
	a.wg.Go(func() {
		ok, reason, _ := a.elicit(a.stopped, ss, req)
		if a.stopped.Err() != nil {
			return // the session is closing: its registry drops the approval
		}
		decision := bgexec.DecisionAllowOnce
		if !ok {
			decision = bgexec.DecisionDeny
		}
		// Decide starts the command (it does not wait for its end). Its
		// denial notice says "not approved"; the reason goes to the log.
		err := a.sc.Decide(a.stopped, id, decision)
		switch {
		case err != nil && !errors.Is(err, bgexec.ErrUnknownApproval) && !errors.Is(err, bgexec.ErrClosed):
			a.logger.Warn("deciding an approval", "approval", id, "decision", decision, "err", err)
		case !ok:
			a.logger.Warn("approval denied", "approval", id, "reason", reason)
		}
	})
}

// elicit asks the person through ss and waits for the answer, at most the
// approval timeout; the results are Approve's.
func (a *elicitApprover) elicit(ctx context.Context, ss *mcp.ServerSession, req *bgexec.ApprovalRequest) (bool, string, error) {
	timeout := a.timeout
	if timeout <= 0 {
		timeout = defaultApprovalTimeout
	}
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := ss.Elicit(wait, &mcp.ElicitParams{
		Mode:            "form",
		Message:         approvalMessage(req),
		RequestedSchema: json.RawMessage(approvalSchema),
	})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return false, "the call ended before the person answered", nil
	case errors.Is(wait.Err(), context.DeadlineExceeded):
		return false, fmt.Sprintf("the person did not answer the approval request within %s", timeout), nil
	default:
		return false, fmt.Sprintf("the approval request to the person failed (%v)", err), nil
	}
	switch res.Action {
	case "decline":
		return false, "the person declined the approval request", nil
	case "cancel":
		return false, "the person cancelled the approval request without deciding", nil
	case "accept":
	default:
		return false, fmt.Sprintf("the approval request got the unknown answer %q", res.Action), nil
	}
	switch d, _ := res.Content["decision"].(string); d {
	case decisionAllowOnce:
		return true, "", nil
	case decisionAllowSession:
		a.mu.Lock()
		if a.allowed == nil {
			a.allowed = map[string]bool{}
		}
		a.allowed[req.Command] = true
		a.mu.Unlock()
		return true, "", nil
	case decisionDeny:
		return false, "the person denied it", nil
	default:
		return false, fmt.Sprintf("the approval form came back without a decision (%q)", d), nil
	}
}

// approvalMessage is what the person reads: the command, where it runs,
// what the shell will run, and why they are asked.
func approvalMessage(req *bgexec.ApprovalRequest) string {
	var b strings.Builder
	b.WriteString("The agent wants to run a shell command.\n\n")
	fmt.Fprintf(&b, "Command: %s\n", req.Command)
	fmt.Fprintf(&b, "Workdir: %s\n", req.Workdir)
	if len(req.Commands) > 0 {
		b.WriteString("It runs:\n")
		for _, c := range req.Commands {
			state := "on the allowlist"
			if !c.Allowlisted {
				state = "not on the allowlist"
				if c.Reason != "" {
					state += ": " + c.Reason
				}
			}
			fmt.Fprintf(&b, "  - %s (%s)\n", strings.Join(c.Args, " "), state)
		}
	}
	b.WriteString("\nWhy you are asked: ")
	switch {
	case req.Ask == "always":
		b.WriteString("this server asks before every command (ask always).")
	case req.Reason != "":
		fmt.Fprintf(&b, "%s (ask %s, security %s).", req.Reason, req.Ask, req.Security)
	default:
		fmt.Fprintf(&b, "the command is not on the allowlist (ask %s, security %s).", req.Ask, req.Security)
	}
	b.WriteString("\n\nallow-session also allows this exact command for the rest of this session.")
	return b.String()
}
