//go:build linux

package bgexec

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sshhost "github.com/bgexec/bgexec/internal/host/ssh"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node session's memory, tasks and listening port show in list and
// poll, read on the node (a real sshd on loopback); a kill says the port
// is closed.
func TestNodeResources(t *testing.T) {
	t.Parallel()
	py := needTool(t, "python3")
	d := startSSHD(t)
	reg := nodeRegistry(t, d, Config{KillGrace: time.Second}, nil)
	sc := reg.Scope("agent:node")

	// One process that holds 96 MiB and listens on a port of its own.
	script := `import socket, time; b = bytearray(96 << 20); b[::4096] = b"x" * len(b[::4096]); ` +
		`s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print("port", s.getsockname()[1], flush=True); time.sleep(300)`
	id := startBackground(t, sc, &ExecRequest{Command: py + " -c " + shellQuote(script)})
	w := mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Pattern: `port \d+`, Timeout: ptr(Number(60000))})
	require.Equal(t, "pattern", w.Details.Condition, w.Text())
	m := regexp.MustCompile(`port (\d+)`).FindStringSubmatch(w.Details.Matched)
	require.NotNil(t, m, w.Details.Matched)
	port, err := strconv.Atoi(m[1])
	require.NoError(t, err)

	// A list waits at most resourceWait for a session's first view (a
	// loaded node may answer later): list until the port shows.
	var list *Result
	var r *Resources
	for deadline := time.Now().Add(30 * time.Second); ; {
		list = mustProcess(t, sc, &ProcessRequest{Action: "list"})
		require.Len(t, list.Details.Sessions, 1)
		r = list.Details.Sessions[0].Resources
		if (r != nil && len(r.Ports) > 0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NotNil(t, r, list.Text())
	assert.Equal(t, []Listener{{Port: port, Address: "127.0.0.1"}}, r.Ports)
	assert.GreaterOrEqual(t, r.MemoryBytes, int64(96<<20))
	assert.GreaterOrEqual(t, r.Tasks, 1)
	assert.GreaterOrEqual(t, r.CPUMs, int64(0))
	line := strings.Split(list.Text(), "\n")[0]
	assert.Regexp(t, `^`+id+` running +\S+ :: .*  \[:`+m[1]+`, \d+(\.\d+)? MiB\]$`, line)

	poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
	pr := poll.Details.Resources
	require.NotNil(t, pr, poll.Text())
	assert.Equal(t, []Listener{{Port: port, Address: "127.0.0.1"}}, pr.Ports)
	assert.GreaterOrEqual(t, pr.MemoryBytes, int64(96<<20))

	// A view younger than sshhost.ResourceTTL is reused: no round trip. Whether
	// the second read came within the TTL is known only afterwards, so it
	// is tried until it did (a loaded machine may stall between reads).
	rp := sessionOf(reg, id).Process()
	checked := false
	for deadline := time.Now().Add(30 * time.Second); !checked && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, at1, _ := sshhost.ResourceView(rp, false)
		_, at2, _ := sshhost.ResourceView(rp, false)
		if time.Since(at1) < sshhost.ResourceTTL {
			assert.Equal(t, at1, at2, "a read within the TTL is the cached one")
			checked = true
		}
	}
	require.True(t, checked, "no two reads came within %s", sshhost.ResourceTTL)
	renewed := false
	for deadline := time.Now().Add(30 * time.Second); !renewed && time.Now().Before(deadline); {
		_, at1, _ := sshhost.ResourceView(rp, false)
		_, at2, _ := sshhost.ResourceView(rp, true) // waits at most resourceWait
		renewed = at2.After(at1)
	}
	assert.True(t, renewed, "a fresh read (kill's) reads anew")

	// The kill's text may come before the end on a loaded machine
	// ("Termination requested"): the end's text says the port closed.
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
	poll = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
	assert.True(t, strings.HasSuffix(poll.Text(), " Its listening port :"+m[1]+" is closed."), poll.Text())
	list = mustProcess(t, sc, &ProcessRequest{Action: "list"})
	for _, s := range list.Details.Sessions {
		assert.Nil(t, s.Resources, "a finished session has none")
	}
}

// A node whose procfs cannot be read reports no resources, and the
// session works as before.
func TestNodeResourcesUnreadable(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	reg := nodeRegistry(t, d, Config{}, nil)
	reg.nodes.(*sshhost.Pool).SetProcRoot("n1", t.TempDir()) // no procfs there
	sc := reg.Scope("agent:node")
	id := startBackground(t, sc, &ExecRequest{Command: "echo ready; sleep 300"})
	waitFor(t, sc, id, "^ready$")
	list := mustProcess(t, sc, &ProcessRequest{Action: "list"})
	require.Len(t, list.Details.Sessions, 1)
	assert.Nil(t, list.Details.Sessions[0].Resources)
	assert.NotContains(t, list.Text(), "[")
	poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
	assert.False(t, poll.IsError, poll.Text())
	assert.Nil(t, poll.Details.Resources)
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
	poll = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
	assert.NotContains(t, poll.Text(), "listening port")
}
