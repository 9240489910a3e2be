package sshhost

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Pool holds one SSH connection per node. A connection is dialed when
// the first session needs it and again, for new sessions, after it
// dropped; a failed dial is a failure of that start, never retried
// behind the caller's back. A Pool is safe for concurrent use.
type Pool struct {
	nodes      map[string]*nodeConfig // immutable after NewPool
	hosts      map[string]*Host       // immutable after NewPool
	getenv     func(string) string
	goroutines *sync.WaitGroup // the caller's: it waits for ours too

	mu     sync.Mutex // guards the fields below
	conns  map[string]*nodeConn
	dials  map[string]chan struct{} // a dial under way per node: closed when done
	closed bool
}

// NewPool returns a pool for the nodes, which must be valid and of
// distinct names. It dials nothing yet. getenv reads SSH_AUTH_SOCK at
// each connection to a node without a key. Every goroutine the pool
// starts is counted on wg.
func NewPool(nodes []Config, getenv func(string) string, wg *sync.WaitGroup) *Pool {
	p := &Pool{
		nodes: make(map[string]*nodeConfig, len(nodes)), hosts: make(map[string]*Host, len(nodes)),
		getenv: getenv, goroutines: wg,
		conns: make(map[string]*nodeConn), dials: make(map[string]chan struct{}),
	}
	for _, c := range nodes {
		nc := newNodeConfig(c)
		p.nodes[c.Name] = nc
		p.hosts[c.Name] = &Host{pool: p, node: nc}
	}
	return p
}

// Host returns the host of the node of that name, nil for an unknown one.
func (p *Pool) Host(name string) host.Host {
	h := p.hosts[name]
	if h == nil {
		return nil
	}
	return h
}

// conn returns the node's live connection, dialing one when there is
// none. Concurrent callers for one node share a dial.
func (p *Pool) conn(nc *nodeConfig) (*nodeConn, error) {
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

// Close ends every connection; their goroutines end with them, and so
// does every session on them (as lost). Starts after it fail with
// [ErrClosed]. Idempotent.
func (p *Pool) Close() {
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

// authMethods are how dial authenticates to nc: its key, or the SSH
// agent's keys, through agentConn, which the caller closes after the
// handshake.
func (p *Pool) authMethods(nc *nodeConfig) (auth []ssh.AuthMethod, agentConn net.Conn, err error) {
	if nc.signer != nil {
		return []ssh.AuthMethod{ssh.PublicKeys(nc.signer)}, nil, nil
	}
	sock := p.getenv("SSH_AUTH_SOCK")
	ac, err := net.DialTimeout("unix", sock, nc.dialTimeout)
	if err != nil {
		return nil, nil, &Error{Node: nc.name, Text: fmt.Sprintf("cannot reach the SSH agent at %s for node %s: %v", sock, nc.name, err), Err: err}
	}
	return []ssh.AuthMethod{ssh.PublicKeysCallback(agent.NewClient(ac).Signers)}, ac, nil
}

// handshakeError says why the SSH handshake with nc failed, for the
// model: a host key that is not the known one, or unknown, a key the node
// refused, or the handshake's own error. keyErr is the host key check's
// error, nil when the check passed or was not reached.
func handshakeError(nc *nodeConfig, keyErr *knownhosts.KeyError, err error) error {
	fail := func(text string) error { return &Error{Node: nc.name, Text: text, Err: err} }
	switch {
	case keyErr != nil && len(keyErr.Want) > 0:
		return fail("host key mismatch for " + nc.addr + " (node " + nc.name + "): the key it offered is not the one in " + nc.knownHosts + "; if the node's key really changed, update that file")
	case keyErr != nil:
		return fail("unknown host key for " + nc.addr + " (node " + nc.name + "): add the node's key to " + nc.knownHosts)
	case strings.Contains(err.Error(), "unable to authenticate"):
		return fail("authentication failed for " + nc.user + "@" + nc.addr + " (node " + nc.name + "): the node refused the key")
	}
	return fail(fmt.Sprintf("SSH handshake with node %s at %s failed: %v", nc.name, nc.addr, err))
}

// dial connects to the node and verifies its host key. Its errors are
// *Error with texts for the model.
func (p *Pool) dial(nc *nodeConfig) (*nodeConn, error) {
	fail := func(text string, err error) error { return &Error{Node: nc.name, Text: text, Err: err} }
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
	auth, agentConn, err := p.authMethods(nc)
	if err != nil {
		return nil, err
	}
	if agentConn != nil {
		defer agentConn.Close() // only the handshake signs
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
		return nil, handshakeError(nc, keyErr, err)
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
