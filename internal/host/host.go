// Package host is the seam between the tool layer (package bgexec's exec
// and process tools) and the machines commands run on: this machine (the
// gateway, package local), a bubblewrap sandbox on it (package sandbox,
// which wraps the local host), or an SSH node (package ssh).
//
// A [Host] starts one command from a [Spec], which says what to run and
// how (the command, its working directory, its environment, a terminal or
// pipes) and nothing about where: each host turns it into what it needs
// (an argv and a cgroup here, bubblewrap's mounts, a remote command line).
// The registry builds its hosts once, when it is built (and closes the
// local host, which owns the containment machinery, last); an exec call
// only chooses one of them.
//
// What only some hosts can do is an optional interface, found on the
// started process ([Resizer], [PortProber], [UsageReader], [EscapeWatcher],
// [Container], [EndUsager], [PeakReporter]) or on the host ([Preparer],
// [Placer]), so the tool
// layer asks for an ability by name and never for a concrete host type.
package host

import (
	"cmp"
	"context"
	"io"
	"slices"

	"github.com/bgexec/bgexec/internal/session"
)

// Host starts commands on one machine. Implementations are safe for
// concurrent use.
type Host interface {
	// Start starts the command of spec. On error nothing is left running
	// and every descriptor it opened is closed; the error says what to fix
	// when the cause is the spec. A host that cannot open a terminal may
	// start the command on pipes instead, with PTY cleared in spec and a
	// warning in the result.
	Start(ctx context.Context, spec *Spec) (*Started, error)
	// Name is the host's name as a call and an event give it: "gateway",
	// "sandbox", "node", "docker" or "kubernetes".
	Name() string
}

// Spec is one command to start, the same for every host.
type Spec struct {
	// Command is the shell command as the caller wrote it; the host runs
	// it as [shell, "-c", Command] (or hands a long one over another way).
	Command string
	// Dir is the working directory. On a local host (gateway, sandbox) it
	// is this machine's absolute path, checked by the caller; on a node it
	// is the directory as asked, "" for the node's default, checked there.
	Dir string
	// Env is what the command's environment is made of; see [Env].
	Env Env
	// PTY runs the command on a pseudo-terminal of Cols×Rows cells, with
	// stdin, stdout and stderr all on it.
	PTY        bool
	Cols, Rows uint16
	// StdinPipe keeps the command's stdin open for writes (pipe mode);
	// false gives it EOF. Ignored with PTY.
	StdinPipe bool
	// Carry, when non-nil, asks the host to capture the shell's working
	// directory and environment at its end (see [Carry] and
	// [Started.State]).
	Carry *Carry
	// Prepared is what the host's [Preparer] left for its Start; callers
	// leave it alone.
	Prepared any
}

// Env is what a command's environment is made of, in layers, each later
// one winning: the base (this process's environment on a local host, the
// login environment on a node), Carried, Defaults for keys still unset,
// the caller's Overrides (checked by the caller against its environment
// rules), Forced (markers), then Added.
type Env struct {
	// Carried is the environment the caller's previous command left
	// (Config.KeepShellState), nil for none. A local host starts from it
	// instead of this process's environment (it is a whole environment);
	// a node applies its KEY=value entries, and unsets its bare KEY names,
	// over the login environment.
	Carried []string
	// Defaults are KEY=value entries set when the layers below have no
	// such key.
	Defaults []string
	// Overrides are the caller's entries.
	Overrides map[string]string
	// Forced are KEY=value entries that win over the layers above.
	Forced []string
	// Added are KEY=value entries an observer adds (a trace context); each
	// replaces any entry of its key, Forced ones included.
	Added []string
}

// Carry asks a host to capture the shell state a command leaves
// (Config.KeepShellState): its working directory and environment at the
// end of its shell.
type Carry struct {
	// Cwd is the directory the caller's previous command left; a node
	// starts the command there when Spec.Dir is "". Local hosts get the
	// directory in Spec.Dir.
	Cwd string
}

