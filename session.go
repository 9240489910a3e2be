package bgexec

import (
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bgexec/bgexec/internal/keys"
	"github.com/bgexec/bgexec/internal/termtext"
	"golang.org/x/sys/unix"
)

// ExitReason says how a session ended. It is never invented: a killed run is
// "killed", not "exit" with code 0.
type ExitReason string

// Exit reasons reported in Details.ExitReason.
const (
	ExitReasonExit       ExitReason = "exit"        // the command exited on its own
	ExitReasonSignal     ExitReason = "signal"      // a signal not sent by bgexec ended it
	ExitReasonTimeout    ExitReason = "timeout"     // the exec timeout ended it
	ExitReasonKilled     ExitReason = "killed"      // kill, remove or Close ended it
	ExitReasonSpawnError ExitReason = "spawn-error" // it never started
)

// Status is a session or result status.
type Status string

// Statuses used in Details.Status.
const (
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
)

// child is the OS side of a session. The real one is osChild; tests use a
// fake to drive timer logic under testing/synctest.
type child interface {
	pid() int
	// awaitExit blocks until the leader exited, leaving it unreaped.
	awaitExit() error
	// signalGroup signals the whole process group; a no-op once reaped.
	signalGroup(sig syscall.Signal) error
	// reap collects the exit status.
	reap() (syscall.WaitStatus, error)
	// release frees what outlives the process (its cgroup). An error
	// means processes of the session may still run.
	release() error
}

// exitInfo is the recorded end of a session.
type exitInfo struct {
	code   *int   // nil when no exit code exists (signal)
	signal string // e.g. "SIGTERM", "" when exited
	reason ExitReason
	at     time.Time
}

func (e *exitInfo) status() Status {
	if e.reason == ExitReasonExit && (e.code == nil || (*e.code != 126 && *e.code != 127)) {
		return StatusCompleted
	}
	return StatusFailed
}

// session is one spawned command. Its owner goroutine (run) waits once,
// records the end under mu, then closes done.
type session struct {
	id        string
	scope     string
	command   string
	name      string
	cwd       string
	pty       bool
	ttyName   string // PTY slave path, to read the line discipline's mode
	startedAt time.Time
	pid       int
	timeout   time.Duration
	reg       *Registry
	c         child
	outputs   []io.Reader

	stdinMu  sync.Mutex // serialises writes and the close of stdin
	stdin    io.Writer  // nil when not writable; *os.File for real children
	stdinEOF bool       // guarded by stdinMu

	done chan struct{} // closed once the end is recorded

	mu           sync.Mutex // guards everything below
	out          outputBuf
	term         termState
	backgrounded bool
	ended        bool
	exit         exitInfo
	leftover     error         // why the end of every process is not certain; nil when it is
	killReason   ExitReason    // set when bgexec asked it to end
	changed      chan struct{} // closed and replaced on new output or end
	pollWaiters  int
	exitReported bool   // a poll reported the end: no notification
	removed      bool   // remove forgot it: no notification
	notifiedText string // the exit event delivered, for Retract
	emptyPolls   int
	timeoutTimer *time.Timer
	lineWaiters  []*lineWaiter
	killTimer    *time.Timer
}

// termState tracks PTY state derived from the output.
type termState struct {
	cursorMode keys.CursorMode
}

// broadcastLocked wakes everyone waiting for a change. s.mu must be held.
func (s *session) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// start launches the owner and reader goroutines and arms the timeout.
func (s *session) start() {
	s.changed = make(chan struct{})
	s.done = make(chan struct{})
	readers := &readerCount{done: make(chan struct{})}
	readers.left.Store(int32(len(s.outputs)))
	if len(s.outputs) == 0 {
		close(readers.done)
	}
	for i, r := range s.outputs {
		s.reg.goroutines.Add(1)
		go func() {
			defer s.reg.goroutines.Done()
			defer readers.finish()
			s.readStream(streamID(i), r)
		}()
	}
	if s.timeout > 0 {
		s.mu.Lock()
		s.timeoutTimer = time.AfterFunc(s.timeout, func() { s.terminate(ExitReasonTimeout) })
		s.mu.Unlock()
	}
	s.reg.goroutines.Add(1)
	go func() {
		defer s.reg.goroutines.Done()
		s.run(readers)
	}()
}

