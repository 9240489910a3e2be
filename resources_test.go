//go:build linux

package bgexec

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server's listening port and a hog's memory show in list and poll; a
// kill says the port is closed.
func TestResourcesView(t *testing.T) {
	t.Parallel()
	py := needTool(t, "python3")
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("agent:view")

	srv := mustExec(t, sc, &ExecRequest{Command: py + " -u -m http.server 0 --bind 127.0.0.1", Background: true})
	srvID := srv.Details.SessionID
	w := mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: srvID, Pattern: `port \d+`, Timeout: ptr(Number(60000))})
	require.Equal(t, "pattern", w.Details.Condition, w.Text())
	m := regexp.MustCompile(`port (\d+)`).FindStringSubmatch(w.Details.Matched)
	require.NotNil(t, m, w.Details.Matched)
	port, _ := strconv.Atoi(m[1])

	hog := mustExec(t, sc, &ExecRequest{Command: py + ` -u -c 'import time; b = bytearray(96<<20); b[::4096] = b"x"*len(b[::4096]); print("ready"); time.sleep(300)'`, Background: true})
	hogID := hog.Details.SessionID
	w = mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: hogID, Pattern: "ready", Timeout: ptr(Number(60000))})
	require.Equal(t, "pattern", w.Details.Condition, w.Text())

	list := mustProcess(t, sc, &ProcessRequest{Action: "list"})
	byID := map[string]SessionInfo{}
	for _, s := range list.Details.Sessions {
		byID[s.SessionID] = s
	}
	sr := byID[srvID].Resources
	require.NotNil(t, sr)
	assert.Equal(t, []Listener{{Port: port, Address: "127.0.0.1"}}, sr.Ports)
	assert.Greater(t, sr.MemoryBytes, int64(1<<20))
	assert.GreaterOrEqual(t, sr.Tasks, 1)
	assert.GreaterOrEqual(t, sr.CPUMs, int64(0))
	hr := byID[hogID].Resources
	require.NotNil(t, hr)
	assert.GreaterOrEqual(t, hr.MemoryBytes, int64(96<<20), "the hog's memory")
	assert.Empty(t, hr.Ports)

	var srvLine, hogLine string
	for _, l := range strings.Split(list.Text(), "\n") {
		switch {
		case strings.HasPrefix(l, srvID+" "):
			srvLine = l
		case strings.HasPrefix(l, hogID+" "):
			hogLine = l
		}
	}
	assert.Regexp(t, `^`+srvID+` running +\S+ :: \S+ http.server  \[:`+m[1]+`, \d+(\.\d)? MiB\]$`, srvLine)
	// The hog's line shows its memory: the value, whichever way it is
	// rounded (a hog holding 99.5 MiB shows "[99.5 MiB]", one of 100 MiB
	// "[100 MiB]").
	shown := regexp.MustCompile(`  \[(\d+(?:\.\d+)?) (MiB|GiB)\]$`).FindStringSubmatch(hogLine)
	require.NotNil(t, shown, "the hog's line shows its memory: %q", hogLine)
	mib, err := strconv.ParseFloat(shown[1], 64)
	require.NoError(t, err)
	if shown[2] == "GiB" {
		mib *= 1024
	}
	assert.GreaterOrEqual(t, mib, 96.0, "the hog's line: %q", hogLine)
	assert.InDelta(t, float64(hr.MemoryBytes)/(1<<20), mib, 0.5, "the line shows the hog's measured memory: %q", hogLine)

	poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: hogID})
	require.NotNil(t, poll.Details.Resources)
	assert.GreaterOrEqual(t, poll.Details.Resources.MemoryBytes, int64(96<<20))

	kill := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: srvID})
	assert.Equal(t, "Killed session "+srvID+". Its listening port :"+m[1]+" is closed.", kill.Text())
	// A finished session has no resources.
	list = mustProcess(t, sc, &ProcessRequest{Action: "list"})
	for _, s := range list.Details.Sessions {
		if s.SessionID == srvID {
			assert.Nil(t, s.Resources)
		}
	}
}

