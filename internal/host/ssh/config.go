package sshhost

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/bgexec/bgexec/internal/session"
	"golang.org/x/crypto/ssh"
)

// Config is one validated node, as package bgexec resolves its public
// Node: every field is set (defaults applied, the key file parsed, the
// known hosts file checked). NewPool copies it.
type Config struct {
	// Name is the node's configured name.
	Name string
	// Addr is "host:port".
	Addr string
	// User is the login name on the node.
	User string
	// Signer is the client key; nil means the SSH agent at $SSH_AUTH_SOCK,
	// asked at each connection.
	Signer ssh.Signer
	// KnownHostsFile holds the node's host key; it is read at each
	// connection.
	KnownHostsFile string
	// Shell is the shell on the node; "" means the login's $SHELL, or sh
	// when it is unset or fish.
	Shell string
	// Workdir is the node's default working directory; "" means where the
	// SSH server starts commands.
	Workdir string
	// MaxSessions caps the sessions running on the node at once (> 0).
	MaxSessions int
	// KeepaliveInterval is how often the connection is probed; <= 0 means
	// no keepalives.
	KeepaliveInterval time.Duration
	// KeepaliveCountMax is how many intervals a keepalive may go
	// unanswered before the connection counts as lost (> 0).
	KeepaliveCountMax int
	// DialTimeout bounds a connection's TCP connect and handshake, and the
	// start of each remote command (> 0).
	DialTimeout time.Duration
}

// nodeConfig is a node as the pool holds it: its Config, immutable, and
// where its procfs is read.
type nodeConfig struct {
	name        string
	addr        string
	user        string
	signer      ssh.Signer // nil: ask the agent
	knownHosts  string
	shell       string
	workdir     string
	maxSessions int
	keepalive   time.Duration // <= 0: none
	keepCount   int
	dialTimeout time.Duration
	procDir     atomic.Pointer[string] // where the node's procfs is read; nil means /proc (tests change it)
}

func newNodeConfig(c Config) *nodeConfig {
	return &nodeConfig{
		name: c.Name, addr: c.Addr, user: c.User, signer: c.Signer, knownHosts: c.KnownHostsFile,
		shell: c.Shell, workdir: c.Workdir, maxSessions: c.MaxSessions,
		keepalive: c.KeepaliveInterval, keepCount: c.KeepaliveCountMax, dialTimeout: c.DialTimeout,
	}
}

// ErrClosed is what starting a command returns after [Pool.Close].
var ErrClosed = errors.New("sshhost: pool closed")

// Error is a connection to a node that failed: the host key did not
// verify, authentication failed, or the node could not be reached. Its
// text is what the exec result says (package bgexec converts it into its
// public NodeError). A plain value: safe to read from several goroutines.
type Error struct {
	// Node is the node's configured name.
	Node string
	// Text says what failed, in words a model understands
	// ("host key mismatch for 10.0.0.5:22").
	Text string
	// Err is the underlying error.
	Err error
}

// Error returns Text.
func (e *Error) Error() string { return e.Text }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// lostError is the end of a session whose connection dropped: the engine
// reports it as exitReason "lost" with this text.
type lostError struct{ text string }

func (e *lostError) Error() string { return e.text }

func (e *lostError) Is(target error) bool { return target == session.ErrLost }
