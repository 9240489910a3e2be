//go:build linux

package bgexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	sshhost "github.com/bgexec/bgexec/internal/host/ssh"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestNodeForeground(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	reg := nodeRegistry(t, d, Config{}, nil)
	sc := reg.Scope("agent:main:main")

	t.Run("output of both streams and the exit code come from the node", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "echo out; echo err >&2; exit 3"})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		require.NotNil(t, res.Details.ExitCode)
		assert.Equal(t, 3, *res.Details.ExitCode)
		assert.Contains(t, res.Text(), "out")
		assert.Contains(t, res.Text(), "err")
		assert.NotContains(t, res.Text(), "bgexec1")
	})
	t.Run("a signal's name comes from the node", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "kill -s TERM $$"})
		assert.Equal(t, StatusFailed, res.Details.Status, res.Text())
		assert.Equal(t, "SIGTERM", res.Details.ExitSignal, res.Text())
		assert.Equal(t, ExitReasonSignal, res.Details.ExitReason)
	})
	t.Run("env and markers are set on the node", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: `printf '%s|%s|%s\n' "$FOO" "$OPENCLAW_SHELL" "$OPENCLAW_CLI"`, Env: map[string]string{"FOO": "a b'c\\d"}})
		assert.Equal(t, "a b'c\\d|exec|1", strings.TrimSpace(res.Text()))
	})
}

// nodeEvents records exit events' texts.
type nodeEvents struct {
	mu    sync.Mutex
	texts []string
	got   chan struct{}
}

func (n *nodeEvents) SystemEvent(_, text string) {
	n.mu.Lock()
	n.texts = append(n.texts, text)
	n.mu.Unlock()
	select {
	case n.got <- struct{}{}:
	default:
	}
}

func (n *nodeEvents) Heartbeat(string, string) {}

func TestNodeBackgroundSessions(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	reg := nodeRegistry(t, d, Config{KillGrace: time.Second}, nil)
	sc := reg.Scope("agent:main:main")

	t.Run("kill ends the whole remote process tree", func(t *testing.T) {
		tag := newTag(t)
		id := startBackground(t, sc, &ExecRequest{Command: "sleep 1000 & sleep 1000 & echo ready; wait", Env: map[string]string{tagEnv: tag}})
		waitFor(t, sc, id, "^ready$")
		awaitTagged(t, tag, 3) // the shell and its two children
		res := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		assert.Equal(t, "Killed session "+id+".", res.Text())
		assert.Equal(t, ExitReasonKilled, res.Details.ExitReason)
		assert.Equal(t, "SIGTERM", res.Details.ExitSignal)
		awaitNoTagged(t, tag)
	})
	t.Run("kill escalates to SIGKILL after the grace period", func(t *testing.T) {
		tag := newTag(t)
		id := startBackground(t, sc, &ExecRequest{Command: "trap '' TERM HUP; echo ready; while :; do sleep 1; done", Env: map[string]string{tagEnv: tag}})
		waitFor(t, sc, id, "^ready$")
		res := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		assert.Equal(t, "SIGKILL", res.Details.ExitSignal, res.Text())
		awaitNoTagged(t, tag)
	})
	t.Run("the timeout ends a remote run", func(t *testing.T) {
		tag := newTag(t)
		res := mustExec(t, sc, &ExecRequest{Command: "sleep 1000", Timeout: ptr(0.5), Env: map[string]string{tagEnv: tag}})
		assert.Equal(t, StatusFailed, res.Details.Status)
		assert.Equal(t, ExitReasonTimeout, res.Details.ExitReason)
		assert.Contains(t, res.Text(), "timed out")
		awaitNoTagged(t, tag)
	})
	t.Run("stdin pipe takes write and eof", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: "echo ready; cat; echo done", Stdin: "pipe"})
		waitFor(t, sc, id, "^ready$")
		res := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "hello\n", EOF: true})
		require.False(t, res.IsError, res.Text())
		res = waitExit(t, sc, id)
		assert.Contains(t, res.Text(), "hello\ndone")
		assert.Contains(t, res.Text(), "Process exited with code 0.")
	})
	t.Run("yield backgrounds a remote run and poll drains it", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "echo first; read x", Stdin: "pipe", YieldMs: ptr(300.0)})
		require.Equal(t, StatusRunning, res.Details.Status, res.Text())
		id := res.Details.SessionID
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "\n"})
		waitExit(t, sc, id)
		res = mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id})
		assert.Contains(t, res.Text(), "first")
		mustProcess(t, sc, &ProcessRequest{Action: "clear", SessionID: id})
	})
	t.Run("wait for a port checks it on the node", func(t *testing.T) {
		id := startBackground(t, sc, &ExecRequest{Command: "sleep 1000"})
		res := mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Port: d.port, Timeout: ptr(Number(20000))})
		assert.Equal(t, "port", res.Details.Condition, res.Text())
		// A port bound but not listening: nobody accepts on it, and no
		// parallel test can take it meanwhile (a closed listener's port
		// could be).
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fd)
		require.NoError(t, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
		sa, err := unix.Getsockname(fd)
		require.NoError(t, err)
		free := sa.(*unix.SockaddrInet4).Port
		res = mustProcess(t, sc, &ProcessRequest{Action: "wait", SessionID: id, Port: free, Timeout: ptr(Number(300))})
		assert.Equal(t, "timeout", res.Details.Condition, res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "remove", SessionID: id})
	})
}

