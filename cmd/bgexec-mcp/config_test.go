package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bgexec/bgexec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bgexec.json")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func noEnv(string) string { return "" }

func TestConfigDefaults(t *testing.T) {
	st, err := parseConfig(nil, io.Discard, noEnv)
	require.NoError(t, err)
	assert.Equal(t, 50000, st.opts.cfg.MaxCallWaitMs, "below the TypeScript SDK's 60 s request timeout")
	assert.True(t, st.opts.cfg.ExitNoticesInResults)
	assert.Equal(t, 5*time.Second, st.opts.progressEvery)
	assert.Equal(t, 5*time.Minute, st.opts.approvalTimeout)
	assert.Equal(t, 64, st.maxHTTPSessions)
	assert.Equal(t, time.Hour, st.idle)
	assert.Equal(t, 64<<20, st.maxMessage)
	assert.Nil(t, st.opts.cfg.Sandbox)
	assert.Empty(t, st.opts.cfg.Security)
	assert.Empty(t, st.opts.cfg.Ask)
}

func TestConfigFileAndFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeConfig(t, `{
  "workdir": "`+dir+`",
  "security": "allowlist",
  "ask": "on-miss",
  "allowlist": ["ls", "cat"],
  "approvalTimeout": "90s",
  "approvalMode": "wait",
  "elevated": true,
  "limits": {"memoryBytes": 536870912, "tasks": 256, "cpu": 1.5},
  "quotas": {"maxRunning": 8, "maxTimeoutSec": 600, "maxOutputBytes": 1048576},
  "containment": "auto",
  "exitNotices": false,
  "maxCallMs": 30000,
  "progressMs": 1000,
  "maxHttpSessions": 4,
  "sessionIdle": "10m",
  "maxMessageBytes": 2048
}`)
	st, err := parseConfig([]string{"-config", file}, io.Discard, noEnv)
	require.NoError(t, err)
	cfg := st.opts.cfg
	assert.Equal(t, dir, cfg.Workdir)
	assert.Equal(t, "allowlist", cfg.Security)
	assert.Equal(t, "on-miss", cfg.Ask)
	assert.Equal(t, []string{"ls", "cat"}, cfg.Allowlist)
	assert.Equal(t, 90*time.Second, st.opts.approvalTimeout)
	assert.Equal(t, "wait", st.opts.approvalMode)
	assert.True(t, cfg.Elevation.Enabled)
	assert.Equal(t, bgexec.Limits{MemoryBytes: 512 << 20, Tasks: 256, CPU: 1.5}, cfg.Limits)
	assert.Equal(t, 8, cfg.MaxSessionsPerScope)
	assert.Equal(t, 8, cfg.MaxSessions)
	assert.InDelta(t, 600, cfg.MaxTimeoutSec, 0)
	assert.Equal(t, int64(1<<20), cfg.MaxOutputBytes)
	assert.False(t, cfg.ExitNoticesInResults)
	assert.Equal(t, 30000, cfg.MaxCallWaitMs)
	assert.Equal(t, time.Second, st.opts.progressEvery)
	assert.Equal(t, 4, st.maxHTTPSessions)
	assert.Equal(t, 10*time.Minute, st.idle)
	assert.Equal(t, 2048, st.maxMessage)

	t.Run("flags override the file wherever they stand", func(t *testing.T) {
		st, err := parseConfig([]string{"-ask", "always", "-config", file, "-allowlist", "git", "-allowlist", "make,go", "-exit-notices", "-max-call-ms", "0"}, io.Discard, noEnv)
		require.NoError(t, err)
		assert.Equal(t, "always", st.opts.cfg.Ask)
		assert.Equal(t, "allowlist", st.opts.cfg.Security, "a key without its flag keeps the file's value")
		assert.Equal(t, []string{"git", "make", "go"}, st.opts.cfg.Allowlist, "a list flag replaces the file's list; repeating it appends")
		assert.True(t, st.opts.cfg.ExitNoticesInResults)
		assert.Zero(t, st.opts.cfg.MaxCallWaitMs)
	})

	t.Run("the environment gives the sandbox default, the file and flags override it", func(t *testing.T) {
		needTool(t, "bwrap")
		env := func(k string) string {
			if k == "BGEXEC_SANDBOX" {
				return "1"
			}
			return ""
		}
		st, err := parseConfig(nil, io.Discard, env)
		require.NoError(t, err)
		assert.NotNil(t, st.opts.cfg.Sandbox)
		st, err = parseConfig([]string{"-config", writeConfig(t, `{"sandbox": {"enabled": false}}`)}, io.Discard, env)
		require.NoError(t, err)
		assert.Nil(t, st.opts.cfg.Sandbox)
		st, err = parseConfig([]string{"-sandbox", "-sandbox-writable", dir, "-sandbox-network"}, io.Discard, noEnv)
		require.NoError(t, err)
		require.NotNil(t, st.opts.cfg.Sandbox)
		assert.Equal(t, []string{dir}, st.opts.cfg.Sandbox.WritablePaths)
		assert.True(t, st.opts.cfg.Sandbox.Network)
	})
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		args       []string
		want       string
	}{
		{name: "an unknown key", file: `{"securty": "deny"}`, want: `unknown key "securty"`},
		{name: "an unknown nested key", file: `{"limits": {"memory": 1}}`, want: `unknown key "memory"`},
		{name: "a wrong type", file: `{"limits": {"tasks": "many"}}`, want: `key "limits.tasks": a JSON string is not a int`},
		{name: "invalid JSON", file: `{"ask": }`, want: "not valid JSON"},
		{name: "two values", file: `{} {}`, want: "more than one JSON value"},
		{name: "a bad security", file: `{"security": "lax"}`, want: `key security (flag -security): "lax" is not one of full, allowlist, deny`},
		{name: "a bad approval mode", args: []string{"-approval-mode", "later"}, want: `key approvalMode (flag -approval-mode): "later" is not one of pending, wait`},
		{name: "a bad ask flag", args: []string{"-ask", "sometimes"}, want: `key ask (flag -ask): "sometimes" is not one of off, on-miss, always`},
		{name: "a bad duration", file: `{"approvalTimeout": "soon"}`, want: `key approvalTimeout (flag -approval-timeout): "soon" is not a duration`},
		{name: "a zero approval timeout", args: []string{"-approval-timeout", "0s"}, want: "key approvalTimeout (flag -approval-timeout): must be more than 0"},
		{name: "a negative limit", file: `{"limits": {"memoryBytes": -1}}`, want: "key limits.memoryBytes (flag -memory-bytes): must not be negative"},
		{name: "a negative call cap", args: []string{"-max-call-ms", "-1"}, want: "key maxCallMs (flag -max-call-ms)"},
		{name: "no HTTP sessions", file: `{"maxHttpSessions": 0}`, want: "key maxHttpSessions (flag -max-http-sessions): must be at least 1"},
		{name: "http without a token", args: []string{"-http", "127.0.0.1:0"}, want: "key tokenFile (flag -token-file): is required with http"},
		{name: "a token without http", args: []string{"-token-file", "x"}, want: "key tokenFile (flag -token-file): needs http"},
		{name: "a relative sandbox path", args: []string{"-sandbox", "-sandbox-writable", "rel/dir"}, want: `key sandbox.writablePaths (flag -sandbox-writable): "rel/dir" is not an absolute path`},
		{name: "sandbox paths without the sandbox", file: `{"sandbox": {"hidePaths": ["/etc/ssh"]}}`, want: "key sandbox.enabled (flag -sandbox)"},
		{name: "a node without an address", file: `{"nodes": {"build1": {"user": "ci"}}}`, want: "key nodes.build1.addr"},
		{name: "a workdir bgexec refuses", args: []string{"-workdir", "/no/such/dir"}, want: `key workdir (flag -workdir): "/no/such/dir" is not an existing directory`},
		{name: "a node host without nodes", args: []string{"-host", "node"}, want: "the configuration is refused: bgexec: Config.Host is \"node\" but Config.Nodes is empty"},
		{name: "a stray argument", args: []string{"stray"}, want: "unexpected arguments"},
		{name: "a missing file", args: []string{"-config", "/no/such/file.json"}, want: "/no/such/file.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"-config", writeConfig(t, tc.file)}, args...)
			}
			_, err := parseConfig(args, io.Discard, noEnv)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
