// Package contracttest is the exec and process tools' contract, written
// once and run against every host: the root package runs it for the
// gateway, the sandbox and an SSH node, and the Kubernetes module for its
// pods. Each host gives a way to build a registry whose Config.Host is
// that host; every test goes through the public API only, as an agent
// does, and runs its processes on the host.
package contracttest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bgexec/bgexec"
)

// Host is one host under test.
type Host struct {
	// Name is the host's Config.Host string ("gateway", "sandbox", …).
	Name string
	// New builds a registry whose commands run on the host; the test
	// closes it.
	New func(t *testing.T) *bgexec.Registry
	// Workdir is a directory that exists on the host and that a command
	// may run in; "" for /usr.
	Workdir string
	// Count returns how many processes on the host have marker in their
	// command line; nil counts this machine's (every host the tests run
	// starts its processes on this machine: in a sandbox, behind a
	// loopback sshd, in a container, behind a loopback kubelet server).
	Count func(marker string) int
	// Listen, when not nil, is a command that listens on TCP port (any
	// address of the host) until it is killed. It runs the resources test,
	// for a host that reports listening ports; nil skips it.
	Listen func(port int) string
}

// waitFor is how long any one step may take: long, for a loaded machine.
const waitFor = 60 * time.Second

// Run runs the contract against h, each test in parallel with the
// others.
func Run(t *testing.T, h Host) {
	if h.Workdir == "" {
		h.Workdir = "/usr"
	}
	if h.Count == nil {
		h.Count = countHere
	}
	tests := []struct {
		name string
		run  func(*testing.T, Host)
	}{
		{"a foreground command returns its output", foreground},
		{"a failing command reports its code", failing},
		{"a command past its yield moves to the background", yielded},
		{"stdin takes writes and EOF", stdin},
		{"a timeout ends the command as timed out", timeout},
		{"kill ends every process of the session", kill},
		{"a terminal is resized", terminal},
		{"workdir and environment reach the command", workdirEnv},
		{"a listening port shows in poll and is closed by kill", listening},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, h)
		})
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

func ptr[T any](v T) *T { return &v }

func exec(t *testing.T, sc *bgexec.Scope, req *bgexec.ExecRequest) *bgexec.Result {
	t.Helper()
	res, err := sc.Exec(ctxFor(t), req)
	require.NoError(t, err)
	return res
}

func process(t *testing.T, sc *bgexec.Scope, req *bgexec.ProcessRequest) *bgexec.Result {
	t.Helper()
	res, err := sc.Process(ctxFor(t), req)
	require.NoError(t, err)
	return res
}

// waitEnd waits for a session's end with process wait.
func waitEnd(t *testing.T, sc *bgexec.Scope, id string) *bgexec.Result {
	t.Helper()
	res := process(t, sc, &bgexec.ProcessRequest{Action: "wait", SessionID: id, Timeout: ptr(bgexec.Number(waitFor.Milliseconds() - 5000))})
	require.NotEqual(t, bgexec.StatusRunning, res.Details.Status, "the session did not end: %s", res.Text())
	return res
}

func foreground(t *testing.T, h Host) {
	sc := h.New(t).Scope("contract")
	res := exec(t, sc, &bgexec.ExecRequest{Command: "echo to-stdout; echo to-stderr >&2"})
	require.Equal(t, bgexec.StatusCompleted, res.Details.Status, res.Text())
	assert.Contains(t, res.Text(), "to-stdout")
	assert.Contains(t, res.Text(), "to-stderr", "the model sees stderr too")
	require.NotNil(t, res.Details.ExitCode)
	assert.Equal(t, 0, *res.Details.ExitCode)
}

func failing(t *testing.T, h Host) {
	sc := h.New(t).Scope("contract")
	res := exec(t, sc, &bgexec.ExecRequest{Command: "echo before; exit 3"})
	// A normal exit completes; its code is told beside the output.
	assert.Equal(t, bgexec.StatusCompleted, res.Details.Status, res.Text())
	require.NotNil(t, res.Details.ExitCode, res.Text())
	assert.Equal(t, 3, *res.Details.ExitCode)
	assert.Equal(t, "before\n\n(Command exited with code 3)", res.Text())
}

