package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// process is a session's shell in a container: a session.Process whose
// signals and end check are control execs into the same container, each
// aimed at the processes that carry the session's tag.
type process struct {
	c   *Cluster
	pod string
	tag string
	pid int // the wrapper's pid in the container (the shell is its child)

	reported chan string // the wrapper's report line, once
	done     chan struct{}

	// Set before done is closed, read after.
	streamErr error

	outW           []*os.File // write ends of the output pipes, closed when the stream ends
	stdinR, stdinW *os.File   // the stdin pipe; nil without stdin
	sizes          *sizeQueue // nil without a terminal
	filter         *streamFilter

	mu       sync.Mutex // guards the fields below
	trailer  string     // the wrapper's trailer after its tag: "CODE LEFT"; "" when none came
	sent     map[string]bool
	ended    bool   // the end check ran
	code     int    // the exit code
	signal   string // the signal name without SIG, "" for an exit
	lost     error
	left     bool  // processes were left after the end check's SIGKILL
	checkErr error // the end check could not run
	reaped   bool
	released bool
}

// Pid is the wrapper's pid inside the container (the shell is its child).
func (p *process) Pid() int { return p.pid }

// endStreams runs when the exec stream ended: the outputs reach EOF and
// the stdin copy and the terminal size queue stop.
func (p *process) endStreams() {
	if p.filter != nil {
		p.filter.flush()
	}
	for _, w := range p.outW {
		_ = w.Close()
	}
	if p.stdinR != nil {
		_ = p.stdinR.Close() // ends client-go's stdin copy
	}
	if p.sizes != nil {
		p.sizes.close()
	}
}

// noteTrailer keeps the wrapper's trailer ("CODE LEFT").
func (p *process) noteTrailer(rest string) {
	p.mu.Lock()
	p.trailer = rest
	p.mu.Unlock()
}

