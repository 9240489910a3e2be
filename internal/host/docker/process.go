package dockerhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"github.com/moby/moby/client/pkg/versions"
	"golang.org/x/sys/unix"
)

// process is one session's command: an exec in the session's own
// container. It is a [session.Process], a [host.Resizer], a
// [host.UsageReader], a [host.PortProber] and a [session.LimitReporter].
type process struct {
	h      *Host
	cid    string // the session's container
	tag    string // PerScope: the tag its processes carry ("" with a container of its own)
	execID string
	pid    int      // the exec's pid as the daemon's machine sees it
	conn   net.Conn // the hijacked attach stream
	// readers are the pipe ends the copier writes to (pipe mode), closed
	// by Close when a session's reader is gone, so the copier never
	// blocks on them.
	readers []io.Closer
	ended   chan struct{} // closed when the attach stream ended

	resMu   sync.Mutex // guards resView and resAt
	resView *host.Usage
	resAt   time.Time

	mu       sync.Mutex // guards the fields below
	code     int
	exitErr  error // the exit could not be learned: lost
	gotExit  bool
	sent     map[syscall.Signal]bool // signals the host sent the session
	oomKills int                     // the container's OOM kills, -1 when unread
	oomBase  int                     // PerScope: the container's OOM kills when the session started
	reaped   bool
	released bool
	// killedAfterExit: a SIGKILL reached every process of the container
	// after the exec ended, so nothing of the session runs any more.
	killedAfterExit bool
}

// startExec runs spec in container cid, in dir, on hijacked streams. A
// non-empty tag goes into the command's environment (see [tagKey]).
func (h *Host) startExec(ctx context.Context, cid string, spec *host.Spec, dir, tag string) (*host.Started, error) {
	opts := h.execOptions(spec, dir)
	if tag != "" {
		opts.Env = append(opts.Env, tagKey+"="+tag)
	}
	ex, err := h.api.ExecCreate(ctx, cid, opts)
	if err != nil {
		return nil, fmt.Errorf("docker host: create the exec: %w", err)
	}
	att, err := h.api.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{TTY: spec.PTY, ConsoleSize: opts.ConsoleSize})
	if err != nil {
		return nil, fmt.Errorf("docker host: start the exec: %w", err)
	}
	p := &process{h: h, cid: cid, tag: tag, execID: ex.ID, conn: att.Conn, ended: make(chan struct{}), oomKills: -1}
	p.pid = h.execPid(ctx, ex.ID)
	st := &host.Started{Process: p}
	if spec.PTY {
		if h.sizeAfterStart() {
			if err := p.Resize(spec.Cols, spec.Rows); err != nil {
				_ = att.Conn.Close() // ends the exec's terminal; the command sees a hangup
				return nil, fmt.Errorf("docker host: size the exec's terminal: %w", err)
			}
		}
		st.Outputs = []io.Reader{&ttyOutput{r: att.Reader, p: p}}
		st.Stdin = &stdin{conn: att.Conn, pty: true}
		return st, nil
	}
	return h.splitStreams(p, st, att, spec.StdinPipe)
}

// awaitSize, put before a terminal command, waits until the terminal has a
// size, for at most about five seconds. A terminal without one reads as
// "0 0" to coreutils' stty and as an error to busybox's. Where stty is
// missing it does not wait.
const awaitSize = `if command -v stty >/dev/null 2>&1; then bgexec_n=0; while [ $bgexec_n -lt 500 ]; do ` +
	`case $(stty size 2>/dev/null) in ""|"0 0") sleep 0.01 2>/dev/null || { sleep 1; bgexec_n=$((bgexec_n+99)); }; bgexec_n=$((bgexec_n+1));; *) break;; esac; ` +
	`done; unset bgexec_n; fi; `

// sizeAfterStart reports whether the daemon ignores an exec's initial
// console size (API before 1.42), so the host sizes the terminal with a
// resize once the exec runs.
func (h *Host) sizeAfterStart() bool {
	return versions.LessThan(h.api.ClientVersion(), "1.42")
}

// execOptions is the exec of spec in dir: the shell with the command, its
// environment, and a terminal of the spec's size.
func (h *Host) execOptions(spec *host.Spec, dir string) client.ExecCreateOptions {
	opts := client.ExecCreateOptions{
		User: h.cfg.User, TTY: spec.PTY, AttachStdout: true, AttachStderr: true,
		AttachStdin: spec.PTY || spec.StdinPipe, Env: execEnv(spec.Env), WorkingDir: dir,
		Cmd: []string{h.cfg.Shell, "-c", spec.Command},
	}
	if spec.PTY {
		opts.ConsoleSize = client.ConsoleSize{Height: uint(spec.Rows), Width: uint(spec.Cols)}
		if h.sizeAfterStart() {
			// Daemons before API 1.42 ignore the console size: startExec
			// sizes the terminal once the exec runs, and the command waits
			// for a size so its first look sees one. Setting the size from
			// inside (stty) would race a resize made right after the start
			// and could undo it.
			opts.ConsoleSize = client.ConsoleSize{}
			opts.Cmd[2] = awaitSize + spec.Command
		}
	}
	return opts
}