// A server that ends on its own: its poll says the port it listened on
// is closed.
func TestResourcesClosedPortsOnExit(t *testing.T) {
	t.Parallel()
	py := needTool(t, "python3")
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("agent:ports")
	res := mustExec(t, sc, &ExecRequest{Command: py + ` -u -c 'import socket,sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print("port", s.getsockname()[1]); sys.stdin.readline()'`, Background: true, Stdin: "pipe"})
	id := res.Details.SessionID
	w := mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Pattern: `port \d+`, Timeout: ptr(Number(60000))})
	require.Equal(t, "pattern", w.Details.Condition, w.Text())
	port := strings.TrimPrefix(w.Details.Matched, "port ")
	poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
	require.NotNil(t, poll.Details.Resources)
	require.Len(t, poll.Details.Resources.Ports, 1)
	mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "\n", EOF: true})
	require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
	// A wait that sees the end says so too.
	w = mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Pattern: "never", Timeout: ptr(Number(60000))})
	assert.True(t, strings.HasSuffix(w.Text(), "Process exited with code 0. Its listening port :"+port+" is closed."), w.Text())
	poll = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
	assert.True(t, strings.HasSuffix(poll.Text(), "Process exited with code 0. Its listening port :"+port+" is closed."), poll.Text())
	assert.Nil(t, poll.Details.Resources)
}

// Without a cgroup a session's processes are its process tree, learned as
// it grows: a listener whose parent exits (the kernel reparents it out of
// the tree) still counts once seen, and kill still names its port.
func TestResourcesProcessTreeWithoutCgroup(t *testing.T) {
	skipInSandboxSuite(t, "it counts the gateway's process tree; in a sandbox bwrap and its init are in the tree too")
	t.Parallel()
	py := needTool(t, "python3")
	script := filepath.Join(t.TempDir(), "listen.py")
	require.NoError(t, os.WriteFile(script, []byte(`import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print("port", s.getsockname()[1], flush=True)
time.sleep(300)
`), 0o600))
	reg := newTestRegistry(t, Config{Containment: ContainmentOff})
	sc := reg.Scope("agent:tree")
	// The inner shell starts the listener and exits on a line of input;
	// the session's shell then becomes a sleep.
	res := mustExec(t, sc, &ExecRequest{Command: "sh -c '" + py + " " + script + " & read x'; exec sleep 300", Background: true, Stdin: "pipe"})
	id := res.Details.SessionID
	w := mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Pattern: `port \d+`, Timeout: ptr(Number(60000))})
	require.Equal(t, "pattern", w.Details.Condition, w.Text())
	port, _ := strconv.Atoi(strings.TrimPrefix(w.Details.Matched, "port "))
	s := sessionOf(reg, id)
	refreshResources(s)
	r := sessionResources(s)
	require.NotNil(t, r)
	require.Equal(t, 3, r.Tasks, "the shell, the inner shell and the listener")
	require.Equal(t, []Listener{{Port: port, Address: "127.0.0.1"}}, r.Ports)

	mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "\n"})
	// The inner shell exits: the listener's parent is no longer in the tree.
	deadline := time.Now().Add(time.Minute)
	for {
		refreshResources(s)
		if r = sessionResources(s); r.Tasks < 3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the inner shell did not exit: %+v", r)
		time.Sleep(10 * time.Millisecond) // the shell is reading its line
	}
	assert.Equal(t, 2, r.Tasks, "the session's sleep and the reparented listener")
	assert.Equal(t, []Listener{{Port: port, Address: "127.0.0.1"}}, r.Ports, "the reparented listener still counts")
	poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
	require.NotNil(t, poll.Details.Resources)
	assert.Equal(t, r.Ports, poll.Details.Resources.Ports)

	kill := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	assert.Equal(t, "Killed session "+id+". Its listening port :"+strconv.Itoa(port)+" is closed.", kill.Text())
}
