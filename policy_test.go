//go:build linux

package bgexec

import (
	"context"
	"os"
	"path/filepath"
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
		assert.Equal(t, "exec denied: host="+suiteHost()+" security=deny", res.Text())
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
		assert.Equal(t, "elevated is not available right now (runtime="+map[string]string{"gateway": "direct", "sandbox": "sandbox"}[suiteHost()]+").\nFailing gates: allowFrom (tools.elevated.allowFrom)\nContext: session=agent:guest", res.Text())
		reg = newTestRegistry(t, Config{})
		res = mustExec(t, reg.Scope("agent:main:main"), &ExecRequest{Command: "echo up", Elevated: true})
		assert.Equal(t, "elevated is not available right now (runtime="+map[string]string{"gateway": "direct", "sandbox": "sandbox"}[suiteHost()]+").\nFailing gates: enabled (tools.elevated.enabled)\nContext: session=agent:main:main", res.Text())
	})
	t.Run("a per-call host must equal the configured one", func(t *testing.T) {
		reg := newTestRegistry(t, Config{})
		// A host equal to what auto resolves to runs.
		other := map[string]string{"gateway": "sandbox", "sandbox": "gateway"}[suiteHost()]
		for _, h := range []string{"", "auto", "AUTO", suiteHost()} {
			res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo here", Host: h})
			require.Equal(t, "here", res.Text(), "host %q", h)
		}
		for _, h := range []string{other, "node"} {
			res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo here", Host: h})
			assert.Equal(t, "exec host not allowed (requested "+h+"; configure tools.exec.host="+h+" to allow).", res.Text())
		}
		reg = newTestRegistry(t, Config{Host: "gateway"})
		assert.Equal(t, "here", mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo here", Host: "gateway"}).Text())
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo here", Host: "auto"})
		assert.Equal(t, "exec host not allowed (requested auto; configure tools.exec.host=auto to allow).", res.Text())
	})
}

func TestOutputCapsWithRealProcesses(t *testing.T) {
	t.Parallel()
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
		assert.Equal(t, discardNotice+"\n\n[lines 0-387 were dropped; the log starts at line 388]\nline 499", log.Text())
		assert.True(t, *log.Details.Truncated)
		assert.Equal(t, int64(388), *log.Details.FirstLine)
		assert.Equal(t, 500, *log.Details.TotalLines, "line numbers count every line ever printed")
		page := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(490), Limit: ptr(2)})
		assert.True(t, strings.HasSuffix(page.Text(), "\nline 490\nline 491"), "offsets are absolute: %s", page.Text())
		assert.Equal(t, int64(1000), *log.Details.TotalChars)
		poll = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		assert.Equal(t, "(no new output)\n\nProcess exited with code 0.", poll.Text(), "the poll notice is about what the poll lost")
	})
	t.Run("escape sequences are removed from pipe output and other controls shown", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: `printf 'a\033[1;31mb\033[0m\033]0;t\007c\001\002d\té\n'`})
		assert.Equal(t, `abc\x01\x02d`+"\té", res.Text())
	})
	t.Run("a character split across writes is decoded whole", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: `printf '\344'; sleep 0.1; printf '\275\240\n'`})
		assert.Equal(t, "你", res.Text())
		res = mustExec(t, sc, &ExecRequest{Command: `printf 'a\377b\n'`})
		assert.Equal(t, "a\uFFFDb", res.Text())
	})
}