func TestNodePTY(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	reg := nodeRegistry(t, d, Config{}, nil)
	sc := reg.Scope("agent:main:main")
	id := startBackground(t, sc, &ExecRequest{PTY: true, Command: `tty; stty size; read a; stty size; read b; echo "got:$b"`})
	// A wait takes the output it read, so one wait covers both lines.
	waitFor(t, sc, id, "^30 120$")
	res := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id})
	assert.Regexp(t, `(?m)^/dev/pts/\d+$`, res.Text())
	res = mustProcess(t, sc, &ProcessRequest{Action: "resize", SessionID: id, Cols: 100, Rows: 40})
	require.False(t, res.IsError, res.Text())
	mustProcess(t, sc, &ProcessRequest{Action: "send-keys", SessionID: id, Keys: []string{"x", "Enter"}})
	waitFor(t, sc, id, "^40 100$")
	mustProcess(t, sc, &ProcessRequest{Action: "paste", SessionID: id, Text: "hello", Bracketed: ptr(false)})
	mustProcess(t, sc, &ProcessRequest{Action: "submit", SessionID: id})
	waitFor(t, sc, id, "^got:hello$")
	res = waitExit(t, sc, id)
	assert.Contains(t, res.Text(), "Process exited with code 0.")

	t.Run("a cursor-position query is answered over the connection with the real cursor", func(t *testing.T) {
		id := startPTY(t, sc, rawHexDumpAfter(`printf 'ready\033[6n\n'`, len("\x1b[1;6R")))
		assert.Equal(t, fmt.Sprintf("%x", "\x1b[1;6R"), dumpedHex(t, sc, id))
	})
	t.Run("the screen of a remote terminal", func(t *testing.T) {
		id := startPTY(t, sc, `printf '\033[2J\033[Hrow one\r\n\r\n  row three'; sleep 30`)
		res := mustProcess(t, sc, &ProcessRequest{Action: "screen", SessionID: id, IdleMs: ptr(300.0), Timeout: ptr(Number(10000))})
		assert.Equal(t, "row one\n\n  row three\n[cursor row 3 col 12; alternate screen off]", res.Text())
		assert.Equal(t, 120, res.Details.Cols)
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})
}

func TestNodeConnectionLost(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"the server's session processes are killed", "the connection hangs"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			d := startSSHD(t)
			ev := &nodeEvents{got: make(chan struct{}, 1)}
			reg := nodeRegistry(t, d, Config{Notifier: ev}, func(n *Node) {
				n.KeepaliveInterval, n.KeepaliveCountMax = 200*time.Millisecond, 3
			})
			sc := reg.Scope("agent:main:main")
			tag := newTag(t)
			id := startBackground(t, sc, &ExecRequest{Command: "echo ready; sleep 1000", Env: map[string]string{tagEnv: tag}})
			id2 := startBackground(t, sc, &ExecRequest{Command: "echo ready; sleep 1000", Env: map[string]string{tagEnv: tag}})
			waitFor(t, sc, id, "^ready$")
			waitFor(t, sc, id2, "^ready$")
			awaitTaggedAtLeast(t, tag, 2) // both shells run
			if how == "the connection hangs" {
				d.signalSessions(unix.SIGSTOP)
			} else {
				d.signalSessions(unix.SIGKILL)
			}
			res := waitExit(t, sc, id)
			want := "Connection to node n1 lost; the remote process may still be running."
			assert.Contains(t, res.Text(), want)
			assert.Contains(t, res.Text(), "One attempt to kill it over a new connection worked")
			assert.Equal(t, ExitReasonLost, res.Details.ExitReason)
			assert.Equal(t, StatusFailed, res.Details.Status)
			awaitNoTagged(t, tag)

			// The other session's end is an event that says the same.
			select {
			case <-ev.got:
			case <-time.After(20 * time.Second):
				t.Fatal("no exit event for the second session")
			}
			ev.mu.Lock()
			text := strings.Join(ev.texts, "\n")
			ev.mu.Unlock()
			assert.Contains(t, text, "Exec failed ("+id2+", lost): "+want)

			// New sessions use a new connection.
			res = mustExec(t, sc, &ExecRequest{Command: "echo again"})
			assert.Equal(t, "again", strings.TrimSpace(res.Text()))
		})
	}
}

