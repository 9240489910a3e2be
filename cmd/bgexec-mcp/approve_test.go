package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgexec/bgexec"
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
	// gate, when set, holds every answer until the test sends on it;
	// opened gets each form as it arrives (buffered by the test).
	gate   chan struct{}
	opened chan *mcp.ElicitParams
}

// release lets the open form be answered.
func (p *person) release(t *testing.T) {
	t.Helper()
	select {
	case p.gate <- struct{}{}:
	case <-time.After(callTimeout):
		t.Fatal("no approval form waited for an answer")
	}
}

// awaitForm returns the next form put to the person.
func (p *person) awaitForm(t *testing.T) *mcp.ElicitParams {
	t.Helper()
	select {
	case f := <-p.opened:
		return f
	case <-time.After(callTimeout):
		t.Fatal("no approval form reached the person")
		return nil
	}
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
	if p.opened != nil {
		p.opened <- req.Params
	}
	if p.gate != nil {
		select {
		case <-p.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		p.mu.Lock()
		action, choice = p.action, p.choice
		p.mu.Unlock()
	}
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

// TestApprovalsAskThePerson covers the form and each answer in the
// synchronous mode, where exec waits for the answer.
func TestApprovalsAskThePerson(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	p := &person{}
	c := connectWith(t, bin, &mcp.ClientOptions{ElicitationHandler: p.handle}, "-security", "allowlist", "-ask", "on-miss", "-allowlist", "ls", "-approval-mode", "wait")
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
	t.Parallel()
	bin := buildServer(t)
	t.Run("a client without elicitation", func(t *testing.T) {
		c := connect(t, bin, "-ask", "always")
		res := c.call(t, "exec", map[string]any{"command": "echo MUST-NOT-RUN"})
		assert.True(t, res.IsError)
		assert.Contains(t, structuredOnly(t, res), "exec denied: approval required, but the MCP client cannot ask the person (it does not offer elicitation)")
	})
	t.Run("no answer within the approval timeout", func(t *testing.T) {
		p := &person{hang: true}
		c := connectWith(t, bin, &mcp.ClientOptions{ElicitationHandler: p.handle}, "-ask", "always", "-approval-timeout", "1s", "-approval-mode", "wait")
		res := c.call(t, "exec", map[string]any{"command": "echo MUST-NOT-RUN"})
		assert.True(t, res.IsError)
		assert.Equal(t, "exec denied: the person did not answer the approval request within 1s.", structuredOnly(t, res))
		assert.Len(t, p.forms(), 1)
	})
}

// TestApprovalOverHTTP asks through a Streamable HTTP session. In the
// synchronous mode the form travels on the exec request's stream; in the
// default pending mode, after exec has returned, on the session's
// standalone stream.
func TestApprovalOverHTTP(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	t.Run("wait", func(t *testing.T) {
		hs := startHTTP(t, bin, "-ask", "always", "-approval-mode", "wait")
		p := &person{}
		p.answer("accept", "allow-once")
		c := hs.connect(t, &mcp.ClientOptions{ElicitationHandler: p.handle})
		res := c.call(t, "exec", map[string]any{"command": "echo HTTP-APPROVED"})
		assert.Equal(t, "HTTP-APPROVED", structuredOnly(t, res))
		require.Len(t, p.forms(), 1)
		assert.Contains(t, p.forms()[0].Message, "Command: echo HTTP-APPROVED")
	})
	t.Run("pending", func(t *testing.T) {
		hs := startHTTP(t, bin, "-ask", "always")
		p := &person{}
		p.answer("accept", "allow-once")
		c := hs.connect(t, &mcp.ClientOptions{ElicitationHandler: p.handle})
		res := c.call(t, "exec", map[string]any{"command": "echo HTTP-APPROVED"})
		d := detailsOf(t, res)
		require.Equal(t, bgexec.StatusApprovalPending, d.Status)
		awaitNotices(t, c, "Exec approved (approval "+d.ApprovalID+")", ":: HTTP-APPROVED")
		require.Len(t, p.forms(), 1)
		assert.Contains(t, p.forms()[0].Message, "Command: echo HTTP-APPROVED")
	})
}

// awaitNotices makes list calls, collecting the notice lines of their
// results, until one line contains each of want; it returns them all.
func awaitNotices(t *testing.T, c *client, want ...string) []string {
	t.Helper()
	var seen []string
	deadline := time.Now().Add(callTimeout)
	for time.Now().Before(deadline) {
		res := c.call(t, "process", map[string]any{"action": "list"})
		seen = append(seen, noticesOf(t, res)...)
		assert.Equal(t, textOf(t, res), structuredOnly(t, res))
		all := true
		for _, w := range want {
			if !slices.ContainsFunc(seen, func(l string) bool { return strings.Contains(l, w) }) {
				all = false
			}
		}
		if all {
			return seen
		}
	}
	t.Fatalf("no notices with %q in any result; saw %q", want, seen)
	return nil
}

// awaitLog returns the text of the next exit logging message that
// contains want, skipping others.
func awaitLog(t *testing.T, c *client, want string) string {
	t.Helper()
	timeout := time.After(callTimeout)
	for {
		select {
		case m := <-c.logs:
			b, err := json.Marshal(m.Data)
			require.NoError(t, err)
			var e exitEvent
			if json.Unmarshal(b, &e) == nil && strings.Contains(e.Text, want) {
				return e.Text
			}
		case <-timeout:
			t.Fatalf("no logging message with %q", want)
			return ""
		}
	}
}

// TestApprovalPending: by default exec returns approval-pending at once
// while the form is still open, and the person's answer decides the
// command later; the model learns the outcome from the notices of a later
// result (and the logging message).
func TestApprovalPending(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	p := &person{gate: make(chan struct{}), opened: make(chan *mcp.ElicitParams, 4)}
	c := connectWith(t, bin, &mcp.ClientOptions{ElicitationHandler: p.handle}, "-security", "allowlist", "-ask", "on-miss", "-allowlist", "ls")
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	//lint:ignore SA1019 the server keeps the deprecated MCP logging feature (see the README); this tests it.
	require.NoError(t, c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
	dir := t.TempDir()

	// pending runs command, which touches marker, and checks that exec
	// returned approval-pending before the form was answered and that
	// nothing ran.
	pending := func(t *testing.T, command, marker string) string {
		t.Helper()
		res := c.call(t, "exec", map[string]any{"command": command})
		d := detailsOf(t, res)
		require.Equal(t, bgexec.StatusApprovalPending, d.Status, "%s", textOf(t, res))
		assert.False(t, res.IsError)
		assert.Equal(t, []string{"allow-once", "allow-always", "deny"}, d.AllowedDecisions)
		assert.Greater(t, d.ExpiresAtMs, time.Now().UnixMilli())
		assert.Equal(t, "Approval required (id "+d.ApprovalID+"): "+command+". Nothing has run yet; the result will follow once it is decided.", structuredOnly(t, res))
		f := p.awaitForm(t)
		assert.Contains(t, f.Message, "Command: "+command+"\n")
		_, err := os.Stat(marker)
		assert.ErrorIs(t, err, os.ErrNotExist, "nothing runs while the form is open")
		return d.ApprovalID
	}

	t.Run("allow-once runs it, and the next results carry the outcome and its output", func(t *testing.T) {
		marker := filepath.Join(dir, "once")
		command := "touch " + marker + "; echo PENDING-RAN"
		p.answer("accept", "allow-once")
		id := pending(t, command, marker)
		p.release(t)
		assert.Contains(t, awaitLog(t, c, "Exec approved (approval "+id+")"), command)
		notices := awaitNotices(t, c, "Exec approved (approval "+id+"): running as session ", ":: PENDING-RAN")
		assert.FileExists(t, marker)
		for _, n := range notices {
			assert.True(t, strings.HasPrefix(n, bgexec.NoticePrefix), n)
		}
	})

	t.Run("allow-session runs it and allows that exact command for the session", func(t *testing.T) {
		marker := filepath.Join(dir, "session")
		command := "touch " + marker + "; echo SESSION-RAN"
		p.answer("accept", "allow-session")
		id := pending(t, command, marker)
		p.release(t)
		awaitNotices(t, c, "Exec approved (approval "+id+")", ":: SESSION-RAN")
		res := c.call(t, "exec", map[string]any{"command": command})
		assert.Equal(t, "SESSION-RAN", structuredOnly(t, res), "no form: it runs at once")
		assert.Empty(t, p.opened)
	})

	for _, tc := range []struct{ action, choice string }{{"accept", "deny"}, {"decline", ""}, {"cancel", ""}} {
		t.Run("a "+tc.action+" "+tc.choice+" denies it with a notice", func(t *testing.T) {
			marker := filepath.Join(dir, "denied-"+tc.action)
			command := "touch " + marker + "; echo MUST-NOT-RUN"
			p.answer(tc.action, tc.choice)
			id := pending(t, command, marker)
			p.release(t)
			notices := awaitNotices(t, c, "Exec denied (approval "+id+"): not approved; nothing ran: "+command)
			assert.NotContains(t, strings.Join(notices, "\n"), "MUST-NOT-RUN\n")
			_, err := os.Stat(marker)
			assert.ErrorIs(t, err, os.ErrNotExist)
		})
	}
}

// TestApprovalPendingTimesOut: a form nobody answers is denied when the
// approval timeout passes.
func TestApprovalPendingTimesOut(t *testing.T) {
	t.Parallel()
	p := &person{hang: true}
	c := connectWith(t, buildServer(t), &mcp.ClientOptions{ElicitationHandler: p.handle}, "-ask", "always", "-approval-timeout", "1s")
	res := c.call(t, "exec", map[string]any{"command": "echo MUST-NOT-RUN"})
	d := detailsOf(t, res)
	require.Equal(t, bgexec.StatusApprovalPending, d.Status)
	awaitNotices(t, c, "Exec denied (approval "+d.ApprovalID+")")
	assert.Len(t, p.forms(), 1)
}
