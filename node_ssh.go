package bgexec

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
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// nodePool holds one SSH connection per node. A connection is dialed when
// the first session needs it and again, for new sessions, after it
// dropped; a failed dial is a failure result of that exec, never retried
// behind the caller's back.
type nodePool struct {
	nodes      map[string]*nodeConfig // immutable
	def        string                 // the default node's name, "" for none
	getenv     func(string) string
	goroutines *sync.WaitGroup // the registry's: Close waits for ours too

	mu     sync.Mutex // guards the fields below
	conns  map[string]*nodeConn
	dials  map[string]chan struct{} // a dial under way per node: closed when done
	closed bool
}

func newNodePool(nodes map[string]*nodeConfig, def string, getenv func(string) string, wg *sync.WaitGroup) *nodePool {
	return &nodePool{
		nodes: nodes, def: def, getenv: getenv, goroutines: wg,
		conns: make(map[string]*nodeConn), dials: make(map[string]chan struct{}),
	}
}

// conn returns the node's live connection, dialing one when there is
// none. Concurrent callers for one node share a dial.
func (p *nodePool) conn(nc *nodeConfig) (*nodeConn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		if c := p.conns[nc.name]; c != nil && !c.isDead() {
			p.mu.Unlock()
			return c, nil
		}
		if wait := p.dials[nc.name]; wait != nil {
			p.mu.Unlock()
			<-wait
			continue
		}
		done := make(chan struct{})
		p.dials[nc.name] = done
		p.mu.Unlock()

		c, err := p.dial(nc)
		p.mu.Lock()
		delete(p.dials, nc.name)
		close(done)
		if err == nil && p.closed {
			p.mu.Unlock()
			c.close()
			return nil, ErrClosed
		}
		if err == nil {
			p.conns[nc.name] = c
		}
		p.mu.Unlock()
		return c, err
	}
}

