//go:build linux

package bgexec

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/host/hosttest"
	"github.com/stretchr/testify/require"
)

// instantSpawn starts a fake process that prints its command and exits at
// once, so fuzzed exec calls never run a real shell.
func instantSpawn(_ context.Context, spec *host.Spec) (*host.Started, error) {
	f, sp := hosttest.Started()
	go func() {
		_, _ = f.Write([]byte(spec.Command))
		f.Exit(syscall.WaitStatus(3 << 8))
	}()
	return sp, nil
}

// FuzzCall feeds arbitrary JSON to both tools. Invariants: no panic;
// exactly one of result and error; a result has a known status, a text,
// and marshals to the tool envelope.
func FuzzCall(f *testing.F) {
	reg, err := NewRegistry(sandboxed(Config{YieldMs: 10, Containment: ContainmentOff, KillGrace: 10 * time.Millisecond}))
	require.NoError(f, err)
	setHost(reg, &hosttest.Host{StartFunc: instantSpawn})
	f.Cleanup(func() { _ = reg.Close(context.Background()) })
	sc := reg.Scope("fuzz")

	f.Add(true, []byte(`{"command":"echo hi","yieldMs":1000}`))
	f.Add(true, []byte(`{"command":"npm run build","background":true}`))
	f.Add(true, []byte(`{"command":"x","env":{"PATH":"/"},"timeout":-1}`))
	f.Add(true, []byte(`{"command":"x","yieldMs":"abc"}`))
	f.Add(false, []byte(`{"action":"list"}`))
	f.Add(false, []byte(`{"action":"poll","sessionId":"a-b","timeout":"100"}`))
	f.Add(false, []byte(`{"action":"log","sessionId":"a-b","offset":-1,"limit":1e30}`))
	f.Add(false, []byte(`{"action":"send-keys","sessionId":"x","keys":["C-c"],"hex":["zz"]}`))
	f.Add(false, []byte(`{"action":"wait","sessionId":"x","pattern":"(","port":70000}`))
	f.Add(false, []byte(`{"action":"resize","sessionId":"x","cols":0}`))
	f.Add(false, []byte(`not json`))
	f.Add(true, []byte(`{"command":"echo first","command":"echo second"}`))
	f.Add(true, []byte(`{"command":"ls","Command":"rm -rf x","env":{"A":"1","A":"2"}}`))
	f.Add(false, []byte(`{"action":"list","extra":[{"a":1,"a":2}]}`))
	f.Fuzz(func(t *testing.T, exec bool, args []byte) {
		tool := "process"
		if exec {
			tool = "exec"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := sc.Call(ctx, tool, json.RawMessage(args))
		if err != nil {
			require.Nil(t, res)
			return
		}
		require.NotNil(t, res)
		switch res.Details.Status {
		case StatusRunning, StatusCompleted, StatusFailed:
		default:
			t.Fatalf("unknown status %q", res.Details.Status)
		}
		require.NotEmpty(t, res.Text())
		b, err := json.Marshal(res)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(b), `{"content":[{"type":"text","text":`))
		if id := res.Details.SessionID; id != "" && res.Details.Status == StatusRunning {
			_, _ = sc.Process(ctx, &ProcessRequest{Action: "remove", SessionID: id})
		}
	})
}

// FuzzDeriveName checks the name deriver: it never panics, keeps the verb,
// bounds the target, and names a command as if it had read all of it.
func FuzzDeriveName(f *testing.F) {
	for _, s := range []string{"echo hello", "npm run build", "python3 -u x.py", `git commit -m "x y"`, "", "  'unterminated", "ls -la -h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		name := deriveName(cmd)
		toks := splitCommand(cmd)
		if len(toks) == 0 {
			require.Empty(t, name)
			return
		}
		require.Equal(t, nameOf(toks), name, "reading only the first tokens gives the name all of them give")
		require.True(t, strings.HasPrefix(name, toks[0]))
		if len(toks) > 1 {
			target := strings.TrimPrefix(name, toks[0]+" ")
			require.LessOrEqual(t, utf8.RuneCountInString(target), maxNameTarget)
		}
	})
}
