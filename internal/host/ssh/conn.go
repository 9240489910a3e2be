package sshhost

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"golang.org/x/crypto/ssh"
)

// nodeConn is one SSH connection to a node.
type nodeConn struct {
	node   *nodeConfig
	client *ssh.Client
	dead   chan struct{} // closed when the connection ended, for whatever reason
	stop   chan struct{} // closed by close: ends the keepalives

	stopOnce  sync.Once
	scopeOnce sync.Once
	scope     bool // systemd-run --user --scope works on the node

	mu      sync.Mutex                  // guards running and procs
	running int                         // sessions on this connection
	procs   map[*remoteProcess]struct{} // its sessions not released yet (resource reads)

	resMu    sync.Mutex                     // guards the fields below
	resAt    time.Time                      // when the read of resViews ended
	resBegan time.Time                      // when it began
	resNext  time.Time                      // the next read begins no sooner
	resViews map[*remoteProcess]*host.Usage // the last read; a nil view: unreadable
	resRead  chan struct{}                  // a read under way: closed when it is done; nil when none

	ctlMu sync.Mutex    // serialises control commands; guards ctl and ctlIn
	ctl   ssh.Channel   // the control shell, nil until first needed or after it broke
	ctlIn *bufio.Reader // its stdout
	wg    *sync.WaitGroup
}

// controlLoop is the control shell: it runs one line at a time in a
// subshell and answers with its exit code after a unit separator. Its
// lines are bgexec's own scripts (numbers and tags only, never a
// command's text), and it saves a channel, with the user's login shell
// and its rc files, per kill or check.
const controlLoop = `exec /bin/sh -c 'while IFS= read -r l; do o=$( (eval "$l") </dev/null 2>/dev/null); c=$?; ` +
	`[ -z "$o" ] || printf "%s\n" "$o" | while IFS= read -r x; do printf "\036%s\n" "$x"; done; printf "\037%s\n" "$c"; done'`

// control runs one script in the control shell and returns its exit code.
func (c *nodeConn) control(script string) (int, error) {
	_, code, err := c.controlOutput(script)
	return code, err
}

// controlOutput runs one script in the control shell and returns its
// output lines and exit code.
func (c *nodeConn) controlOutput(script string) ([]string, int, error) {
	c.ctlMu.Lock()
	defer c.ctlMu.Unlock()
	if c.ctl == nil {
		ch, reqs, err := c.client.OpenChannel("session", nil)
		if err != nil {
			return nil, -1, fmt.Errorf("open the control channel: %w", err)
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			ssh.DiscardRequests(reqs) // ends when the channel closes
		}()
		if ok, err := ch.SendRequest("exec", true, ssh.Marshal(&struct{ Command string }{controlLoop})); err != nil || !ok {
			_ = ch.Close()
			return nil, -1, fmt.Errorf("start the control shell: %v", err)
		}
		c.ctl, c.ctlIn = ch, bufio.NewReader(ch)
	}
	ch := c.ctl
	broken := func(err error) ([]string, int, error) {
		_ = ch.Close()
		c.ctl, c.ctlIn = nil, nil
		return nil, -1, err
	}
	var out []string
	// A control command that gets no answer means the link hangs, as an
	// unanswered keepalive does: closing a channel alone would not end a
	// read on a hung connection, so the connection goes, and its sessions
	// end as lost.
	t := time.AfterFunc(max(controlTimeout, c.node.dialTimeout), c.close)
	defer t.Stop()
	if _, err := io.WriteString(ch, script+"\n"); err != nil {
		return broken(err)
	}
	for {
		line, err := c.ctlIn.ReadString('\n')
		if err != nil {
			return broken(fmt.Errorf("the control shell ended: %w", err))
		}
		if code, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "\x1f"); ok {
			n, err := strconv.Atoi(code)
			if err != nil {
				return broken(fmt.Errorf("the control shell answered %q", line))
			}
			return out, n, nil
		}
		if o, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "\x1e"); ok {
			out = append(out, o)
		}
		// Anything else is a login script's noise before the loop began.
	}
}

