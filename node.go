package bgexec

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	sshhost "github.com/bgexec/bgexec/internal/host/ssh"
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

// resolveNodes validates the configured nodes. It runs for every Config
// that names nodes, whatever the host, so a mistake shows at once.
// The nodes are converted here into the configuration of
// internal/host/ssh, which keeps their connections.
func resolveNodes(c *Config, getenv func(string) string) (map[string]sshhost.Config, string, error) {
	if len(c.Nodes) == 0 {
		if c.DefaultNode != "" {
			return nil, "", fmt.Errorf("bgexec: Config.DefaultNode %q names no node: Config.Nodes is empty", c.DefaultNode)
		}
		return nil, "", nil
	}
	nodes := make(map[string]sshhost.Config, len(c.Nodes))
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
	if _, ok := nodes[def]; def != "" && !ok {
		return nil, "", fmt.Errorf("bgexec: Config.DefaultNode %q is not one of the configured nodes (%s)", def, strings.Join(nodeNames(nodes), ", "))
	}
	return nodes, def, nil
}

// resolveNode checks one configured node and fills in the defaults.
func resolveNode(name string, n Node, getenv func(string) string) (sshhost.Config, error) {
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, " \t\r\n") {
		return sshhost.Config{}, fmt.Errorf("bgexec: node name %q must be non-empty and without spaces", name)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("bgexec: node %q: "+format, append([]any{name}, a...)...)
	}
	nc := sshhost.Config{
		Name: name, Addr: strings.TrimSpace(n.Addr), User: n.User, KnownHostsFile: n.KnownHostsFile,
		Shell: n.Shell, Workdir: n.Workdir,
		MaxSessions: DefaultNodeMaxSessions, KeepaliveInterval: DefaultNodeKeepalive,
		KeepaliveCountMax: DefaultNodeKeepaliveCount, DialTimeout: DefaultNodeDialTimeout,
	}
	if nc.Addr == "" {
		return sshhost.Config{}, fail("Addr is empty: give host:port")
	}
	if _, _, err := net.SplitHostPort(nc.Addr); err != nil {
		nc.Addr = net.JoinHostPort(strings.Trim(nc.Addr, "[]"), "22")
	}
	if nc.User == "" {
		return sshhost.Config{}, fail("User is empty: give the login name on the node")
	}
	if err := nodeCredentials(&nc, n, getenv, fail); err != nil {
		return sshhost.Config{}, err
	}
	if err := nodeTuning(&nc, n, fail); err != nil {
		return sshhost.Config{}, err
	}
	return nc, nil
}

// nodeCredentials checks how a node is trusted and logged in to: its
// known_hosts file, and a key file or an SSH agent.
func nodeCredentials(nc *sshhost.Config, n Node, getenv func(string) string, fail func(string, ...any) error) error {
	if n.KnownHostsFile == "" {
		return fail("KnownHostsFile is empty: host keys are always verified; give an OpenSSH known_hosts file with the node's key (ssh-keyscan writes one)")
	}
	if _, err := knownhosts.New(n.KnownHostsFile); err != nil {
		return fail("KnownHostsFile: %w", err)
	}
	if n.KeyFile == "" {
		if getenv("SSH_AUTH_SOCK") == "" {
			return fail("KeyFile is empty and SSH_AUTH_SOCK is unset: give a key file or run an SSH agent")
		}
		return nil
	}
	pem, err := os.ReadFile(n.KeyFile)
	if err != nil {
		return fail("KeyFile: %w", err)
	}
	nc.Signer, err = ssh.ParsePrivateKey(pem)
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing):
		return fail("KeyFile %q is encrypted: load it into ssh-agent and leave KeyFile empty", n.KeyFile)
	case err != nil:
		return fail("KeyFile %q: %w", n.KeyFile, err)
	}
	return nil
}

// nodeTuning checks a node's session cap, keepalives and dial timeout;
// each zero keeps its default.
func nodeTuning(nc *sshhost.Config, n Node, fail func(string, ...any) error) error {
	if n.MaxSessions < 0 {
		return fail("MaxSessions %d is negative", n.MaxSessions)
	}
	if n.MaxSessions > 0 {
		nc.MaxSessions = n.MaxSessions
	}
	if n.KeepaliveInterval != 0 {
		nc.KeepaliveInterval = n.KeepaliveInterval
	}
	if n.KeepaliveCountMax < 0 {
		return fail("KeepaliveCountMax %d is negative", n.KeepaliveCountMax)
	}
	if n.KeepaliveCountMax > 0 {
		nc.KeepaliveCountMax = n.KeepaliveCountMax
	}
	if n.DialTimeout < 0 {
		return fail("DialTimeout %s is negative", n.DialTimeout)
	}
	if n.DialTimeout > 0 {
		nc.DialTimeout = n.DialTimeout
	}
	return nil
}

func nodeNames(nodes map[string]sshhost.Config) []string {
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// pickNode chooses the node of one exec call and returns its name. A
// non-empty text is the failure to return: no node given and no default,
// or an unknown name.
func (hs *hostSet) pickNode(name string) (string, string) {
	name = strings.TrimSpace(name)
	names := strings.Join(hs.nodeNames, ", ")
	if name == "" {
		name = hs.defNode
		if name == "" {
			return "", "No node given and no default node is configured: pass node as one of " + names + "."
		}
	}
	if !slices.Contains(hs.nodeNames, name) {
		return "", fmt.Sprintf("Unknown node %q: the configured nodes are %s.", name, names)
	}
	return name, ""
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

// nodeError turns what a node host returns into the public types: a
// connection that failed is a *NodeError, a closed pool [ErrClosed].
func nodeError(err error) error {
	var e *sshhost.Error
	switch {
	case errors.As(err, &e):
		return &NodeError{Node: e.Node, Text: e.Text, Err: e.Err}
	case errors.Is(err, sshhost.ErrClosed):
		return ErrClosed
	}
	return err
}