// splitStreams serves a pipe exec: without a terminal the stream carries
// stdout and stderr framed together, and one copier, counted in
// h.streams, splits them. Stdin stays open when the spec asked for it.
func (h *Host) splitStreams(p *process, st *host.Started, att client.ExecAttachResult, stdinPipe bool) (*host.Started, error) {
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	st.Outputs = []io.Reader{outR, errR}
	p.readers = []io.Closer{outR, errR}
	if stdinPipe {
		st.Stdin = &stdin{conn: att.Conn}
	} else if err := att.CloseWrite(); err != nil {
		att.Close()
		return nil, fmt.Errorf("docker host: close the exec's stdin: %w", err)
	}
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.streams.Add(1) // under mu, so never after Close began to wait
		h.live[p] = struct{}{}
	}
	h.mu.Unlock()
	if closed {
		att.Close()
		return nil, ErrClosed
	}
	go func() {
		defer h.streams.Done()
		_, err := stdcopy.StdCopy(outW, errW, att.Reader)
		outW.CloseWithError(err)
		errW.CloseWithError(err)
		p.streamEnded()
	}()
	return st, nil
}

// streamEnded notes that the attach stream is over: the exec ended, or
// the daemon went away.
func (p *process) streamEnded() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.ended:
	default:
		close(p.ended)
	}
}

func (p *process) Pid() int { return p.pid }

// exitPoll is how often AwaitExit asks again while the daemon still says
// the exec runs after its stream ended.
const exitPoll = 20 * time.Millisecond