// close ends every connection; their goroutines end with them.
func (p *nodePool) close() {
	p.mu.Lock()
	p.closed = true
	conns := make([]*nodeConn, 0, len(p.conns))
	for _, c := range p.conns {
		conns = append(conns, c)
	}
	clear(p.conns)
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// dial connects to the node and verifies its host key. Its errors are
// *NodeError with texts for the model.
func (p *nodePool) dial(nc *nodeConfig) (*nodeConn, error) {
	fail := func(text string, err error) error { return &NodeError{Node: nc.name, Text: text, Err: err} }
	check, err := knownhosts.New(nc.knownHosts)
	if err != nil {
		return nil, fail(fmt.Sprintf("cannot read the known hosts of node %s (%s): %v", nc.name, nc.knownHosts, err), err)
	}
	var keyErr *knownhosts.KeyError
	hostKey := func(host string, remote net.Addr, key ssh.PublicKey) error {
		err := check(host, remote, key)
		errors.As(err, &keyErr)
		return err
	}
	auth := []ssh.AuthMethod{}
	if nc.signer != nil {
		auth = append(auth, ssh.PublicKeys(nc.signer))
	} else {
		sock := p.getenv("SSH_AUTH_SOCK")
		ac, err := net.DialTimeout("unix", sock, nc.dialTimeout)
		if err != nil {
			return nil, fail(fmt.Sprintf("cannot reach the SSH agent at %s for node %s: %v", sock, nc.name, err), err)
		}
		defer ac.Close() // only the handshake signs
		auth = append(auth, ssh.PublicKeysCallback(agent.NewClient(ac).Signers))
	}
	cfg := &ssh.ClientConfig{
		User: nc.user, Auth: auth, HostKeyCallback: hostKey, Timeout: nc.dialTimeout,
	}
	raw, err := net.DialTimeout("tcp", nc.addr, nc.dialTimeout)
	if err != nil {
		return nil, fail(fmt.Sprintf("cannot connect to node %s at %s: %v", nc.name, nc.addr, err), err)
	}
	_ = raw.SetDeadline(time.Now().Add(nc.dialTimeout)) // a failure shows as a handshake error
	cc, chans, reqs, err := ssh.NewClientConn(raw, nc.addr, cfg)
	if err != nil {
		_ = raw.Close()
		switch {
		case keyErr != nil && len(keyErr.Want) > 0:
			return nil, fail("host key mismatch for "+nc.addr+" (node "+nc.name+"): the key it offered is not the one in "+nc.knownHosts+"; if the node's key really changed, update that file", err)
		case keyErr != nil:
			return nil, fail("unknown host key for "+nc.addr+" (node "+nc.name+"): add the node's key to "+nc.knownHosts, err)
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, fail("authentication failed for "+nc.user+"@"+nc.addr+" (node "+nc.name+"): the node refused the key", err)
		}
		return nil, fail(fmt.Sprintf("SSH handshake with node %s at %s failed: %v", nc.name, nc.addr, err), err)
	}
	_ = raw.SetDeadline(time.Time{}) // best effort: keepalives watch the link from now on
	c := &nodeConn{node: nc, client: ssh.NewClient(cc, chans, reqs), dead: make(chan struct{}), stop: make(chan struct{}), wg: p.goroutines}
	p.goroutines.Add(1)
	go func() {
		defer p.goroutines.Done()
		_ = c.client.Wait() // it ends how it ends: dead says so
		close(c.dead)
	}()
	if nc.keepalive > 0 {
		p.goroutines.Add(1)
		go func() {
			defer p.goroutines.Done()
			c.keepalives(p.goroutines)
		}()
	}
	return c, nil
}

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

// oursScript defines ours, a shell function that succeeds when process
// group pg is still the session's: its leader, while it lives, carries
// the session's tag in its environment, or, once the leader is gone, one
// of the group's members does. A group id is free for reuse once its
// leader and members are gone, so a kill sent by group id alone can reach
// an unrelated group that got the same id, on a busy node whose pids wrap
// around. Members are found by a scan of /proc with shell builtins; only
// they cost a grep. Every script here says `kill -s 0 -- -pg`, the form
// both dash and bash accept (dash refuses `kill -0 -- -pg`).
func oursScript(pg int, tag string) string {
	g := strconv.Itoa(pg)
	kv := nodeTagKey + "=" + tag
	return "ours() { e=$(tr \"\\000\" \"\\n\" </proc/" + g + "/environ 2>/dev/null);" +
		" if [ -n \"$e\" ]; then printf \"%s\\n\" \"$e\" | grep -qx " + kv + "; return; fi;" +
		" for d in /proc/[0-9]*; do read -r s <\"$d/stat\" 2>/dev/null || continue; s=${s##*)}; set -- $s;" +
		" [ \"$3\" = " + g + " ] && grep -qaF " + kv + " \"$d/environ\" 2>/dev/null && return 0; done; return 1; }; "
}

// taggedScript defines tagged, a shell function that prints the pid of
// every live process carrying the session's tag, one a line. Every
// process a session starts inherits the tag, so this finds those that left
// its process group (setsid, a double fork) too; zombies, whose environment
// is gone, are not listed. One grep reads them all.
func taggedScript(tag string) string {
	return "tagged() { grep -laF " + nodeTagKey + "=" + tag + " /proc/[0-9]*/environ 2>/dev/null | while read -r f; do f=${f#/proc/}; echo \"${f%/environ}\"; done; }; "
}

// signalScript sends sig to process group pg (and the scope) when the
// group is still the session's (oursScript), and to every process that
// carries the session's tag outside it (taggedScript). It exits 0 when the
// signal was sent or nothing of the session is left, 1 when the group's
// kill failed.
func signalScript(sig string, pg int, tag, unit string) string {
	g := strconv.Itoa(pg)
	s := oursScript(pg, tag) + taggedScript(tag) +
		"for p in $(tagged); do kill -s " + sig + " \"$p\" 2>/dev/null; done; " +
		"if ours; then kill -s " + sig + " -- -" + g + " 2>/dev/null || { kill -s 0 -- -" + g + " 2>/dev/null && exit 1; }; fi"
	if unit != "" {
		s += "; systemctl --user kill -s " + sig + " -- " + unit + ".scope >/dev/null 2>&1"
	}
	return s + "; exit 0"
}

// aliveScript exits 0 while a process of the session's group pg (or the
// scope), or one carrying its tag, is left. A tagged process just sent
// SIGKILL gets a second to be gone.
func aliveScript(pg int, tag, unit string) string {
	s := oursScript(pg, tag) + taggedScript(tag) + "kill -s 0 -- -" + strconv.Itoa(pg) + " 2>/dev/null && ours && exit 0; " +
		"i=0; while [ -n \"$(tagged)\" ]; do i=$((i+1)); [ $i -gt 10 ] && exit 0; sleep 0.1; done"
	if unit != "" {
		s += "; systemctl --user is-active --quiet -- " + unit + ".scope && exit 0"
	}
	return s + "; exit 1"
}

// killLostScript kills a lost session's group over a new connection, when
// the group is still the session's (oursScript), so a reused pid or group
// id is never killed. Exit 0: it is gone now; 1: some of it is left; 2:
// the pid or group belongs to other processes, which were left alone.
func killLostScript(pg int, tag, unit string) string {
	g := strconv.Itoa(pg)
	s := oursScript(pg, tag) + taggedScript(tag) +
		"r=0; if kill -s 0 -- -" + g + " 2>/dev/null || [ -e /proc/" + g + " ]; then if ours; then kill -s KILL -- -" + g + " 2>/dev/null; else r=2; fi; fi;" +
		" t=$(tagged); for p in $t; do kill -s KILL \"$p\" 2>/dev/null; done; [ $r = 2 ] && [ -z \"$t\" ] && exit 2;"
	if unit != "" {
		s += " systemctl --user kill -s KILL -- " + unit + ".scope >/dev/null 2>&1;"
	}
	s += " i=0; while { kill -s 0 -- -" + g + " 2>/dev/null && ours; } || [ -n \"$(tagged)\" ]; do i=$((i+1)); [ $i -gt 50 ] && exit 1; sleep 0.1; done; exit 0"
	return s
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

// groupMembersScript lists the live processes of group pg, and those
// carrying the session's tag outside it, but pg itself, one "pid
// command-line" line each (the command cut to 60 bytes).
func groupMembersScript(pg int, tag string) string {
	g := strconv.Itoa(pg)
	return taggedScript(tag) + "t=\" $(tagged | tr \"\\n\" \" \") \"; " +
		"for d in /proc/[0-9]*; do p=${d#/proc/}; [ \"$p\" = " + g + " ] && continue; s=$(cat \"$d/stat\" 2>/dev/null) || continue;" +
		" s=${s##*)}; set -- $s; [ \"$1\" = Z ] && continue; case \"$t\" in *\" $p \"*) ;; *) [ \"$3\" = " + g + " ] || continue;; esac;" +
		" printf \"%s %s\\n\" \"$p\" \"$(tr \"\\000\" \" \" <\"$d/cmdline\" 2>/dev/null | cut -c1-60)\"; done; exit 0"
}