func TestNodeConnectFailures(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	t.Run("a wrong host key is a failure that says so", func(t *testing.T) {
		reg := nodeRegistry(t, d, Config{}, func(n *Node) { n.KnownHostsFile = d.wrongHosts })
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo no"})
		assert.True(t, res.IsError)
		assert.Equal(t, ExitReasonSpawnError, res.Details.ExitReason)
		assert.Contains(t, res.Text(), "host key mismatch for "+d.addr)
		assert.NotContains(t, res.Text(), "PTY")
	})
	t.Run("a key the node does not accept is an authentication failure", func(t *testing.T) {
		reg := nodeRegistry(t, d, Config{}, func(n *Node) { n.KeyFile = d.otherKey })
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo no", PTY: true})
		assert.True(t, res.IsError)
		assert.Contains(t, res.Text(), "authentication failed for root@"+d.addr)
		assert.NotContains(t, res.Text(), "retrying without PTY")
	})
	t.Run("an unknown node name lists the configured ones", func(t *testing.T) {
		reg := nodeRegistry(t, d, Config{}, nil)
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo no", Node: "n2"})
		assert.True(t, res.IsError)
		assert.Equal(t, `Unknown node "n2": the configured nodes are n1.`, res.Text())
	})
	t.Run("the configuration is checked by NewRegistry", func(t *testing.T) {
		for name, n := range map[string]Node{
			"KnownHostsFile is empty":    {Addr: d.addr, User: "root", KeyFile: d.clientKey},
			"User is empty":              {Addr: d.addr, KeyFile: d.clientKey, KnownHostsFile: d.knownHosts},
			"no such file":               {Addr: d.addr, User: "root", KeyFile: d.clientKey + ".missing", KnownHostsFile: d.knownHosts},
			"MaxSessions -1 is negative": {Addr: d.addr, User: "root", KeyFile: d.clientKey, KnownHostsFile: d.knownHosts, MaxSessions: -1},
		} {
			_, err := NewRegistry(Config{Host: "node", Nodes: map[string]Node{"n1": n}})
			require.Error(t, err, name)
			assert.Contains(t, err.Error(), name)
		}
		_, err := NewRegistry(Config{Host: "node"})
		assert.ErrorContains(t, err, "Config.Nodes is empty")
	})
	t.Run("a node given to a gateway registry is refused", func(t *testing.T) {
		reg := newTestRegistry(t, Config{})
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo no", Node: "n1"})
		assert.True(t, res.IsError)
		assert.Contains(t, res.Text(), "needs host=node")
	})
}

func TestNodeCloseEndsRemoteSessions(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	reg, err := NewRegistry(Config{Host: "node", Nodes: map[string]Node{"n1": d.node()}, KillGrace: time.Second})
	require.NoError(t, err)
	sc := reg.Scope("a")
	tag := newTag(t)
	for range 3 {
		id := startBackground(t, sc, &ExecRequest{Command: "trap '' TERM; sleep 1000 & echo ready; wait", Env: map[string]string{tagEnv: tag}})
		waitFor(t, sc, id, "^ready$")
	}
	awaitTagged(t, tag, 6)
	require.NoError(t, reg.Close(testCtx(t)))
	awaitNoTagged(t, tag)
}

