package main

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// person answers the server's approval forms as the test scripts it, and
// records what it was shown.
type person struct {
	mu     sync.Mutex
	action string // accept, decline or cancel
	choice string // the decision of an accepted form
	asked  []*mcp.ElicitParams
	// hang makes it never answer: it waits for the request to end.
	hang bool
}

func (p *person) answer(action, choice string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.action, p.choice = action, choice
}

func (p *person) forms() []*mcp.ElicitParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), p.asked...)
}

func (p *person) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p.mu.Lock()
	p.asked = append(p.asked, req.Params)
	action, choice, hang := p.action, p.choice, p.hang
	p.mu.Unlock()
	if hang {
		<-ctx.Done() // the server gives up and cancels the request
		return nil, ctx.Err()
	}
	res := &mcp.ElicitResult{Action: action}
	if action == "accept" {
		res.Content = map[string]any{"decision": choice}
	}
	return res, nil
}

func TestApprovalsAskThePerson(t *testing.T) {
	bin := buildServer(t)
	p := &person{}
	c := connectWith(t, bin, &mcp.ClientOptions{ElicitationHandler: p.handle}, "-ask", "on-miss", "-allowlist", "ls")
	exec := func(command string) string {
		t.Helper()
		res := c.call(t, "exec", map[string]any{"command": command})
		return structuredOnly(t, res)
	}

	t.Run("the form shows the command, workdir, parsed commands and why, with three choices", func(t *testing.T) {
		p.answer("accept", "allow-once")
		assert.Equal(t, "Y-ONCE", exec("echo X-ONCE | tr X Y"))
		forms := p.forms()
		require.Len(t, forms, 1)
		f := forms[0]
		assert.Equal(t, "form", f.Mode)
		assert.Contains(t, f.Message, "Command: echo X-ONCE | tr X Y\n")
		assert.Regexp(t, `(?m)^Workdir: /\S*$`, f.Message)
		assert.Contains(t, f.Message, "  - echo X-ONCE (")
		assert.Contains(t, f.Message, "  - tr X Y (not on the allowlist")
		assert.Contains(t, f.Message, "Why you are asked: ")
		b, err := json.Marshal(f.RequestedSchema)
		require.NoError(t, err)
		var schema struct {
			Properties map[string]struct {
				Type string   `json:"type"`
				Enum []string `json:"enum"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		require.NoError(t, json.Unmarshal(b, &schema))
		require.Len(t, schema.Properties, 1)
		assert.Equal(t, []string{"allow-once", "allow-session", "deny"}, schema.Properties["decision"].Enum)
		assert.Equal(t, []string{"decision"}, schema.Required)

		assert.Equal(t, "Y-ONCE", exec("echo X-ONCE | tr X Y"))
		assert.Len(t, p.forms(), 2, "allow-once allows one run: the same command is asked for again")
	})

	t.Run("allow-session allows that exact command for the rest of the session", func(t *testing.T) {
		p.answer("accept", "allow-session")
		n := len(p.forms())
		assert.Equal(t, "SESSION", exec("echo SESSION"))
		p.answer("accept", "deny")
		assert.Equal(t, "SESSION", exec("echo SESSION"))
		assert.Len(t, p.forms(), n+1, "not asked again")
		assert.Contains(t, exec("echo SESSION2"), "exec denied: the person denied it", "another command is asked for")
		assert.Len(t, p.forms(), n+2)
	})

	t.Run("an allowlisted command runs without asking", func(t *testing.T) {
		n := len(p.forms())
		assert.Contains(t, exec("ls /"), "usr")
		assert.Len(t, p.forms(), n)
	})

	for _, tc := range []struct{ action, choice, want string }{
		{"accept", "deny", "exec denied: the person denied it."},
		{"decline", "", "exec denied: the person declined the approval request."},
		{"cancel", "", "exec denied: the person cancelled the approval request without deciding."},
	} {
		t.Run("a "+tc.action+" "+tc.choice+" denies and says so", func(t *testing.T) {
			p.answer(tc.action, tc.choice)
			res := c.call(t, "exec", map[string]any{"command": "echo MUST-NOT-RUN"})
			assert.Equal(t, tc.want, structuredOnly(t, res))
			assert.True(t, res.IsError)
		})
	}
}

func TestApprovalDeniedWithoutAnAnswer(t *testing.T) {
	bin := buildServer(t)
	t.Run("a client without elicitation", func(t *testing.T) {
		c := connect(t, bin, "-ask", "always")
		res := c.call(t, "exec", map[string]any{"command": "echo MUST-NOT-RUN"})
		assert.True(t, res.IsError)
		assert.Contains(t, structuredOnly(t, res), "exec denied: approval required, but the MCP client cannot ask the person (it does not offer elicitation)")
	})
	t.Run("no answer within the approval timeout", func(t *testing.T) {
		p := &person{hang: true}
		c := connectWith(t, bin, &mcp.ClientOptions{ElicitationHandler: p.handle}, "-ask", "always", "-approval-timeout", "1s")
		res := c.call(t, "exec", map[string]any{"command": "echo MUST-NOT-RUN"})
		assert.True(t, res.IsError)
		assert.Equal(t, "exec denied: the person did not answer the approval request within 1s.", structuredOnly(t, res))
		assert.Len(t, p.forms(), 1)
	})
}

// TestApprovalOverHTTP asks through a Streamable HTTP session: the form
// travels on the exec request's stream.
func TestApprovalOverHTTP(t *testing.T) {
	hs := startHTTP(t, buildServer(t), "-ask", "always")
	p := &person{}
	p.answer("accept", "allow-once")
	c := hs.connect(t, &mcp.ClientOptions{ElicitationHandler: p.handle})
	res := c.call(t, "exec", map[string]any{"command": "echo HTTP-APPROVED"})
	assert.Equal(t, "HTTP-APPROVED", structuredOnly(t, res))
	require.Len(t, p.forms(), 1)
	assert.Contains(t, p.forms()[0].Message, "Command: echo HTTP-APPROVED")
}
