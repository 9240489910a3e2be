package sshhost

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bgexec/bgexec/internal/session"
	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"
)

// remoteProcess is a session's shell on a node: a session.Process whose
// signals, checks and kills are commands run over the same connection.
type remoteProcess struct {
	pool   *Pool
	conn   *nodeConn
	ch     ssh.Channel
	pid    int // the shell's pid on the node, also its process group id
	tag    string
	unit   string        // the transient systemd scope's name, "" without one
	exited chan struct{} // closed by serveRequests: exit report, or channel end
	closed chan struct{} // closed by serveRequests when the channel ended

	// statePath is the node's file of the shell's state (its fd 4),
	// "" when no state is kept; Release reads it and removes it.
	statePath string

	resMu    sync.Mutex // orders the resource views noted; guards resNoted
	resNoted time.Time  // when the last view noted was read

	mu       sync.Mutex // guards the fields below
	gotExit  bool
	code     int
	signal   string // the exit signal's name without "SIG", "" when it exited
	lost     error  // the connection dropped before the exit report
	reaped   bool
	released bool
	// The shell state: stateDropped says nobody wants it (the exec went
	// to the background), so Release removes the file unread; state is
	// what Release read, until takeState takes it.
	stateDropped bool
	state        []byte
}

func (p *remoteProcess) Pid() int { return p.pid }

// serveRequests handles the channel's requests until it closes: exit
// reports are kept, anything else is refused as OpenSSH's client does.
func (p *remoteProcess) serveRequests(reqs <-chan *ssh.Request) {
	var once sync.Once
	exited := func() { once.Do(func() { close(p.exited) }) }
	for req := range reqs {
		switch req.Type {
		case "exit-status":
			if len(req.Payload) >= 4 {
				p.mu.Lock()
				p.gotExit, p.code = true, int(binary.BigEndian.Uint32(req.Payload))
				p.mu.Unlock()
				exited()
			}
		case "exit-signal":
			var msg struct {
				Signal     string
				CoreDumped bool
				Error      string
				Lang       string
			}
			if ssh.Unmarshal(req.Payload, &msg) == nil {
				p.mu.Lock()
				p.gotExit, p.signal = true, msg.Signal
				p.mu.Unlock()
				exited()
			}
		default:
			if req.WantReply {
				_ = req.Reply(false, nil) // best effort: the peer may be gone
			}
		}
	}
	exited()
	close(p.closed)
}

// lostWait is how long a channel that ended without an exit report waits
// to learn whether the connection went with it.
const lostWait = 5 * time.Second

// AwaitExit blocks until the node reported the shell's exit, or the
// channel ended without a report. When the connection dropped, it makes
// the one attempt to kill the session over a new connection before it
// returns, so the session's end says whether that worked.
func (p *remoteProcess) AwaitExit() error {
	<-p.exited
	p.mu.Lock()
	got := p.gotExit
	p.mu.Unlock()
	if got {
		return nil
	}
	t := time.NewTimer(lostWait)
	defer t.Stop()
	select {
	case <-p.conn.dead:
	case <-t.C:
		return nil // the channel ended alive: Reap says there is no status
	}
	lost := &lostError{text: p.killAfterLoss()}
	p.mu.Lock()
	p.lost = lost
	p.mu.Unlock()
	return nil
}

// killAfterLoss makes one kill attempt over a new connection and returns
// the text of the lost session's end.
func (p *remoteProcess) killAfterLoss() string {
	nc := p.conn.node
	text := "Connection to node " + nc.name + " lost; the remote process may still be running."
	c, err := p.pool.conn(nc)
	if err != nil {
		return text + " One attempt to kill it over a new connection failed: " + err.Error() + "."
	}
	code, err := c.control(killLostScript(p.pid, p.tag, p.unit))
	g := strconv.Itoa(p.pid)
	switch {
	case err != nil:
		return text + " One attempt to kill it over a new connection failed: " + err.Error() + "."
	case code == 0:
		return text + " One attempt to kill it over a new connection worked: nothing of its process group " + g + " is left on the node."
	case code == 2:
		return text + " No kill was sent over the new connection: pid " + g + " now belongs to another process."
	default:
		return text + " One attempt to kill it over a new connection sent SIGKILL, but processes of its group " + g + " are still left on the node."
	}
}

// SignalGroup signals the remote process group (and its scope) by a kill
// command over the connection. It is a no-op after the reap or the loss.
func (p *remoteProcess) SignalGroup(sig syscall.Signal) error {
	p.mu.Lock()
	skip := p.reaped || p.lost != nil
	p.mu.Unlock()
	if skip {
		return nil
	}
	name := strings.TrimPrefix(unix.SignalName(sig), "SIG")
	if name == "" {
		return fmt.Errorf("signal %d has no name", sig)
	}
	code, err := p.conn.control(signalScript(name, p.pid, p.tag, p.unit))
	if err == nil && code != 0 {
		err = fmt.Errorf("kill exited with code %d", code)
	}
	if err != nil {
		return fmt.Errorf("signal process group %d on node %s: %w", p.pid, p.conn.node.name, err)
	}
	return nil
}

