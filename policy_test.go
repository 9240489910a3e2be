package bgexec

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// approver records requests and answers from a table.
type approver struct {
	calls atomic.Int32
	allow bool
	last  atomic.Pointer[ApprovalRequest]
}

func (a *approver) Approve(_ context.Context, req *ApprovalRequest) (bool, string, error) {
	a.calls.Add(1)
	a.last.Store(req)
	if a.allow {
		return true, "", nil
	}
	return false, "the operator said no", nil
}

func TestApprovalsAndElevation(t *testing.T) {
	t.Run("allowlist runs listed verbs and refuses others", func(t *testing.T) {
		reg := newTestRegistry(t, Config{Security: "allowlist", Allowlist: []string{"echo"}})
		sc := reg.Scope("a")
		assert.Equal(t, "ok", mustExec(t, sc, &ExecRequest{Command: "echo ok"}).Text())
		res := mustExec(t, sc, &ExecRequest{Command: "rm -rf /tmp/nothing"})
		assert.Equal(t, `exec denied: "rm" is not on the allowlist (security=allowlist).`, res.Text())
	})
	t.Run("ask on-miss asks only for commands off the allowlist", func(t *testing.T) {
		a := &approver{allow: true}
		reg := newTestRegistry(t, Config{Security: "allowlist", Ask: "on-miss", Allowlist: []string{"echo"}, Approver: a})
		sc := reg.Scope("agent:7")
		mustExec(t, sc, &ExecRequest{Command: "echo ok"})
		assert.Zero(t, a.calls.Load())
		assert.Equal(t, "yes", mustExec(t, sc, &ExecRequest{Command: "printf yes"}).Text())
		assert.Equal(t, int32(1), a.calls.Load())
		req := a.last.Load()
		assert.Equal(t, "agent:7", req.ScopeKey)
		assert.Equal(t, "printf yes", req.Command)
		assert.False(t, req.Allowlisted)
		assert.Equal(t, "allowlist", req.Security)
		assert.Equal(t, "on-miss", req.Ask)
	})
	t.Run("a refusal is a failure with the approver's reason and nothing runs", func(t *testing.T) {
		a := &approver{}
		reg := newTestRegistry(t, Config{Ask: "always", Approver: a})
		before := children(t)
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo hi"})
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.Equal(t, "exec denied: the operator said no.", res.Text())
		assert.ElementsMatch(t, before, children(t))
	})
	t.Run("a call may only make security stricter", func(t *testing.T) {
		reg := newTestRegistry(t, Config{Security: "deny"})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo hi", Security: "full"})
		assert.Equal(t, "exec denied (security=deny).", res.Text())
		reg = newTestRegistry(t, Config{})
		res = mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo hi", Ask: "always"})
		assert.Equal(t, "exec denied: approval required but no approver is configured.", res.Text())
		res = mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo hi", Security: "lax"})
		assert.True(t, strings.HasPrefix(res.Text(), "Invalid security: "), res.Text())
	})
	t.Run("elevation needs both gates", func(t *testing.T) {
		reg := newTestRegistry(t, Config{Elevation: ElevationPolicy{Enabled: true, Allow: func(k string) bool { return k == "agent:admin" }}})
		res := mustExec(t, reg.Scope("agent:admin"), &ExecRequest{Command: "echo up", Elevated: true})
		assert.Equal(t, "up", res.Text())
		res = mustExec(t, reg.Scope("agent:guest"), &ExecRequest{Command: "echo up", Elevated: true})
		assert.Equal(t, "elevated is not allowed for agent:guest (tools.elevated.allowFrom).", res.Text())
	})
	t.Run("host auto and gateway run here", func(t *testing.T) {
		reg := newTestRegistry(t, Config{})
		for _, h := range []string{"", "auto", "gateway", "GATEWAY"} {
			res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo here", Host: h})
			require.Equal(t, "here", res.Text(), "host %q", h)
		}
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo here", Host: "sandbox"})
		assert.Equal(t, "exec host not allowed (requested sandbox; configure tools.exec.host=sandbox to allow).", res.Text())
	})
}

func TestOutputCapsWithRealProcesses(t *testing.T) {
	reg := newTestRegistry(t, Config{MaxOutputChars: 1000, PendingMaxOutputChars: 1000})
	sc := reg.Scope("a")

	t.Run("a foreground run past the cap keeps the tail and says so", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: helper("lines", "500")})
		assert.True(t, strings.HasPrefix(res.Text(), discardNotice+"\n\n"), res.Text()[:100])
		assert.True(t, strings.HasSuffix(res.Text(), "line 499"))
		assert.Equal(t, strings.TrimPrefix(res.Text(), discardNotice+"\n\n"), res.Details.Aggregated, "the output part of the text, without the notice")
		assert.LessOrEqual(t, len([]rune(res.Details.Aggregated)), 1000)
	})
	t.Run("poll and log carry the notice once output was dropped", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: helper("lines", "500")})
		awaitDone(t, reg, id)
		poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.True(t, strings.HasPrefix(poll.Text(), discardNotice+"\n\n"))
		assert.True(t, strings.HasSuffix(poll.Text(), "line 499\n\nProcess exited with code 0."))
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Limit: ptr(1)})
		assert.Equal(t, discardNotice+"\n\nline 499", log.Text())
		assert.True(t, *log.Details.Truncated)
		assert.Equal(t, int64(1000), *log.Details.TotalChars)
		poll = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.Equal(t, "(no new output)\n\nProcess exited with code 0.", poll.Text(), "the poll notice is about what the poll lost")
	})
	t.Run("escape sequences and controls are removed from pipe output", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: `printf 'a\033[1;31mb\033[0m\033]0;t\007c\001\002d\té\n'`})
		assert.Equal(t, "abcd\té", res.Text())
	})
	t.Run("a character split across writes is decoded whole", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: `printf '\344'; sleep 0.1; printf '\275\240\n'`})
		assert.Equal(t, "你", res.Text())
		res = mustExec(t, sc, &ExecRequest{Command: `printf 'a\377b\n'`})
		assert.Equal(t, "a\uFFFDb", res.Text())
	})
}