// AwaitExit waits for the attach stream to end, then asks the daemon how
// the exec ended. When the daemon cannot be asked, the session is lost.
func (p *process) AwaitExit() error {
	<-p.ended
	ctx, cancel := context.WithTimeout(context.Background(), p.h.cfg.APITimeout)
	defer cancel()
	for {
		in, err := p.h.api.ExecInspect(ctx, p.execID, client.ExecInspectOptions{})
		if err != nil {
			p.mu.Lock()
			p.exitErr = &lostError{text: p.lostText(err)}
			p.mu.Unlock()
			return nil
		}
		if !in.Running {
			p.mu.Lock()
			p.gotExit, p.code = true, in.ExitCode
			p.mu.Unlock()
			return nil
		}
		t := time.NewTimer(exitPoll)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

func (p *process) lostText(err error) string {
	return "Connection to the Docker daemon at " + p.h.cfg.Daemon + " lost (" + err.Error() +
		"); the command's end is unknown, and its container " + shortID(p.cid) + " may still be running."
}

// lostError is a Reap error for a session whose daemon went away.
type lostError struct{ text string }

func (e *lostError) Error() string { return e.text }
func (e *lostError) Unwrap() error { return session.ErrLost }

// SignalGroup sends sig to every process of the session's container but
// its idle init: each one, wherever it moved (a new session, a new
// process group, another parent), since the container holds nothing else.
// It is a no-op after the reap or the loss.
func (p *process) SignalGroup(sig syscall.Signal) error {
	p.mu.Lock()
	skip := p.reaped || p.exitErr != nil
	if !skip && !p.gotExit {
		// Only a signal sent while the exec ran can have ended it.
		if p.sent == nil {
			p.sent = map[syscall.Signal]bool{}
		}
		p.sent[sig] = true
	}
	p.mu.Unlock()
	if skip {
		return nil
	}
	name := strings.TrimPrefix(unix.SignalName(sig), "SIG")
	if name == "" {
		return fmt.Errorf("signal %d has no name", sig)
	}
	// kill -1 reaches every process of the container's pid namespace but
	// the caller and init; in a scope's container, the session's tag
	// finds its processes. The OOM count is read in the same exec.
	script := "kill -s " + name + " -1 2>/dev/null; echo gone; "
	if p.tag != "" {
		script = killTagged(p.tag, name, sig == syscall.SIGKILL)
	}
	out, code, err := p.h.run(p.cid, script+oomScript)
	if err == nil && code != 0 {
		err = fmt.Errorf("the signal script exited with code %d", code)
	}
	if err != nil {
		return fmt.Errorf("docker host: signal the processes of container %s: %w", shortID(p.cid), err)
	}
	p.noteOOM(out)
	if sig == syscall.SIGKILL {
		p.mu.Lock()
		p.killedAfterExit = p.gotExit && bytes.Contains(out, []byte("gone\n"))
		p.mu.Unlock()
	}
	return nil
}

// oomScript prints "oom N", N the container's OOM kills so far, from its
// memory cgroup (v2's memory.events, v1's memory.oom_control).
const oomScript = `for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do [ -r "$f" ] || continue; while read -r k v; do [ "$k" = oom_kill ] && echo "oom $v"; done <"$f"; done; exit 0`

func (p *process) noteOOM(out []byte) {
	if n, ok := parseOOM(out); ok {
		p.mu.Lock()
		p.oomKills = n
		p.mu.Unlock()
	}
}

// OOMKilled reports whether the kernel's OOM killer ended a process of
// the container (its memory limit was hit).
func (p *process) OOMKilled() bool {
	p.mu.Lock()
	n, lost := p.oomKills, p.exitErr != nil
	p.mu.Unlock()
	if n < 0 && !lost {
		if out, _, err := p.h.run(p.cid, oomScript); err == nil {
			p.noteOOM(out)
		}
		p.mu.Lock()
		n = p.oomKills
		p.mu.Unlock()
	}
	return n > p.oomBase
}

// Reap returns the exec's end as a wait status. The engine reports a
// process killed by signal N as the code 128+N, as a shell does; it is
// read back as that signal when the host sent it (kill, timeout), or
// when it is SIGKILL and the memory limit was hit. Any other code is an
// exit code.
func (p *process) Reap() (syscall.WaitStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reaped = true
	switch {
	case p.exitErr != nil:
		return 0, p.exitErr
	case !p.gotExit:
		return 0, errors.New("the Docker daemon gave no exit status")
	}
	if sig := syscall.Signal(p.code - 128); p.code > 128 && p.code < 128+65 {
		if p.sent[sig] || (sig == syscall.SIGKILL && p.oomKills > p.oomBase) {
			return syscall.WaitStatus(sig), nil
		}
	}
	return syscall.WaitStatus((p.code & 0xff) << 8), nil
}

// Release removes the session's container with whatever still runs in
// it; an error says the daemon did not confirm the removal. After a
// SIGKILL that reached every process of the ended session (the engine
// sends one at every end) the removal runs in the background, and Close
// waits for it.
func (p *process) Release() error {
	p.mu.Lock()
	if p.released {
		p.mu.Unlock()
		return nil
	}
	p.released = true
	dead := p.killedAfterExit
	p.mu.Unlock()
	p.h.mu.Lock()
	delete(p.h.live, p)
	p.h.mu.Unlock()
	_ = p.conn.Close() // the engine is done with the streams
	if p.tag != "" {
		return p.releaseTagged(dead)
	}
	if dead {
		// Nothing runs in it any more: the removal (a copy-on-write
		// layer to delete) need not hold up the session's end.
		p.h.removeLater(p.cid)
		return nil
	}
	return p.h.removeContainer(p.cid)
}

// Resize resizes the exec's terminal.
func (p *process) Resize(cols, rows uint16) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.h.cfg.APITimeout)
	defer cancel()
	_, err := p.h.api.ExecResize(ctx, p.execID, client.ExecResizeOptions{Height: uint(rows), Width: uint(cols)})
	return err
}

// run runs script in container cid as root and returns its stdout and
// exit code.
func (h *Host) run(cid, script string) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.APITimeout)
	defer cancel()
	ex, err := h.api.ExecCreate(ctx, cid, client.ExecCreateOptions{
		User: "0", AttachStdout: true, AttachStderr: true, Cmd: []string{h.cfg.Shell, "-c", script},
	})
	if err != nil {
		return nil, 0, err
	}
	att, err := h.api.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, 0, err
	}
	defer att.Close()
	stop := context.AfterFunc(ctx, func() { _ = att.Conn.Close() }) // the deadline ends the read
	defer stop()
	var out, errOut bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errOut, att.Reader); err != nil {
		return nil, 0, err
	}
	for {
		in, err := h.api.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
		if err != nil {
			return nil, 0, err
		}
		if !in.Running {
			return out.Bytes(), in.ExitCode, nil
		}
		t := time.NewTimer(exitPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, 0, ctx.Err()
		case <-t.C:
		}
	}
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// execPid returns the exec's pid as the daemon's machine sees it, asking
// a few times while the daemon has not started it yet; 0 when it has not
// said by then (the pid is only shown, never signalled).
func (h *Host) execPid(ctx context.Context, execID string) int {
	for range 20 {
		in, err := h.api.ExecInspect(ctx, execID, client.ExecInspectOptions{})
		if err != nil || in.PID > 0 || !in.Running && in.ExitCode != 0 {
			return in.PID
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0
		case <-t.C:
		}
	}
	return 0
}

// closeStreams ends the session's streams: its attach connection and the
// pipes its copier writes to.
func (p *process) closeStreams() {
	_ = p.conn.Close() // ends the copier's read
	for _, r := range p.readers {
		_ = r.Close() // ends a copier's write nobody reads
	}
}