// Started is a started command and the descriptors its session owns.
type Started struct {
	// Process is the command's process (or remote process).
	Process session.Process
	// Outputs are its stdout and stderr, or the PTY master alone.
	Outputs []io.Reader
	// Stdin is nil when the command reads EOF; the PTY master in PTY mode.
	Stdin io.Writer
	// TTYName is the terminal's path, "" for pipes.
	TTYName string
	// Cwd is where the command runs, when the host learned it at the start
	// (a node's default directory); "" otherwise.
	Cwd string
	// Warnings are lines for the caller's result (a node's workdir
	// fallback).
	Warnings []string
	// Env is the environment the command started with, when the host
	// composed it here (local hosts); nil on a node.
	Env []string
	// Hint is a sentence for a failure of the command that the host can
	// explain (the sandbox: a working directory that is read-only).
	Hint string
	// State is set when [Spec.Carry] asked for the shell's state, and nil
	// otherwise. It is called once, after the session ended or when the
	// caller is done with it: with keep, it returns the state the shell
	// left, in the host's format (ok is false when the shell wrote none:
	// it exec'd away, was killed, or set an EXIT trap of its own); without
	// keep, it only frees what holds the state.
	State func(keep bool) (state []byte, ok bool)
}

// Preparer is a [Host] that checks a spec before anything about the call
// is recorded or started. Prepare returns a failure text that says what
// to fix, or "".
type Preparer interface {
	Prepare(spec *Spec) (failure string)
}

// Placer is a [Host] that limits where commands may run: Place checks a
// working directory of this machine and returns a failure text that says
// what to fix, or "".
type Placer interface {
	Place(dir string) (failure string)
}

// Resizer is a started process whose terminal is resized by the host (a
// node's, over its SSH channel) rather than through a local PTY master.
type Resizer interface {
	Resize(cols, rows uint16) error
}

// PortProber is a started process whose host checks whether a TCP port
// accepts connections where the process runs (on a node, over the
// connection). Without it, the port is probed on this machine's loopback.
type PortProber interface {
	PortOpen(ctx context.Context, port int) bool
}

// EndUsager is a started process that can say, once reaped, how much CPU
// its waited-for processes used.
type EndUsager interface {
	EndUsage() (cpuMs int64, ok bool)
}

// PeakReporter is a started process that can say, after its session
// ended, the most memory it was charged (its cgroup's peak), in bytes.
type PeakReporter interface {
	PeakMemory() (bytes int64, ok bool)
}

// EscapeWatcher is a started process whose host can tell which of its
// processes left it (process-group containment, without a cgroup):
// WatchEscapes, called before a kill, remembers its processes; the returned function,
// called after the session ended, returns a warning naming any that
// survived, or "". A nil function means there is nothing to watch (a
// cgroup kill ends them all).
type EscapeWatcher interface {
	WatchEscapes() (after func() string, err error)
}

// Container is a started process that may run in a cgroup of its own
// (InCgroup): what it leaves is then killed with the cgroup, which is not
// reused until it was seen empty.
type Container interface {
	InCgroup() bool
}

// UsageReader is a started process that reports what it uses now. Usage
// returns nil when nothing can be read. A view may be reused for a short
// while unless fresh is set; scan, when not nil, shares reads among the
// sessions of one call. note, when not nil, is called with the view's
// listening ports (":3000" each) whenever a newer view is read, in the
// order views are read.
type UsageReader interface {
	Usage(scan *Scan, fresh bool, note func(ports []string)) *Usage
}

// Scan holds what one call reads once for all its sessions (the TCP
// tables of each network namespace). Not safe for concurrent use.
type Scan struct {
	// Tables are the listening sockets by network namespace, then by
	// socket inode.
	Tables map[string]map[uint64]Listener
}

// Usage is what a running session uses now; a field that cannot be read
// is 0.
type Usage struct {
	CPUMs       int64
	MemoryBytes int64
	Tasks       int
	Ports       []Listener // sorted by port, then address
}

// Listener is a listening TCP socket.
type Listener struct {
	Port    int
	Address string
}

// SortListeners sorts ls by port, then address, and drops repeats (one
// socket found through two processes), as [Usage.Ports] holds them.
func SortListeners(ls []Listener) []Listener {
	slices.SortFunc(ls, func(a, b Listener) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Address, b.Address))
	})
	return slices.Compact(ls)
}