// readerCount closes done when the last of a session's readers returns, so
// the owner can wait for them in a select without a goroutine of its own.
type readerCount struct {
	left atomic.Int32
	done chan struct{}
}

func (r *readerCount) finish() {
	if r.left.Add(-1) == 0 {
		close(r.done)
	}
}

// readStream cleans one output stream into the session's buffers.
func (s *session) readStream(id streamID, r io.Reader) {
	var cl termtext.Cleaner
	pool := &s.reg.chunks
	sink := func(p []byte) {
		bp := pool.get()
		text, n, ev := cl.Append((*bp)[:0], p)
		s.ingest(id, text, n, ev)
		*bp = text[:cap(text)] // keep the (possibly grown) buffer at full length
		pool.put(bp)
	}
	if f, ok := r.(*os.File); ok {
		pumpFile(f, pool, sink)
	} else {
		pumpReader(r, pool, sink)
	}
	text, n := cl.Flush(nil)
	s.ingest(id, text, n, termtext.Events{})
}

// ingest records cleaned text and terminal events from one read.
func (s *session) ingest(id streamID, text []byte, n int, ev termtext.Events) {
	var answer bool
	s.mu.Lock()
	s.out.add(id, text, n)
	if s.pty {
		switch {
		case ev.CursorMode > 0:
			s.term.cursorMode = keys.CursorApplication
		case ev.CursorMode < 0:
			s.term.cursorMode = keys.CursorNormal
		case s.term.cursorMode == keys.CursorUnknown && n > 0:
			s.term.cursorMode = keys.CursorNormal
		}
		answer = ev.CursorQueries > 0
	}
	if n > 0 {
		s.feedLineWaitersLocked(text)
		s.broadcastLocked()
	}
	s.mu.Unlock()
	if answer {
		// Answer each cursor-position query so TUIs that wait for it go on.
		s.answerCursorQueries(ev.CursorQueries)
	}
}

// cursorReply answers a cursor-position query: row 1, column 1.
const cursorReply = "\x1b[1;1R"

