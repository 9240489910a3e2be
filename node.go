package bgexec

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bgexec/bgexec/internal/session"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Node is a machine that runs commands over SSH when [Config.Host] is
// "node". bgexec keeps one SSH connection per node and multiplexes every
// session and control command over its channels; nothing is installed on
// the node, which needs an SSH server (OpenSSH) and a POSIX sh. A Node is
// a plain value: NewRegistry copies it and never writes back into it.
type Node struct {
	// Addr is "host:port". A bare host means port 22. Required.
	Addr string
	// User is the login name on the node. Required.
	User string
	// KeyFile is the path of an unencrypted private key (OpenSSH or PEM
	// format), read by NewRegistry. Empty means the SSH agent at
	// $SSH_AUTH_SOCK, asked at each connection; an encrypted key belongs
	// in the agent.
	KeyFile string
	// KnownHostsFile is an OpenSSH known_hosts file holding the node's host
	// key. Required: host keys are always verified, and a key that is not
	// there, or differs, fails the connection. It is read at each
	// connection, so an updated file takes effect at the next one.
	KnownHostsFile string
	// Shell is the shell on the node; the command runs as [Shell, "-c",
	// command]. Empty means the node user's $SHELL, or sh when it is unset
	// or fish, as on this machine.
	Shell string
	// Workdir is the node's default working directory; a relative exec
	// workdir is taken from it. Empty means the directory the SSH server
	// starts commands in (the user's home).
	Workdir string
	// MaxSessions caps the sessions running on the node at once; an exec
	// over the cap is a failure result. Zero means 8, which leaves two of
	// OpenSSH's default ten channels per connection (MaxSessions in
	// sshd_config) for the kill and check commands bgexec runs beside them.
	MaxSessions int
	// KeepaliveInterval is how often the connection is probed with a
	// keepalive request. Zero means 15s; negative turns keepalives off
	// (a drop is then seen only when the TCP connection fails).
	KeepaliveInterval time.Duration
	// KeepaliveCountMax is how many intervals a keepalive may go
	// unanswered before the connection counts as lost. Zero means 3.
	KeepaliveCountMax int
	// DialTimeout bounds the TCP connect and SSH handshake of one
	// connection, and the start of each remote command. Zero means 10s.
	DialTimeout time.Duration
}

// Node defaults.
const (
	// DefaultNodeMaxSessions is the default of [Node.MaxSessions].
	DefaultNodeMaxSessions = 8
	// DefaultNodeKeepalive is the default of [Node.KeepaliveInterval].
	DefaultNodeKeepalive = 15 * time.Second
	// DefaultNodeKeepaliveCount is the default of [Node.KeepaliveCountMax].
	DefaultNodeKeepaliveCount = 3
	// DefaultNodeDialTimeout is the default of [Node.DialTimeout].
	DefaultNodeDialTimeout = 10 * time.Second
)

// nodeConfig is a validated node: immutable after NewRegistry, plus the
// connection slot its pool guards.
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
	procDir     string // where the node's procfs is read; "" means /proc (tests change it)
}

// resolveNodes validates the configured nodes. It runs for every Config
// that names nodes, whatever the host, so a mistake shows at once.
func resolveNodes(c *Config, getenv func(string) string) (map[string]*nodeConfig, string, error) {
	if len(c.Nodes) == 0 {
		if c.DefaultNode != "" {
			return nil, "", fmt.Errorf("bgexec: Config.DefaultNode %q names no node: Config.Nodes is empty", c.DefaultNode)
		}
		return nil, "", nil
	}
	nodes := make(map[string]*nodeConfig, len(c.Nodes))
	for name, n := range c.Nodes {
		nc, err := resolveNode(name, n, getenv)
		if err != nil {
			return nil, "", err
		}
		nodes[name] = nc
	}
	def := c.DefaultNode
	if def == "" && len(nodes) == 1 {
		for name := range nodes {
			def = name
		}
	}
	if def != "" && nodes[def] == nil {
		return nil, "", fmt.Errorf("bgexec: Config.DefaultNode %q is not one of the configured nodes (%s)", def, strings.Join(nodeNames(nodes), ", "))
	}
	return nodes, def, nil
}