func TestNodeLimitsAndLongCommands(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	reg := nodeRegistry(t, d, Config{}, func(n *Node) { n.MaxSessions = 2; n.Workdir = "/tmp" })
	sc := reg.Scope("a")
	t.Run("MaxSessions caps the sessions on a node", func(t *testing.T) {
		a := startBackground(t, sc, &ExecRequest{Command: "sleep 1000"})
		b := startBackground(t, sc, &ExecRequest{Command: "sleep 1000"})
		res := mustExec(t, sc, &ExecRequest{Command: "echo no"})
		assert.True(t, res.IsError)
		assert.Contains(t, res.Text(), "already runs 2 sessions (its MaxSessions)")
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: a})
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: b})
		res = mustExec(t, sc, &ExecRequest{Command: "echo yes"})
		assert.Equal(t, "yes", res.Text())
	})
	t.Run("the workdir is the node's, with a warning when it is missing", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "pwd"})
		assert.Equal(t, "/tmp", res.Text())
		assert.Equal(t, "/tmp", res.Details.Cwd)
		res = mustExec(t, sc, &ExecRequest{Command: "pwd", Workdir: "/"})
		assert.Equal(t, "/", res.Text())
		res = mustExec(t, sc, &ExecRequest{Command: "pwd", Workdir: "/no/such/dir"})
		assert.Equal(t, "Warning: workdir \"/no/such/dir\" is unavailable on node n1; using \"/tmp\".\n\n/tmp", res.Text())
	})
	t.Run("a command of megabytes is sent beside the exec request", func(t *testing.T) {
		for _, size := range []int{40 << 10, 10 << 20} {
			filler := strings.Repeat("x", size) + `'\"$`
			res := mustExec(t, sc, &ExecRequest{Command: "v='" + strings.ReplaceAll(filler, "'", `'\''`) + "'; echo ${#v}; echo \"$0\""})
			require.Equal(t, StatusCompleted, res.Details.Status, host.MiddleTruncate(res.Text(), 400))
			lines := strings.Split(res.Text(), "\n")
			assert.Equal(t, strconv.Itoa(len(filler)), lines[0])
		}
	})
}

func TestNodeWriteIsBounded(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	reg := nodeRegistry(t, d, Config{}, nil)
	sc := reg.Scope("a")
	id := startBackground(t, sc, &ExecRequest{Command: "echo ready; sleep 1000", Stdin: "pipe"})
	waitFor(t, sc, id, "^ready$")
	data := strings.Repeat("y", 16<<20) // far more than the SSH window and the pipe take
	start := time.Now()
	res := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: data})
	assert.True(t, res.IsError, res.Text())
	assert.Contains(t, res.Text(), "the rest was not taken within 5s")
	assert.Less(t, time.Since(start), WriteBound+10*time.Second)
	// On a loaded machine the kill may answer before the end
	// ("Termination requested"): the end itself says killed.
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
	res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
	assert.Equal(t, ExitReasonKilled, res.Details.ExitReason, res.Text())
}

func TestNodeLeftoversAreKept(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	reg := nodeRegistry(t, d, Config{}, nil)
	sc := reg.Scope("a")
	// Kept: a job in the shell's group, and (without a systemd scope) one
	// that left it (setsid), which still carries the session's tag.
	for _, tc := range []struct {
		name, command string
		want          []string
	}{
		{"a job in the shell's group", "sleep 1000 & echo started; exit 4", []string{"The shell exited with code 4; 1 process it started is still running (pid ", "sleep 1000"}},
		{"a job in a session of its own", "setsid sleep 1001 & echo started", []string{"sleep 1001"}},
	} {
		t.Run(tc.name+" is kept, and the kill ends it", func(t *testing.T) {
			tag := newTag(t)
			res := mustExec(t, sc, &ExecRequest{Command: tc.command, Env: map[string]string{tagEnv: tag}})
			require.Equal(t, StatusRunning, res.Details.Status, res.Text())
			for _, w := range tc.want {
				assert.Contains(t, res.Text(), w)
			}
			id := res.Details.SessionID
			awaitTagged(t, tag, 1)
			res = mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
			assert.Equal(t, StatusRunning, res.Details.Status, res.Text())
			res = mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
			assert.Equal(t, ExitReasonKilled, res.Details.ExitReason, res.Text())
			awaitNoTagged(t, tag)
		})
	}
	for _, command := range []string{"sleep 1000 >/dev/null 2>&1 & echo started", "setsid sleep 1004 >/dev/null 2>&1 & echo started"} {
		t.Run("a job with its output redirected away ends with the shell: "+command, func(t *testing.T) {
			tag := newTag(t)
			res := mustExec(t, sc, &ExecRequest{Command: command, Env: map[string]string{tagEnv: tag}})
			assert.Equal(t, StatusCompleted, res.Details.Status, res.Text())
			awaitNoTagged(t, tag)
		})
	}
	t.Run("the kill of a running shell ends the jobs that left its group", func(t *testing.T) {
		tag := newTag(t)
		id := startBackground(t, sc, &ExecRequest{Command: "setsid sleep 1002 & setsid sh -c 'trap \"\" TERM; exec sleep 1003' & echo ready; sleep 1000", Env: map[string]string{tagEnv: tag}})
		waitFor(t, sc, id, "^ready$")
		awaitTaggedAtLeast(t, tag, 3) // the shell (or its sleep, which bash may exec) and both escapers
		res := mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		assert.Equal(t, "Killed session "+id+".", res.Text())
		awaitNoTagged(t, tag) // the one that ignores SIGTERM too, by the SIGKILL after the grace
	})
}