// answerCursorQueries writes the replies without ever blocking the reader:
// if the terminal's input buffer is full (the child is not reading) or an
// agent write holds the terminal, the replies are dropped rather than
// stalling output capture.
func (s *session) answerCursorQueries(n int) {
	if !s.stdinMu.TryLock() {
		return
	}
	defer s.stdinMu.Unlock()
	f, ok := s.stdin.(*os.File)
	if !ok || s.stdinEOF {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	reply := []byte(strings.Repeat(cursorReply, min(n, 64)))
	_ = rc.Write(func(fd uintptr) bool {
		_, _ = unix.Write(int(fd), reply)
		return true // never wait for room
	})
}

// run is the owner goroutine: it waits for the exit, ends what is left of
// the process group, drains the output, and records the end.
func (s *session) run(readers *readerCount) {
	_ = s.c.awaitExit()
	// Anything the shell left behind in its group ends with it: once the
	// session is over nobody could stop it through the tool any more.
	_ = s.c.signalGroup(syscall.SIGKILL)
	ws, err := s.c.reap()
	s.drain(readers)

	s.stdinMu.Lock()
	for _, r := range s.outputs {
		if c, ok := r.(io.Closer); ok {
			_ = c.Close()
		}
	}
	if c, ok := s.stdin.(io.Closer); ok && !s.pty {
		_ = c.Close()
	}
	s.stdin = nil
	s.stdinMu.Unlock()
	leftover := s.c.release()

	s.mu.Lock()
	s.ended = true
	s.leftover = leftover
	s.exit = s.classifyLocked(ws, err)
	if s.timeoutTimer != nil {
		s.timeoutTimer.Stop()
	}
	if s.killTimer != nil {
		s.killTimer.Stop()
	}
	notify := s.backgrounded && !s.removed
	if s.pollWaiters > 0 {
		// A waiting poll will report this end; it consumes the notification.
		s.exitReported = true
	}
	s.broadcastLocked()
	s.mu.Unlock()
	close(s.done)
	s.reg.sessionEnded(s, notify)
}

// drain waits for the readers to reach EOF; past the drain timeout (a
// process outside the group holds the pipe) it stops them.
func (s *session) drain(readers *readerCount) {
	select {
	case <-readers.done:
		return
	default:
	}
	t := time.NewTimer(s.reg.cfg.drainTimeout)
	defer t.Stop()
	select {
	case <-readers.done:
		return
	case <-t.C:
	}
	for _, r := range s.outputs {
		switch r := r.(type) {
		case *os.File:
			_ = r.SetReadDeadline(time.Now())
		case io.Closer:
			_ = r.Close()
		}
	}
	<-readers.done
}

func (s *session) classifyLocked(ws syscall.WaitStatus, err error) exitInfo {
	e := exitInfo{at: time.Now(), reason: ExitReasonExit}
	switch {
	case err != nil:
		e.reason = ExitReasonSignal
	case ws.Signaled():
		e.signal = signalName(ws.Signal())
		e.reason = ExitReasonSignal
	default:
		code := ws.ExitStatus()
		e.code = &code
	}
	if s.killReason != "" {
		e.reason = s.killReason
	}
	return e
}

// terminate asks the process group to end: SIGTERM now, SIGKILL after the
// grace period. The first reason wins; calling it again is a no-op.
func (s *session) terminate(reason ExitReason) {
	s.mu.Lock()
	if s.ended || s.killReason != "" {
		s.mu.Unlock()
		return
	}
	s.killReason = reason
	s.killTimer = time.AfterFunc(s.reg.cfg.killGrace, func() { _ = s.c.signalGroup(syscall.SIGKILL) })
	s.mu.Unlock()
	_ = s.c.signalGroup(syscall.SIGTERM)
	if s.pty {
		// A shell reading its terminal ignores SIGTERM; a hangup ends it.
		_ = s.c.signalGroup(syscall.SIGHUP)
	}
}

// forceKill skips the grace period.
func (s *session) forceKill(reason ExitReason) {
	s.terminate(reason)
	_ = s.c.signalGroup(syscall.SIGKILL)
}

// writeInput writes p to the child's stdin (or PTY), waiting at most
// bound for the child to take it (0 = no bound). It reports what was
// delivered.
func (s *session) writeInput(p []byte, bound time.Duration) (int, error) {
	s.stdinMu.Lock()
	defer s.stdinMu.Unlock()
	if s.stdin == nil || s.stdinEOF {
		return 0, errStdinClosed
	}
	if f, ok := s.stdin.(*os.File); ok && bound > 0 {
		_ = f.SetWriteDeadline(time.Now().Add(bound))
		defer func() { _ = f.SetWriteDeadline(time.Time{}) }()
	}
	return s.stdin.Write(p)
}

// closeInput ends the child's input: EOT on a PTY, close on a pipe. On a
// PTY in canonical mode an EOT after an unfinished line only hands that
// line to the reader, so then a second EOT follows to signal end of file.
func (s *session) closeInput(unfinishedLine bool) error {
	if s.pty {
		eot := []byte{0x04}
		if unfinishedLine {
			eot = append(eot, 0x04)
		}
		_, err := s.writeInput(eot, time.Second)
		return err
	}
	s.stdinMu.Lock()
	defer s.stdinMu.Unlock()
	if s.stdin == nil || s.stdinEOF {
		return errStdinClosed
	}
	s.stdinEOF = true
	if c, ok := s.stdin.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// snapshot is a consistent copy of a session's state for results.
type snapshot struct {
	status    Status
	ended     bool
	exit      exitInfo
	runtime   time.Duration
	truncated bool
}

func (s *session) snapshotLocked() snapshot {
	sn := snapshot{status: StatusRunning, ended: s.ended, exit: s.exit, truncated: s.out.truncated()}
	end := time.Now()
	if s.ended {
		sn.status = s.exit.status()
		end = s.exit.at
	}
	sn.runtime = end.Sub(s.startedAt)
	return sn
}

func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "SIG" + strconv.Itoa(int(sig))
}