// TestAllowlistBypassesRunNothing sends the payloads that got past the old
// first-word check to a real registry: each must be refused, with nothing
// spawned and no marker file written. Under ask on-miss the approver must
// be asked about each, and be told the truth.
func TestAllowlistBypassesRunNothing(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	payloads := []string{
		"ls; touch " + marker,
		"ls && touch " + marker,
		"ls || touch " + marker,
		"ls $(touch " + marker + ")",
		"echo `touch " + marker + "`",
		"ls | sh -c 'touch " + marker + "'",
		"ls > " + marker,
		"ls\ntouch " + marker,
		`"ls" && touch ` + marker,
		"ls & touch " + marker,
		"(touch " + marker + ")",
		"{ touch " + marker + "; }",
		"echo <(touch " + marker + ")",
		"echo <<EOF\n$(touch " + marker + ")\nEOF",
		"f() { touch " + marker + "; }; f",
		"ls() { touch " + marker + "; }; ls",
		"X=touch; $X " + marker,
		"eval touch " + marker,
		"echo " + marker + " | xargs touch",
		"x='a[$(touch " + marker + ")]'; echo $((x))",
		"PATH=" + dir + " ls",
	}
	// One echo to bash, but dash runs the touch: refused under sh only.
	dialect := "echo $'\\' ; touch " + marker + " ;\n echo '"
	for _, shell := range []string{"/bin/sh", "bash"} {
		reg := newTestRegistry(t, Config{Shell: shell, Security: "allowlist", Allowlist: []string{"ls", "echo"}})
		sc := reg.Scope("a")
		before := children(t)
		for _, p := range append(payloads, dialect) {
			res := mustExec(t, sc, &ExecRequest{Command: p, Workdir: dir})
			if p == dialect && shell == "bash" {
				assert.Equal(t, StatusCompleted, res.Details.Status, res.Text())
				continue
			}
			assert.Equal(t, StatusFailed, res.Details.Status, "%s: %q ran: %s", shell, p, res.Text())
			assert.True(t, strings.HasPrefix(res.Text(), "exec denied: "), "%s: %q: %s", shell, p, res.Text())
			_, err := os.Stat(marker)
			require.True(t, os.IsNotExist(err), "%s: %q wrote the marker", shell, p)
		}
		assert.ElementsMatch(t, before, children(t), "%s: nothing was spawned", shell)
		assert.Equal(t, "No running or recent sessions.", mustProcess(t, sc, &ProcessRequest{Action: "list"}).Text())
	}

	t.Run("lines that only run listed commands still run", func(t *testing.T) {
		reg := newTestRegistry(t, Config{Security: "allowlist", Allowlist: []string{"ls", "echo", "grep"}})
		sc := reg.Scope("a")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "x-file"), nil, 0o644))
		for line, want := range map[string]string{
			"ls " + dir + " | grep x-": "x-file",
			`echo "a; b"`:              "a; b",
			"FOO=1 echo ok":            "ok",
			"ls " + dir + " >/dev/null 2>&1 && echo quiet": "quiet",
		} {
			res := mustExec(t, sc, &ExecRequest{Command: line})
			assert.Equal(t, StatusCompleted, res.Details.Status, "%q: %s", line, res.Text())
			assert.Equal(t, want, res.Text(), line)
		}
	})

	t.Run("on-miss asks the approver about each bypass and says it is not allowlisted", func(t *testing.T) {
		a := &approver{}
		reg := newTestRegistry(t, Config{Security: "allowlist", Ask: "on-miss", Allowlist: []string{"ls", "echo"}, Approver: a})
		sc := reg.Scope("a")
		for i, p := range payloads[:6] {
			res := mustExec(t, sc, &ExecRequest{Command: p})
			assert.Equal(t, "exec denied: the operator said no.", res.Text(), p)
			assert.Equal(t, int32(i+1), a.calls.Load(), "%q was not sent to the approver", p)
			assert.False(t, a.last.Load().Allowlisted, p)
			assert.NotEmpty(t, a.last.Load().Reason, p)
		}
		mustExec(t, sc, &ExecRequest{Command: "ls | ls"})
		assert.Equal(t, int32(6), a.calls.Load(), "a fully listed line needs no approval")
	})

	t.Run("ask always shows the approver every parsed command", func(t *testing.T) {
		a := &approver{allow: true}
		reg := newTestRegistry(t, Config{Ask: "always", Allowlist: []string{"echo"}, Approver: a})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo one && printf '%s' two"})
		assert.Equal(t, "one\ntwo", res.Text())
		req := a.last.Load()
		assert.False(t, req.Allowlisted)
		assert.Equal(t, `"printf" is not on the allowlist`, req.Reason)
		assert.Equal(t, []ApprovalCommand{
			{Args: []string{"echo", "one"}, Allowlisted: true},
			{Args: []string{"printf", "%s", "two"}, Reason: `"printf" is not on the allowlist`},
		}, req.Commands)
	})

	t.Run("a line that does not parse is refused with the parser's message", func(t *testing.T) {
		a := &approver{allow: true}
		reg := newTestRegistry(t, Config{Shell: "bash", Ask: "always", Approver: a})
		before := children(t)
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo 'unterminated"})
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.Equal(t, "exec denied: the command does not parse as shell (bash syntax: 1:6: reached EOF without closing quote `'`). Fix the syntax and retry.", res.Text())
		assert.Zero(t, a.calls.Load())
		assert.ElementsMatch(t, before, children(t))
	})
}