func TestNodeSelection(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	reg := newTestRegistry(t, Config{Host: "node", Nodes: map[string]Node{"n1": d.node(), "n2": d.node()}})
	sc := reg.Scope("a")
	res := mustExec(t, sc, &ExecRequest{Command: "echo no"})
	assert.True(t, res.IsError)
	assert.Equal(t, "No node given and no default node is configured: pass node as one of n1, n2.", res.Text())
	res = mustExec(t, sc, &ExecRequest{Command: "echo yes", Node: "n2"})
	assert.Equal(t, "yes", res.Text())

	_, err := NewRegistry(Config{Host: "node", Nodes: map[string]Node{"n1": d.node()}, DefaultNode: "n3"})
	assert.ErrorContains(t, err, `Config.DefaultNode "n3" is not one of the configured nodes (n1)`)

	t.Run("a host key missing from the file is refused", func(t *testing.T) {
		empty := t.TempDir() + "/known_hosts"
		require.NoError(t, os.WriteFile(empty, nil, 0o600))
		reg := nodeRegistry(t, d, Config{}, func(n *Node) { n.KnownHostsFile = empty })
		res := mustExec(t, reg.Scope("a"), &ExecRequest{Command: "echo no"})
		assert.True(t, res.IsError)
		assert.Contains(t, res.Text(), "unknown host key for "+d.addr)
	})
}

func TestNodeCloseHonoursItsContextOnAHungNode(t *testing.T) {
	t.Parallel()
	d := startSSHD(t)
	reg, err := NewRegistry(Config{Host: "node", Nodes: map[string]Node{"n1": d.node()}})
	require.NoError(t, err)
	sc := reg.Scope("a")
	// A hung node cannot be asked to kill anything: the test ends what
	// Close could not reach, once sshd is gone.
	tag := newTag(t)
	t.Cleanup(func() {
		for _, pid := range taggedProcesses(t, tag) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		awaitNoTagged(t, tag)
	})
	id := startBackground(t, sc, &ExecRequest{Command: "echo ready; sleep 1000", Env: map[string]string{tagEnv: tag}})
	waitFor(t, sc, id, "^ready$")
	d.signalSessions(unix.SIGSTOP) // keepalives (15 s × 3) would take 45 s to notice
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	assert.ErrorIs(t, reg.Close(ctx), context.DeadlineExceeded)
	// Bounded by the control timeout (10 s): the kill sent on the hung link
	// gets no answer, and the connection is dropped.
	assert.Less(t, time.Since(start), 20*time.Second)
}

// A node host's own errors surface as the public ones: a failed
// connection as *NodeError, a closed pool as ErrClosed.
func TestNodeErrorsArePublic(t *testing.T) {
	t.Parallel()
	cause := errors.New("connection refused")
	err := nodeError(fmt.Errorf("start: %w", &sshhost.Error{Node: "n1", Text: "cannot connect to node n1", Err: cause}))
	var ne *NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "n1", ne.Node)
	assert.Equal(t, "cannot connect to node n1", ne.Error())
	assert.ErrorIs(t, err, cause)
	assert.ErrorIs(t, nodeError(sshhost.ErrClosed), ErrClosed)
	other := errors.New("node n1 refused a terminal")
	assert.Equal(t, other, nodeError(other))
	assert.NoError(t, nodeError(nil))
}

// The node's state prologue writes what parseState reads: it is the
// local one with the check of fd 4 naming the node's state file. The
// state read back is bounded alike.
func TestStatePrologueIsTheLocalOnes(t *testing.T) {
	t.Parallel()
	want := strings.Replace(statePrologue, "/memfd:bgexec-state*", "*/bgexec-state-TAG.*", 1)
	require.NotEqual(t, statePrologue, want)
	assert.Equal(t, want, sshhost.StatePrologue("TAG"))
	assert.Equal(t, stateMaxBytes, sshhost.StateMaxBytes, "the same bound for both")
}
