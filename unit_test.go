//go:build linux

package bgexec

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeriveName(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"echo hello":                     "echo hello",
		"npm run build":                  "npm run",
		"ls -la":                         "ls -la",
		"python3 -u x.py":                "python3 x.py",
		"make":                           "make",
		"  ":                             "",
		`git commit -m "a message here"`: "git commit",
		`grep -r "two words" .`:          "grep two words",
		"cat " + strings.Repeat("a", 30) + strings.Repeat("b", 30): "cat " + strings.Repeat("a", 22) + "..." + strings.Repeat("b", 22),
		"tail -f -n 5": "tail 5",
		"x -a -b":      "x -a",
	}
	for cmd, want := range cases {
		t.Run("the name of "+cmd, func(t *testing.T) {
			assert.Equal(t, want, deriveName(cmd))
		})
	}
	assert.Len(t, []rune(strings.TrimPrefix(deriveName("cat "+strings.Repeat("é", 100)), "cat ")), maxNameTarget-1, "22 + 3 + 22 characters")
}

func TestCompactDuration(t *testing.T) {
	t.Parallel()
	cases := map[time.Duration]string{
		850 * time.Millisecond:                "850ms",
		45 * time.Second:                      "45s",
		2*time.Minute + 5*time.Second:         "2m5s",
		2 * time.Minute:                       "2m",
		90 * time.Minute:                      "1h30m",
		51 * time.Hour:                        "2d3h",
		-time.Second:                          "0ms",
		59*time.Second + 999*time.Millisecond: "59s",
	}
	for d, want := range cases {
		assert.Equal(t, want, compactDuration(d), d.String())
	}
}

func TestConfigClamps(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		name string
		vars map[string]string
		want Config
	}{
		{"unset variables keep the defaults", nil, Config{}},
		{"values in range are taken", map[string]string{EnvYieldMs: "500", EnvMaxOutputChars: "5000", EnvPendingMaxOutputChars: "2000", EnvJobTTLMs: "120000"},
			Config{YieldMs: 500, MaxOutputChars: 5000, PendingMaxOutputChars: 2000, JobTTLMs: 120000}},
		{"values below the range are clamped up", map[string]string{EnvYieldMs: "1", EnvMaxOutputChars: "5", EnvPendingMaxOutputChars: "0", EnvJobTTLMs: "10"},
			Config{YieldMs: 10, MaxOutputChars: 1000, PendingMaxOutputChars: 1000, JobTTLMs: 60000}},
		{"values above the range are clamped down", map[string]string{EnvYieldMs: "1e9", EnvMaxOutputChars: "999999999", EnvPendingMaxOutputChars: "300000", EnvJobTTLMs: "99999999999"},
			Config{YieldMs: 120000, MaxOutputChars: 200000, PendingMaxOutputChars: 200000, JobTTLMs: 10800000}},
		{"values that do not parse are ignored", map[string]string{EnvYieldMs: "soon", EnvMaxOutputChars: "", EnvJobTTLMs: "NaN"}, Config{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, ConfigFromEnv(env(c.vars)))
		})
	}
	f := false
	assert.Equal(t, Config{NotifyOnExit: &f, NotifyOnExitEmptySuccess: true},
		ConfigFromEnv(env(map[string]string{EnvNotifyOnExit: "false", EnvNotifyOnExitEmpty: "1"})))

	t.Run("resolved settings clamp a literal Config too", func(t *testing.T) {
		st, err := resolveConfig(Config{YieldMs: -5, MaxOutputChars: 1500, PendingMaxOutputChars: 100000, JobTTLMs: 1, TimeoutSec: -1}, env(nil))
		require.NoError(t, err)
		assert.Equal(t, 10*time.Millisecond, st.yield)
		assert.Equal(t, 1500, st.maxChars)
		assert.Equal(t, 1500, st.pendingChars, "pending never above the aggregate cap")
		assert.Equal(t, time.Minute, st.ttl)
		assert.Zero(t, st.timeout)
		assert.True(t, st.notifyOnExit)
	})
	t.Run("the shell follows SHELL, with fish replaced", func(t *testing.T) {
		assert.Equal(t, "sh", defaultShell(env(nil)))
		assert.Equal(t, "/bin/zsh", defaultShell(env(map[string]string{"SHELL": "/bin/zsh"})))
		assert.NotContains(t, defaultShell(env(map[string]string{"SHELL": "/usr/bin/fish"})), "fish")
	})
	t.Run("bad settings are refused", func(t *testing.T) {
		for _, c := range []Config{{ShellMarker: "novalue"}, {Workdir: "/does/not/exist"}, {Host: "mars"}, {Host: "node"}, {Security: "lax"}, {Ask: "sometimes"}} {
			_, err := NewRegistry(c)
			assert.Error(t, err, "%+v", c)
		}
	})
	t.Run("yield and timeout parameters are clamped", func(t *testing.T) {
		assert.Equal(t, 10*time.Millisecond, clampYield(0))
		assert.Equal(t, 10*time.Millisecond, clampYield(-100))
		assert.Equal(t, 120*time.Second, clampYield(1e12))
		assert.Equal(t, 1500*time.Millisecond, clampYield(1500))
		d, msg := resolveTimeout(ptr(-3.0), time.Hour)
		assert.Zero(t, d)
		assert.Empty(t, msg)
		d, _ = resolveTimeout(nil, time.Hour)
		assert.Equal(t, time.Hour, d)
		d, _ = resolveTimeout(ptr(0.25), time.Hour)
		assert.Equal(t, 250*time.Millisecond, d)
	})
}

func TestSlugIDs(t *testing.T) {
	t.Parallel()
	taken := map[string]bool{}
	for range 3000 {
		id := newSlug(func(s string) bool { return taken[s] })
		require.False(t, taken[id])
		taken[id] = true
	}
	assert.Len(t, taken, 3000)
	// Everything two words can name is taken: collisions fall back to suffixes.
	all := func(string) bool { return false }
	assert.Regexp(t, `^[a-z]+-[a-z]+$`, newSlug(all))
	base := 0
	id := newSlug(func(s string) bool { base++; return base <= 1 })
	assert.Regexp(t, `^[a-z]+-[a-z]+-2$`, id)
}

func TestResultPlainText(t *testing.T) {
	sc := newTestRegistry(t, Config{}).Scope("agent")
	ok := mustExec(t, sc, &ExecRequest{Command: "echo hello"})
	require.NotEmpty(t, ok.Details.Aggregated)
	assert.Equal(t, ok.Text()+"\n\nDetails: "+ok.DetailsJSON(), ok.PlainText())
	assert.NotContains(t, ok.DetailsJSON(), "hello", "the text carries the output already")
	assert.Contains(t, ok.DetailsJSON(), `"exitCode":0`)

	bad, err := sc.Process(testCtx(t), &ProcessRequest{Action: "poll", SessionID: "nope"})
	require.NoError(t, err)
	require.True(t, bad.IsError)
	assert.True(t, strings.HasPrefix(bad.PlainText(), "Error: "+bad.Text()+"\n\nDetails: {"), bad.PlainText())
	assert.Contains(t, bad.DetailsJSON(), `"status":"failed"`)
}