func (c *nodeConn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// close ends the connection. Idempotent.
func (c *nodeConn) close() {
	c.stopOnce.Do(func() { close(c.stop) })
	_ = c.client.Close() // already closed is fine
}

// keepalives sends a keepalive request every interval; one unanswered
// for KeepaliveCountMax intervals closes the connection, which ends every
// session on it as lost.
func (c *nodeConn) keepalives(wg *sync.WaitGroup) {
	every := c.node.keepalive
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.dead:
			return
		case <-t.C:
		}
		reply := make(chan error, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// It returns when the reply comes or the connection closes.
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		t.Reset(every * time.Duration(c.node.keepCount))
		select {
		case err := <-reply:
			if err != nil {
				c.close()
				return
			}
		case <-t.C:
			c.close() // unanswered: the link is gone
			return
		case <-c.stop:
			return
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(every)
	}
}

// acquire takes one of the node's session slots.
func (c *nodeConn) acquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running >= c.node.maxSessions {
		return false
	}
	c.running++
	return true
}

func (c *nodeConn) release() {
	c.mu.Lock()
	c.running--
	c.mu.Unlock()
}

// track adds a started session to those whose resources are read.
func (c *nodeConn) track(p *remoteProcess) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.procs == nil {
		c.procs = make(map[*remoteProcess]struct{})
	}
	c.procs[p] = struct{}{}
}

// untrack removes a released session.
func (c *nodeConn) untrack(p *remoteProcess) {
	c.mu.Lock()
	delete(c.procs, p)
	c.mu.Unlock()
	c.resMu.Lock()
	delete(c.resViews, p)
	c.resMu.Unlock()
}

// controlTimeout bounds one control command (kill, check, upload).
const controlTimeout = 10 * time.Second

// run runs a control command on the node with stdin as its input and
// returns its stdout and exit code; err means it could not be run.
func (c *nodeConn) run(cmd string, stdin []byte) (string, int, error) {
	s, err := c.client.NewSession()
	if err != nil {
		return "", -1, err
	}
	defer s.Close()
	var out bytes.Buffer
	s.Stdout = &out
	if stdin != nil {
		s.Stdin = bytes.NewReader(stdin)
	}
	t := time.AfterFunc(max(controlTimeout, c.node.dialTimeout), func() { _ = s.Close() })
	defer t.Stop()
	err = s.Run(cmd)
	var exit *ssh.ExitError
	switch {
	case err == nil:
		return out.String(), 0, nil
	case errors.As(err, &exit) && exit.Signal() == "":
		return out.String(), exit.ExitStatus(), nil
	}
	return out.String(), -1, err
}

// scopeWorks probes once per connection whether transient systemd user
// scopes can be made on the node.
func (c *nodeConn) scopeWorks() bool {
	c.scopeOnce.Do(func() {
		code, err := c.control("command -v systemd-run >/dev/null 2>&1 && systemd-run --user --scope --quiet --collect true >/dev/null 2>&1")
		c.scope = err == nil && code == 0
	})
	return c.scope
}

// upload stores a long script in a private temporary file on the node
// and returns its path; the wrapper removes it once the shell opened it.
func (c *nodeConn) upload(script string) (string, error) {
	out, code, err := c.run("exec /bin/sh -c 'umask 077; f=$(mktemp) && cat >\"$f\" && printf %s \"$f\"'", []byte(script))
	if err == nil && code != 0 {
		err = fmt.Errorf("exit code %d", code)
	}
	if err != nil || out == "" || !strings.HasPrefix(out, "/") {
		return "", fmt.Errorf("upload the command to node %s: %v", c.node.name, err)
	}
	return out, nil
}

// portOpen reports whether something on the node accepts TCP connections
// on the port at 127.0.0.1 or ::1, dialed through the SSH connection.
func (c *nodeConn) portOpen(port int) bool {
	for _, host := range []string{"127.0.0.1", "::1"} {
		conn, err := c.client.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			_ = conn.Close()
			return true
		}
	}
	return false
}