func resolveNode(name string, n Node, getenv func(string) string) (*nodeConfig, error) {
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, " \t\r\n") {
		return nil, fmt.Errorf("bgexec: node name %q must be non-empty and without spaces", name)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("bgexec: node %q: "+format, append([]any{name}, a...)...)
	}
	nc := &nodeConfig{
		name: name, addr: strings.TrimSpace(n.Addr), user: n.User, knownHosts: n.KnownHostsFile,
		shell: n.Shell, workdir: n.Workdir,
		maxSessions: DefaultNodeMaxSessions, keepalive: DefaultNodeKeepalive,
		keepCount: DefaultNodeKeepaliveCount, dialTimeout: DefaultNodeDialTimeout,
	}
	if nc.addr == "" {
		return nil, fail("Addr is empty: give host:port")
	}
	if _, _, err := net.SplitHostPort(nc.addr); err != nil {
		nc.addr = net.JoinHostPort(strings.Trim(nc.addr, "[]"), "22")
	}
	if nc.user == "" {
		return nil, fail("User is empty: give the login name on the node")
	}
	if n.KnownHostsFile == "" {
		return nil, fail("KnownHostsFile is empty: host keys are always verified; give an OpenSSH known_hosts file with the node's key (ssh-keyscan writes one)")
	}
	if _, err := knownhosts.New(n.KnownHostsFile); err != nil {
		return nil, fail("KnownHostsFile: %w", err)
	}
	if n.KeyFile != "" {
		pem, err := os.ReadFile(n.KeyFile)
		if err != nil {
			return nil, fail("KeyFile: %w", err)
		}
		nc.signer, err = ssh.ParsePrivateKey(pem)
		var missing *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &missing):
			return nil, fail("KeyFile %q is encrypted: load it into ssh-agent and leave KeyFile empty", n.KeyFile)
		case err != nil:
			return nil, fail("KeyFile %q: %w", n.KeyFile, err)
		}
	} else if getenv("SSH_AUTH_SOCK") == "" {
		return nil, fail("KeyFile is empty and SSH_AUTH_SOCK is unset: give a key file or run an SSH agent")
	}
	if n.MaxSessions < 0 {
		return nil, fail("MaxSessions %d is negative", n.MaxSessions)
	}
	if n.MaxSessions > 0 {
		nc.maxSessions = n.MaxSessions
	}
	if n.KeepaliveInterval != 0 {
		nc.keepalive = n.KeepaliveInterval
	}
	if n.KeepaliveCountMax < 0 {
		return nil, fail("KeepaliveCountMax %d is negative", n.KeepaliveCountMax)
	}
	if n.KeepaliveCountMax > 0 {
		nc.keepCount = n.KeepaliveCountMax
	}
	if n.DialTimeout < 0 {
		return nil, fail("DialTimeout %s is negative", n.DialTimeout)
	}
	if n.DialTimeout > 0 {
		nc.dialTimeout = n.DialTimeout
	}
	return nc, nil
}

func nodeNames(nodes map[string]*nodeConfig) []string {
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// pickNode chooses the node of one exec call. A non-empty text is the
// failure to return: no node given and no default, or an unknown name.
func (p *nodePool) pickNode(name string) (*nodeConfig, string) {
	name = strings.TrimSpace(name)
	names := strings.Join(nodeNames(p.nodes), ", ")
	if name == "" {
		name = p.def
		if name == "" {
			return nil, "No node given and no default node is configured: pass node as one of " + names + "."
		}
	}
	nc := p.nodes[name]
	if nc == nil {
		return nil, fmt.Sprintf("Unknown node %q: the configured nodes are %s.", name, names)
	}
	return nc, ""
}

// NodeError is a connection to a node that failed: the host key did not
// verify, authentication failed, or the node could not be reached. Its
// text is what the exec result says.
//
// A NodeError is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type NodeError struct {
	// Node is the node's configured name.
	Node string
	// Text says what failed, in words a model understands
	// ("host key mismatch for 10.0.0.5:22").
	Text string
	// Err is the underlying error.
	Err error
}

// Error returns Text.
func (e *NodeError) Error() string { return e.Text }

// Unwrap returns the underlying error.
func (e *NodeError) Unwrap() error { return e.Err }

// lostError is the end of a session whose connection dropped: the engine
// reports it as exitReason "lost" with this text.
type lostError struct{ text string }

func (e *lostError) Error() string { return e.text }

func (e *lostError) Is(target error) bool { return target == session.ErrLost }

// nodeEnv is the environment set on the node: the per-call overrides
// (already vetted), sorted, then the markers, which win. The local
// environment is not sent: the node has its own.
func nodeEnv(overrides map[string]string, markers []string) []string {
	env := make([]string, 0, len(overrides)+len(markers))
	for k, v := range overrides {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return append(env, markers...)
}