// Reap returns the exit the node reported, as a wait status.
func (p *remoteProcess) Reap() (syscall.WaitStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reaped = true
	switch {
	case p.lost != nil:
		return 0, p.lost
	case !p.gotExit:
		return 0, fmt.Errorf("node %s sent no exit status", p.conn.node.name)
	case p.signal != "":
		sig := unix.SignalNum("SIG" + p.signal)
		if sig == 0 {
			return 0, fmt.Errorf("ended by signal %s", p.signal)
		}
		return syscall.WaitStatus(sig), nil
	}
	return syscall.WaitStatus((p.code & 0xff) << 8), nil
}

// Release frees the session's slot on the node and checks that nothing
// of its process group (or scope) is left; an error says it may be.
func (p *remoteProcess) Release() error {
	p.mu.Lock()
	if p.released {
		p.mu.Unlock()
		return nil
	}
	p.released = true
	lost := p.lost
	readState := p.statePath != "" && !p.stateDropped
	p.mu.Unlock()
	defer p.conn.release()
	defer p.conn.untrack(p)
	_ = p.ch.Close() // the engine closed its streams already
	if lost != nil {
		return nil // the session's end text says what is known
	}
	script := aliveScript(p.pid, p.tag, p.unit)
	if p.statePath != "" {
		script = stateFileScript(p.statePath, readState) + script
	}
	out, code, err := p.conn.controlOutput(script)
	if readState && err == nil {
		if data, ok := parseStateDump(out); ok {
			p.mu.Lock()
			if !p.stateDropped {
				p.state = data
			}
			p.mu.Unlock()
		}
	}
	switch {
	case err != nil:
		return fmt.Errorf("could not check process group %d on node %s: %w", p.pid, p.conn.node.name, err)
	case code == 0:
		return fmt.Errorf("processes of group %d are still running on node %s", p.pid, p.conn.node.name)
	}
	return nil
}

// Resize tells the node's terminal its new size (window-change).
func (p *remoteProcess) Resize(cols, rows uint16) error {
	msg := struct{ Cols, Rows, Width, Height uint32 }{uint32(cols), uint32(rows), uint32(cols) * 8, uint32(rows) * 16}
	_, err := p.ch.SendRequest("window-change", false, ssh.Marshal(&msg))
	return err
}

// PortOpen reports whether the port accepts connections on the node.
func (p *remoteProcess) PortOpen(_ context.Context, port int) bool {
	if p.conn.isDead() {
		return false
	}
	return p.conn.portOpen(port)
}

// lingerWait is how long after the exit report the channel may take to
// close before leftovers are looked for: OpenSSH closes it once nothing
// holds the command's output, so a closed channel means there are none
// worth keeping (as on this machine, a job that redirected all its
// output away ends with the shell).
const lingerWait = 300 * time.Millisecond

// Lingering lists what the exited shell left running in its process
// group on the node, when something still holds the session's output.
func (p *remoteProcess) Lingering(bool) []session.Lingering {
	p.mu.Lock()
	skip := p.lost != nil || !p.gotExit
	p.mu.Unlock()
	if skip {
		return nil
	}
	t := time.NewTimer(lingerWait)
	defer t.Stop()
	select {
	case <-p.closed:
		return nil
	case <-t.C:
	}
	lines, code, err := p.conn.controlOutput(groupMembersScript(p.pid, p.tag))
	if err != nil || code != 0 {
		return nil // cannot tell: the session ends, and Release reports it
	}
	var out []session.Lingering
	for _, l := range lines {
		pidText, cmd, _ := strings.Cut(l, " ")
		pid, err := strconv.Atoi(pidText)
		if err != nil {
			continue
		}
		cmd = strings.TrimSpace(cmd)
		out = append(out, session.Lingering{Pid: pid, Command: func() string { return cmd }})
	}
	return out
}

// AwaitLingering blocks until nothing of the group is left on the node
// (nothing that carries the session's tag: see oursScript): a command on
// a channel of its own waits there. A kill of the session
// ends the group, and so the wait. A dropped connection ends the session
// as lost.
func (p *remoteProcess) AwaitLingering() {
	s, err := p.conn.client.NewSession()
	if err != nil {
		return // the session ends now, and its group with it
	}
	defer s.Close()
	g := strconv.Itoa(p.pid)
	_ = s.Run("exec /bin/sh -c '" + oursScript(p.pid, p.tag) + taggedScript(p.tag) + "while { kill -s 0 -- -" + g + " 2>/dev/null && ours; } || [ -n \"$(tagged)\" ]; do sleep 0.2; done'") // how it ended is looked at below
	if p.conn.isDead() {
		lost := &lostError{text: p.killAfterLoss()}
		p.mu.Lock()
		p.lost = lost
		p.mu.Unlock()
	}
}

// PeekStatus is the shell's exit as the node reported it.
func (p *remoteProcess) PeekStatus() (syscall.WaitStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.gotExit || p.signal != "" {
		return 0, errors.New("the shell did not exit with a code")
	}
	return syscall.WaitStatus((p.code & 0xff) << 8), nil
}

// dropState says the exec that started this session does not want its
// shell state (it went to the background): Release removes the file
// unread, and what it read already is let go.
func (p *remoteProcess) dropState() {
	p.mu.Lock()
	p.stateDropped, p.state = true, nil
	p.mu.Unlock()
}

// takeState returns the shell state Release read (the file's bytes), once.
func (p *remoteProcess) takeState() ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	data := p.state
	p.state = nil
	return data, data != nil
}