func yielded(t *testing.T, h Host) {
	sc := h.New(t).Scope("contract")
	res := exec(t, sc, &bgexec.ExecRequest{Command: "echo started; sleep 2; echo finished", YieldMs: ptr(200.0)})
	require.Equal(t, bgexec.StatusRunning, res.Details.Status, res.Text())
	id := res.Details.SessionID
	require.NotEmpty(t, id)
	end := waitEnd(t, sc, id)
	assert.Equal(t, bgexec.StatusCompleted, end.Details.Status, end.Text())
	log := process(t, sc, &bgexec.ProcessRequest{Action: "log", SessionID: id})
	assert.Contains(t, log.Text(), "started")
	assert.Contains(t, log.Text(), "finished")
}

func stdin(t *testing.T, h Host) {
	sc := h.New(t).Scope("contract")
	res := exec(t, sc, &bgexec.ExecRequest{Command: "while read -r l; do echo \"got:$l\"; done; echo eof-seen", Background: true, Stdin: "pipe"})
	require.Equal(t, bgexec.StatusRunning, res.Details.Status, res.Text())
	id := res.Details.SessionID
	w := process(t, sc, &bgexec.ProcessRequest{Action: "write", SessionID: id, Data: "one\ntwo\n", EOF: true})
	require.False(t, w.IsError, w.Text())
	end := waitEnd(t, sc, id)
	assert.Equal(t, bgexec.StatusCompleted, end.Details.Status, end.Text())
	log := process(t, sc, &bgexec.ProcessRequest{Action: "log", SessionID: id})
	assert.Contains(t, log.Text(), "got:one\ngot:two\neof-seen")
}

func timeout(t *testing.T, h Host) {
	sc := h.New(t).Scope("contract")
	res := exec(t, sc, &bgexec.ExecRequest{Command: "echo waiting; sleep 60", Timeout: ptr(1.0)})
	assert.Equal(t, bgexec.StatusFailed, res.Details.Status, res.Text())
	assert.Equal(t, bgexec.ExitReason("timeout"), res.Details.ExitReason, res.Text())
	assert.Contains(t, res.Text(), "Command timed out after 1 seconds")
}

// kill starts a session with two processes besides its shell, one of
// which leaves the process group (setsid), and checks that kill ends both.
func kill(t *testing.T, h Host) {
	sc := h.New(t).Scope("contract")
	marker := fmt.Sprintf("bgexec-contract-%d", rand.Uint64())
	cmd := fmt.Sprintf("setsid sh -c 'sleep 301; : %[1]s' & sh -c 'sleep 302; : %[1]s' & echo up; wait", marker)
	res := exec(t, sc, &bgexec.ExecRequest{Command: cmd, Background: true})
	require.Equal(t, bgexec.StatusRunning, res.Details.Status, res.Text())
	id := res.Details.SessionID
	// The shell (and any wrapper of the host) carries the marker too.
	waitCount(t, h, marker, func(n int) bool { return n >= 3 })
	process(t, sc, &bgexec.ProcessRequest{Action: "kill", SessionID: id})
	end := waitEnd(t, sc, id)
	assert.Equal(t, bgexec.StatusFailed, end.Details.Status, "a killed session is never a success: %s", end.Text())
	assert.Equal(t, bgexec.ExitReason("killed"), end.Details.ExitReason, end.Text())
	waitCount(t, h, marker, func(n int) bool { return n == 0 })
}

// waitCount waits until the number of processes h counts with marker
// is ok.
func waitCount(t *testing.T, h Host, marker string, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	got := h.Count(marker)
	for !ok(got) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		got = h.Count(marker)
	}
	require.True(t, ok(got), "%d processes with %s", got, marker)
}

