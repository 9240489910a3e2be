package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// elicitApprover is the [bgexec.Approver] of one MCP session: it asks the
// person through the client's elicitation form. Commands the person
// allowed for the session run without asking again. It is safe for
// concurrent use; calls that wait for an answer do not block each other.
type elicitApprover struct {
	// timeout bounds the wait for the person's answer.
	timeout time.Duration

	mu      sync.Mutex      // guards allowed
	allowed map[string]bool // commands allowed for the session, exactly as given
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