// AwaitExit blocks until the exec stream ended. When the wrapper's
// trailer came, the shell's end is known and what it left is gone (or
// noted). Otherwise the end check runs: it kills whatever of the session
// is left in the container and learns whether the wrapper was still
// running (a stream that ended without the shell's end is a lost
// session).
func (p *process) AwaitExit() error {
	<-p.done
	p.mu.Lock()
	trailer := p.trailer
	p.mu.Unlock()
	if f := strings.Fields(trailer); len(f) == 2 {
		if code, err := strconv.Atoi(f[0]); err == nil && code >= 0 && code <= 255 {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.ended, p.left, p.code = true, f[1] == "1", code
			p.signal = p.signalOf(code)
			return nil
		}
	}
	err := p.streamErr
	var exitErr utilexec.CodeExitError
	gotCode := errors.As(err, &exitErr)
	out, cerr := p.control(endScript(p.pid, p.tag))
	alive, left := false, false
	if cerr == nil {
		f := strings.Fields(lastLine(out))
		if len(f) == 3 && f[0] == "bgexec-end" {
			alive, left = f[1] == "1", f[2] == "1"
		} else {
			cerr = fmt.Errorf("unexpected answer %q", host0(out))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended, p.left, p.checkErr = true, left, cerr
	switch {
	case gotCode:
		p.code = exitErr.Code
		if s := p.signalOf(exitErr.Code); s != "" {
			p.signal = s
		}
	case err == nil && !alive && cerr == nil:
		p.code = 0
	default:
		p.lost = &lostError{text: p.lostText(err, alive, left, cerr)}
	}
	return nil
}

// lostText says what is known of a session whose stream ended without its
// exit.
func (p *process) lostText(err error, alive, left bool, cerr error) string {
	where := "pod " + p.c.namespace + "/" + p.pod
	text := "The exec stream to " + where + " ended without the command's exit"
	if err != nil {
		text += " (" + err.Error() + ")"
	}
	text += "."
	switch {
	case cerr != nil:
		return text + " The command may still be running there: one attempt to kill it over a new exec failed: " + cerr.Error() + "."
	case left:
		return text + " One attempt to kill it over a new exec sent SIGKILL, but processes of the session are still left there."
	case alive:
		return text + " It was still running; one attempt to kill it over a new exec worked: nothing of the session is left there."
	}
	return text + " Nothing of the session is left there; its exit code is unknown."
}

// signalOf is the signal name of an exit code 128+n when the host sent
// signal n to the session (container runtimes report a shell a signal
// ended as 128+n); "" otherwise.
func (p *process) signalOf(code int) string {
	if code <= 128 || code >= 128+65 {
		return ""
	}
	name := strings.TrimPrefix(unix.SignalName(syscall.Signal(code-128)), "SIG")
	if name == "" || !p.sent[name] {
		return ""
	}
	return name
}

// SignalGroup sends sig to every process of the session in the container
// by a control exec. It is a no-op once the stream ended (the end check
// killed what was left).
func (p *process) SignalGroup(sig syscall.Signal) error {
	name := strings.TrimPrefix(unix.SignalName(sig), "SIG")
	if name == "" {
		return fmt.Errorf("signal %d has no name", sig)
	}
	p.mu.Lock()
	skip := p.ended || p.reaped
	if !skip {
		p.sent[name] = true
	}
	p.mu.Unlock()
	if skip {
		return nil
	}
	if _, err := p.control(signalScript(name, p.tag)); err != nil {
		return fmt.Errorf("signal the session in pod %s/%s: %w", p.c.namespace, p.pod, err)
	}
	return nil
}

// Reap returns the exit the runtime reported, as a wait status.
func (p *process) Reap() (syscall.WaitStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reaped = true
	switch {
	case p.lost != nil:
		return 0, p.lost
	case p.signal != "":
		return syscall.WaitStatus(unix.SignalNum("SIG" + p.signal)), nil
	}
	return syscall.WaitStatus((p.code & 0xff) << 8), nil
}

// Release closes the session's stdin and reports processes the end
// check could not kill.
func (p *process) Release() error {
	p.mu.Lock()
	if p.released {
		p.mu.Unlock()
		return nil
	}
	p.released = true
	lost, left, cerr := p.lost, p.left, p.checkErr
	p.mu.Unlock()
	defer p.c.untrack(p)
	if p.stdinW != nil {
		_ = p.stdinW.Close()
	}
	switch {
	case lost != nil:
		return nil // the session's end text says what is known
	case cerr != nil:
		return fmt.Errorf("could not check the session's processes in pod %s/%s: %w", p.c.namespace, p.pod, cerr)
	case left:
		return fmt.Errorf("processes of the session are still running in pod %s/%s", p.c.namespace, p.pod)
	}
	return nil
}

// Resize queues the terminal's new size for the exec stream.
func (p *process) Resize(cols, rows uint16) error {
	if p.sizes == nil {
		return errors.New("the session has no terminal")
	}
	p.sizes.push(cols, rows)
	return nil
}

// PortOpen reports whether a TCP socket listens on port in the pod (its
// network namespace, which its containers share), by a control exec.
func (p *process) PortOpen(_ context.Context, port int) bool {
	if port <= 0 || port > 65535 {
		return false
	}
	_, err := p.control(listenScript(port))
	return err == nil
}

// killOnClose ends a session when its cluster closes: SIGKILL to all its
// processes, then the stream gets the time the start had to end.
func (p *process) killOnClose() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.SignalGroup(syscall.SIGKILL) // the stream's end follows, or the cancel
	t := newTimer(p.c.timeout)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
}

// control runs script with sh in the session's container and returns
// its stdout, within the start timeout. An error says the exec failed,
// or the script exited non-zero.
func (p *process) control(script string) (string, error) {
	return p.c.control(p.pod, script)
}

func (c *Cluster) control(pod, script string) (string, error) {
	u, err := c.execURL(pod, execRequest{Container: c.container, Command: []string{"sh", "-c", script}, Stdout: true, Stderr: true})
	if err != nil {
		return "", err
	}
	ex, err := c.executor(u)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var out, errOut bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	if err != nil {
		if s := strings.TrimSpace(errOut.String()); s != "" {
			err = fmt.Errorf("%w: %s", err, host0(s))
		}
		return out.String(), err
	}
	return out.String(), nil
}

// lostError is the end of a session whose stream ended without its exit:
// the engine reports it as exitReason "lost" with this text.
type lostError struct{ text string }

func (e *lostError) Error() string { return e.text }

func (e *lostError) Is(target error) bool { return target == session.ErrLost }

// stdinPipe is a session's input: the write end of the pipe the exec
// copies to the container. It has write deadlines, and TryWrite for a
// terminal's replies; it is not an *os.File, so the engine does not take
// it for a local terminal's master.
type stdinPipe struct{ f *os.File }

func (s *stdinPipe) Write(b []byte) (int, error)        { return s.f.Write(b) }
func (s *stdinPipe) Close() error                       { return s.f.Close() }
func (s *stdinPipe) SetWriteDeadline(t time.Time) error { return s.f.SetWriteDeadline(t) }

// TryWrite writes p if the pipe takes it now, never waiting.
func (s *stdinPipe) TryWrite(b []byte) bool {
	rc, err := s.f.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = rc.Write(func(fd uintptr) bool {
		n, err := unix.Write(int(fd), b)
		ok = err == nil && n == len(b)
		return true // never wait for room
	})
	return ok
}

// sizeQueue is the terminal's sizes for the exec stream
// (remotecommand.TerminalSizeQueue): the latest size not yet taken, or
// nil once the stream ended.
type sizeQueue struct {
	ch     chan remotecommand.TerminalSize // holds at most the latest size
	closed chan struct{}
	once   sync.Once
	mu     sync.Mutex // serializes push's replace
}

func newSizeQueue(cols, rows uint16) *sizeQueue {
	q := &sizeQueue{ch: make(chan remotecommand.TerminalSize, 1), closed: make(chan struct{})}
	if cols > 0 && rows > 0 {
		q.ch <- remotecommand.TerminalSize{Width: cols, Height: rows}
	}
	return q
}

func (q *sizeQueue) push(cols, rows uint16) {
	q.mu.Lock()
	defer q.mu.Unlock()
	select {
	case <-q.ch: // an older size not taken yet
	default:
	}
	q.ch <- remotecommand.TerminalSize{Width: cols, Height: rows}
}

// Next blocks for the next size; nil once the stream ended.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case s := <-q.ch:
		return &s
	case <-q.closed:
		return nil
	}
}

func (q *sizeQueue) close() { q.once.Do(func() { close(q.closed) }) }

func newTimer(d time.Duration) *time.Timer { return time.NewTimer(d) }

func parseURL(s string) (*url.URL, error) { return url.Parse(s) }

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// host0 shortens a text from the container for an error.
func host0(s string) string { return host.MiddleTruncate(strings.TrimSpace(s), 300) }