// countHere counts this machine's processes with marker in their command
// line.
func countHere(marker string) int {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	n := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(marker)) {
			n++
		}
	}
	return n
}

func terminal(t *testing.T, h Host) {
	sc := h.New(t).Scope("contract")
	res := exec(t, sc, &bgexec.ExecRequest{Command: "sh", PTY: true, Background: true})
	require.Equal(t, bgexec.StatusRunning, res.Details.Status, res.Text())
	id := res.Details.SessionID
	r := process(t, sc, &bgexec.ProcessRequest{Action: "resize", SessionID: id, Cols: 101, Rows: 37})
	require.False(t, r.IsError, r.Text())
	// A remote terminal's resize travels apart from its input (a pod's
	// resize is a stream of its own), so it may reach the terminal after
	// the first line typed: ask again until it shows, within 30 s.
	var w *bgexec.Result
	for deadline := time.Now().Add(30 * time.Second); ; {
		typed := process(t, sc, &bgexec.ProcessRequest{Action: "send-keys", SessionID: id, Literal: "stty size"})
		require.False(t, typed.IsError, typed.Text())
		s := process(t, sc, &bgexec.ProcessRequest{Action: "submit", SessionID: id})
		require.False(t, s.IsError, s.Text())
		w = process(t, sc, &bgexec.ProcessRequest{Action: "wait", SessionID: id, Pattern: "37 101", Timeout: ptr(bgexec.Number(3000))})
		if strings.Contains(w.Details.Matched, "37 101") || time.Now().After(deadline) {
			break
		}
	}
	assert.Contains(t, w.Details.Matched, "37 101", w.Text())
	process(t, sc, &bgexec.ProcessRequest{Action: "send-keys", SessionID: id, Literal: "exit 0"})
	process(t, sc, &bgexec.ProcessRequest{Action: "submit", SessionID: id})
	end := waitEnd(t, sc, id)
	assert.Equal(t, bgexec.StatusCompleted, end.Details.Status, end.Text())
}

func workdirEnv(t *testing.T, h Host) {
	sc := h.New(t).Scope("contract")
	res := exec(t, sc, &bgexec.ExecRequest{Command: `pwd; echo "v=$CONTRACT_VALUE"`, Workdir: h.Workdir, Env: map[string]string{"CONTRACT_VALUE": "it arrived"}})
	require.Equal(t, bgexec.StatusCompleted, res.Details.Status, res.Text())
	assert.Contains(t, res.Text(), h.Workdir+"\n")
	assert.Contains(t, res.Text(), "v=it arrived")
}

func listening(t *testing.T, h Host) {
	if h.Listen == nil {
		t.Skip("the host does not report listening ports")
	}
	sc := h.New(t).Scope("contract")
	port := 20000 + rand.IntN(20000)
	res := exec(t, sc, &bgexec.ExecRequest{Command: h.Listen(port), Background: true})
	require.Equal(t, bgexec.StatusRunning, res.Details.Status, res.Text())
	id := res.Details.SessionID
	var poll *bgexec.Result
	deadline := time.Now().Add(waitFor)
	for {
		poll = process(t, sc, &bgexec.ProcessRequest{Action: "poll", SessionID: id})
		if r := poll.Details.Resources; r != nil && len(r.Ports) > 0 || poll.Details.Status != bgexec.StatusRunning || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, bgexec.StatusRunning, poll.Details.Status, poll.Text())
	require.NotNil(t, poll.Details.Resources, "poll reports the session's resources")
	require.Len(t, poll.Details.Resources.Ports, 1, "ports %+v", poll.Details.Resources.Ports)
	assert.Equal(t, port, poll.Details.Resources.Ports[0].Port)
	kill := process(t, sc, &bgexec.ProcessRequest{Action: "kill", SessionID: id})
	assert.Contains(t, kill.Text(), fmt.Sprintf("Its listening port :%d is closed.", port))
	end := waitEnd(t, sc, id)
	assert.Equal(t, bgexec.StatusFailed, end.Details.Status, end.Text())
}
