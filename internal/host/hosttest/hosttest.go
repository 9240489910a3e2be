// Package hosttest has a host and a process that exist only in memory,
// for the tool layer's tests: yield, timeout, grace, TTL and notification
// logic runs against them under testing/synctest with a fake clock, and
// fuzzed calls never start a real shell.
package hosttest

import (
	"context"
	"io"
	"sync"
	"syscall"

	"github.com/bgexec/bgexec/internal/host"
)

// Host is a [host.Host] whose Start calls StartFunc. Safe for concurrent
// use when StartFunc is.
type Host struct {
	// HostName is what Name returns; empty means "gateway".
	HostName string
	// StartFunc starts a spec.
	StartFunc func(ctx context.Context, spec *host.Spec) (*host.Started, error)
}

// Name returns HostName, or "gateway".
func (h *Host) Name() string {
	if h.HostName == "" {
		return "gateway"
	}
	return h.HostName
}

// Start calls StartFunc.
func (h *Host) Start(ctx context.Context, spec *host.Spec) (*host.Started, error) {
	return h.StartFunc(ctx, spec)
}

// Process is a process that exists only in memory. Its output is one
// stream, written through Write and closed when it exits. It exits when
// Exit is called, or when it gets a signal (SIGKILL always; others unless
// IgnoreTerm). Safe for concurrent use; set IgnoreTerm before the process
// is started.
type Process struct {
	// IgnoreTerm makes every signal but SIGKILL do nothing.
	IgnoreTerm bool

	out    *io.PipeWriter
	exited chan struct{}

	mu      sync.Mutex // guards the fields below
	once    sync.Once
	status  syscall.WaitStatus
	signals []syscall.Signal
}

// NewProcess returns a running process and the reader of its output.
func NewProcess() (*Process, io.Reader) {
	r, w := io.Pipe()
	return &Process{out: w, exited: make(chan struct{})}, r
}

// Started returns p as a started command with its output, for a fake
// host's Start.
func Started() (*Process, *host.Started) {
	p, r := NewProcess()
	return p, &host.Started{Process: p, Outputs: []io.Reader{r}}
}

// Pid is a fixed pid, 4242.
func (p *Process) Pid() int { return 4242 }

// AwaitExit blocks until the process exited.
func (p *Process) AwaitExit() error { <-p.exited; return nil }

// Release does nothing.
func (p *Process) Release() error { return nil }

// Reap returns the status Exit gave.
func (p *Process) Reap() (syscall.WaitStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, nil
}

// SignalGroup records sig and exits of it, unless IgnoreTerm holds and it
// is not SIGKILL.
func (p *Process) SignalGroup(sig syscall.Signal) error {
	p.mu.Lock()
	p.signals = append(p.signals, sig)
	ignore := p.IgnoreTerm && sig != syscall.SIGKILL
	p.mu.Unlock()
	if !ignore {
		p.Exit(syscall.WaitStatus(sig))
	}
	return nil
}

// Signals returns the signals sent so far, in order.
func (p *Process) Signals() []syscall.Signal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]syscall.Signal(nil), p.signals...)
}

// Write prints b on the process's output; it blocks until the session
// reads it, and fails once the process exited.
func (p *Process) Write(b []byte) (int, error) { return p.out.Write(b) }

// Exit ends the process with a wait status (code<<8, or the signal
// number) and closes its output. Only the first call counts.
func (p *Process) Exit(ws syscall.WaitStatus) {
	p.once.Do(func() {
		p.mu.Lock()
		p.status = ws
		p.mu.Unlock()
		_ = p.out.Close()
		close(p.exited)
	})
}
