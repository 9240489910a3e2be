// Package session is the engine of one spawned command: its output
// buffers, timers, input, end state and exit report. A Session's state is
// read and written only by its own methods, under its own lock; callers get
// copies (Snapshot, Drained, Page). The tool layer in package bgexec turns
// those copies into texts and never touches the state itself, which the
// compiler enforces because the fields are unexported here.
//
// Each session has one owner goroutine (run). It waits for the process to
// exit, drains the output readers, records the end under the lock, decides
// who reports the exit (a waiting call, or an event), and only then closes
// Done. Everyone else waits on Done or on a change signal.
package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/bgexec/bgexec/internal/keys"
	"github.com/bgexec/bgexec/internal/termtext"
	"golang.org/x/sys/unix"
)

// Process is the OS side of a session. The real one lives in package
// bgexec; tests use fakes to drive timer logic under testing/synctest.
type Process interface {
	// Pid is the leader's pid (and process group id).
	Pid() int
	// AwaitExit blocks until the leader exited, leaving it unreaped.
	AwaitExit() error
	// SignalGroup signals the whole process group (and cgroup); a no-op
	// once reaped.
	SignalGroup(sig syscall.Signal) error
	// Reap collects the exit status.
	Reap() (syscall.WaitStatus, error)
	// Release frees what outlives the process (its cgroup). An error means
	// processes of the session may still run.
	Release() error
}

// LateReaper is an optional interface of a Process whose exited leader's
// status can be read before it is reaped. The session then records its
// end first and reaps after, so a call waiting for the end (a foreground
// exec) does not wait for the reaping and the host's bookkeeping that goes
// with it. Recorded is closed before, Done after.
type LateReaper interface {
	// ExitStatus is the exited leader's wait status, read without reaping
	// it; ok is false when the Process must be reaped before its end is
	// recorded (Reap is then called first, as without this interface).
	ExitStatus() (ws syscall.WaitStatus, ok bool)
}

// EndSweeper is an optional interface of a Process whose last SIGKILL,
// at the session's end, has a slow part that need not hold up the end's
// report: finding processes that left the session's cgroup takes a look
// at every process on the host. The session then sends KillAtEnd where
// it would send SignalGroup(SIGKILL), records the end, and calls
// SweepAfterEnd after Recorded and before Done: a call waiting for the
// end (a foreground exec) returns first, and whatever the sweep finds
// dies a moment later.
type EndSweeper interface {
	// KillAtEnd is SignalGroup(SIGKILL) without the slow part.
	KillAtEnd() error
	// SweepAfterEnd does the slow part, and any other clean-up that
	// need not hold up the report. An error means processes of the
	// session may still run; it joins Exit.Leftover, which calls that
	// wait for Done (a kill) report.
	SweepAfterEnd() error
}

// Reason says how a session ended.
type Reason string

// End reasons.
const (
	ReasonExit       Reason = "exit"
	ReasonSignal     Reason = "signal"
	ReasonTimeout    Reason = "timeout"
	ReasonKilled     Reason = "killed"
	ReasonSpawnError Reason = "spawn-error"
	// ReasonOOM: the session's memory limit was hit and the kernel killed
	// a process of it (see [LimitReporter]).
	ReasonOOM Reason = "oom"
	// ReasonLost: the connection to the machine running the process
	// dropped, so its end is unknown. Exit.Note says what is known.
	ReasonLost Reason = "lost"
)

// ErrLost marks an error from Process.Reap saying the process was lost
// (its host's connection dropped); the error's text becomes Exit.Note.
var ErrLost = errors.New("connection to the process lost")

// Status is running, completed or failed.
type Status string

// Statuses.
const (
	Running   Status = "running"
	Completed Status = "completed"
	Failed    Status = "failed"
)

// Exit is the recorded end of a session.
type Exit struct {
	Code   *int   // nil when no exit code exists (signal)
	Signal string // e.g. "SIGTERM"; "" when it exited
	Reason Reason
	At     time.Time
	// Leftover says why the end of every process of the session could not
	// be confirmed; nil when it was.
	Leftover error
	// MemoryLimit is the memory limit in bytes the session hit, for
	// ReasonOOM; 0 otherwise.
	MemoryLimit int64
	// Note explains a lost session in words (Reason lost); "" otherwise.
	Note string
}

// Status of an ended session: an exit with any code but 126 and 127 is
// completed, everything else failed.
func (e *Exit) Status() Status {
	if e.Reason == ReasonExit && (e.Code == nil || (*e.Code != 126 && *e.Code != 127)) {
		return Completed
	}
	return Failed
}

// Options describe a session to start. The session keeps what it needs;
// the caller must not change Outputs or Stdin afterwards.
type Options struct {
	ID, Scope, Command, Name, Cwd string
	PTY                           bool
	TTYName                       string // the PTY slave's path, to read its mode
	StartedAt                     time.Time
	Timeout                       time.Duration // 0: none
	KillGrace                     time.Duration // SIGTERM to SIGKILL
	DrainTimeout                  time.Duration // how long readers may outlive the exit
	MaxChars, PendingChars        int
	// HeadChars, when set, keeps the first HeadChars code points (at most
	// HeadLines lines) of the output apart, out of MaxChars, for
	// head-and-tail texts (see HeadTail and Drained.Cut).
	HeadChars int
	// SplitStreams keeps each stream's retained text apart too (each
	// capped at MaxChars), for Streams.
	SplitStreams bool
	// Background marks the session backgrounded from the start.
	Background bool
	// NotifyOnExit and NotifyEmptySuccess decide whether an unreported end
	// of a backgrounded session becomes an event.
	NotifyOnExit, NotifyEmptySuccess bool
	// KeepLeftovers keeps processes the shell left running (see
	// [Lingerer]); false ends them with the shell.
	KeepLeftovers bool
	// MemoryLimit is the session's memory limit in bytes (0: none), named
	// by the end of a session the limit killed.
	MemoryLimit int64
	// ReadOnlyHint is added once to a result whose output shows the first
	// "Read-only file system" (see WithHint); "" means never.
	ReadOnlyHint string
	// Cols and Rows are the PTY's size, for its terminal emulator.
	Cols, Rows int
	// Title is the caller's short statement of the command's purpose ("" for none).
	Title string
	// Spill, when set, copies the whole output to a file (see [SpillSpec]).
	Spill *SpillSpec

	Proc    Process
	Outputs []io.Reader // stdout, stderr; or the PTY master alone
	Stdin   io.Writer   // nil when not writable; *os.File for real children

	Pool       *ChunkPool
	Goroutines *sync.WaitGroup // counts the session's goroutines
	// Ended is called by the owner goroutine once the end is recorded,
	// outside any lock, before Done is closed. It must not wait for Done.
	Ended func(*Session)
}

// report is who tells the agent about the end.
type report uint8

const (
	reportNone    report = iota // nobody: not ended, or nothing to tell
	reportByCall                // a call reported it (poll, wait, kill)
	reportDue                   // an event will be sent unless a call takes over
	reportSending               // the notifier is being called
	reportSent                  // the event was delivered
)

// Session is one spawned command. All methods are safe for concurrent use.
type Session struct {
	opts     Options       // immutable after Start
	recorded chan struct{} // closed once the end is recorded (Recorded)
	done     chan struct{} // closed once the owner goroutine's work is over (Done)

	// term is the emulated screen of a PTY session; nil for pipes. It has
	// its own lock.
	term *terminal

	// stdinSem serialises writes and the close of stdin: a channel of one
	// slot rather than a mutex, so a write waiting behind another one can
	// give up when its call's context ends.
	stdinSem chan struct{}
	stdin    io.Writer // nil when not writable; guarded by stdinSem
	stdinEOF bool

	mu           sync.Mutex // guards everything below
	out          output
	lastOutput   time.Time // when the last bytes arrived (the start before any)
	readingAt    time.Time // when reading was looked up (see ReadingInput)
	reading      Reading   // the last answer of ReadingInput
	rawBytes     int64     // bytes read from the child, escape sequences included
	cursorMode   keys.CursorMode
	backgrounded bool
	ended        bool
	exit         Exit
	killReason   Reason        // set when termination was asked for
	agentKill    bool          // the agent's own kill or remove: no event
	removed      bool          // remove forgot it
	changed      chan struct{} // closed and replaced on new output or end
	waiters      int           // calls waiting that will report the end
	report       report
	eventText    string        // the delivered event, for a retraction
	sent         chan struct{} // closed when a sending event was delivered
	retractLate  bool          // a call took the report while sending: retract after
	noticeShown  bool          // a tool result carried the exit notice
	emptyPolls   int
	polledOutput bool // a poll has returned output
	timeoutTimer *time.Timer
	killTimer    *time.Timer
	lineWaiters  []*lineWaiter
	leftBehind   chan struct{} // closed when leftovers are kept
	lingering    []Lingering   // what the shell left running at its exit
	listeners    []string      // TCP ports last seen listening (NoteListeners)
	shellCode    *int          // the shell's exit code then

	// Input, for the settle of screen, poll and wait (settle.go).
	inputAt   time.Time // when the agent last sent input (zero: never)
	inputRaw  int64     // rawBytes then
	inputOpen bool      // no screen, poll or wait has read since

	hinted atomic.Bool // ReadOnlyHint was handed out

	spill *spill // the spill file (Options.Spill); nil without one
}

// New returns a session that is not started yet.
func New(o Options) *Session {
	s := &Session{
		opts:         o,
		recorded:     make(chan struct{}),
		done:         make(chan struct{}),
		stdin:        o.Stdin,
		stdinSem:     make(chan struct{}, 1),
		out:          newOutputWith(o.MaxChars, o.PendingChars, o.HeadChars, o.SplitStreams),
		backgrounded: o.Background,
		changed:      make(chan struct{}),
		leftBehind:   make(chan struct{}),
		lastOutput:   o.StartedAt,
		spill:        newSpill(o.Spill, o.ID),
	}
	if !o.PTY {
		s.cursorMode = keys.CursorNormal
	} else {
		s.term = newTerminal(max(o.Cols, 1), max(o.Rows, 1))
	}
	return s
}

// Accessors of the immutable facts.

func (s *Session) ID() string             { return s.opts.ID }
func (s *Session) Scope() string          { return s.opts.Scope }
func (s *Session) Command() string        { return s.opts.Command }
func (s *Session) Name() string           { return s.opts.Name }
func (s *Session) Title() string          { return s.opts.Title }
func (s *Session) Cwd() string            { return s.opts.Cwd }
func (s *Session) PTY() bool              { return s.opts.PTY }
func (s *Session) TTYName() string        { return s.opts.TTYName }
func (s *Session) Pid() int               { return s.opts.Proc.Pid() }
func (s *Session) StartedAt() time.Time   { return s.opts.StartedAt }
func (s *Session) Timeout() time.Duration { return s.opts.Timeout }
func (s *Session) Process() Process       { return s.opts.Proc }

// Outputs are the readers of the session's output streams.
func (s *Session) Outputs() []io.Reader { return s.opts.Outputs }

// Waiting is how many calls (poll, wait) are waiting for a change.
func (s *Session) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiters
}

// Recorded is closed once the end is recorded and Options.Ended has
// returned: the end's report is complete. The exited leader may not be
// reaped yet, nor the session's descriptors closed (see [LateReaper]);
// Done waits for that too.
func (s *Session) Recorded() <-chan struct{} { return s.recorded }

// Done is closed after Recorded, once the leader is reaped and the
// session's descriptors are closed: the owner goroutine's work is over.
func (s *Session) Done() <-chan struct{} { return s.done }

// broadcastLocked wakes everyone waiting for a change. s.mu must be held.
func (s *Session) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Start launches the owner and reader goroutines and arms the timeout.
func (s *Session) Start() {
	readers := &readerCount{done: make(chan struct{})}
	readers.left.Store(int32(len(s.opts.Outputs)))
	if len(s.opts.Outputs) == 0 {
		close(readers.done)
	}
	g := s.opts.Goroutines
	if s.term != nil {
		src := s.term.replySource()
		g.Add(1)
		go func() {
			defer g.Done()
			replies(src, s.answer) // ends when run closes the terminal
		}()
	}
	for i, r := range s.opts.Outputs {
		g.Add(1)
		go func() {
			defer g.Done()
			defer readers.finish()
			s.readStream(streamID(i), r)
		}()
	}
	if s.opts.Timeout > 0 {
		s.mu.Lock()
		s.timeoutTimer = time.AfterFunc(s.opts.Timeout, func() { s.Terminate(ReasonTimeout) })
		s.mu.Unlock()
	}
	g.Add(1)
	go func() {
		defer g.Done()
		s.run(readers)
	}()
}

// readerCount closes done when the last reader returns.
type readerCount struct {
	left atomic.Int32
	done chan struct{}
}

func (r *readerCount) finish() {
	if r.left.Add(-1) == 0 {
		close(r.done)
	}
}

// readStream cleans one output stream into the session's buffers. A PTY's
// line endings become LF here, before anything is counted or kept, so caps,
// counts, tails, log lines and patterns all see the same text; a pipe's
// bytes are kept as the child wrote them.
func (s *Session) readStream(id streamID, r io.Reader) {
	sc := streamCleaner{pty: s.opts.PTY}
	pool := s.opts.Pool
	sink := func(p []byte) {
		if s.term != nil {
			// The raw bytes, so the screen sees every sequence; before the
			// text is recorded, so a call woken by it finds the screen
			// updated too.
			if replies := s.term.write(p); len(replies) > 0 {
				s.answer(replies)
			}
		}
		if ok, newlines := sc.plain(p); ok {
			s.ingest(id, p, len(p), newlines, len(p), termtext.Events{})
			return
		}
		bp := pool.get()
		text, n, ev := sc.clean((*bp)[:0], p)
		s.ingest(id, text, n, bytes.Count(text, nl), len(p), ev)
		*bp = text[:cap(text)] // keep the (possibly grown) buffer at full length
		pool.put(bp)
	}
	if f, ok := r.(*os.File); ok {
		pumpFile(f, pool, sink)
	} else {
		pumpReader(r, pool, sink)
	}
	text, n := sc.flush()
	s.ingest(id, text, n, bytes.Count(text, nl), 0, termtext.Events{})
}

// ingest records cleaned text (n code points, newlines of them LF) and
// terminal events from one read of raw bytes.
func (s *Session) ingest(id streamID, text []byte, n, newlines, raw int, ev termtext.Events) {
	s.mu.Lock()
	if raw > 0 {
		s.rawBytes += int64(raw)
		s.lastOutput = time.Now()
	}
	s.out.addLines(id, text, n, newlines)
	s.spill.queue(text)
	if s.opts.PTY {
		switch {
		case ev.CursorMode > 0:
			s.cursorMode = keys.CursorApplication
		case ev.CursorMode < 0:
			s.cursorMode = keys.CursorNormal
		case s.cursorMode == keys.CursorUnknown && n > 0:
			s.cursorMode = keys.CursorNormal
		}
		// Cursor-position queries (ev.CursorQueries) are answered by the
		// terminal emulator, with its real cursor.
	}
	if n > 0 {
		for _, w := range s.lineWaiters {
			if !w.hit {
				w.feed(text)
			}
		}
	}
	if n > 0 || (raw > 0 && s.term != nil) {
		// On a terminal, bytes that only move the cursor still change the
		// screen.
		s.broadcastLocked()
	}
	s.mu.Unlock()
	s.spill.flush() // outside the lock: a slow disk never holds up a poll
}

// ReplyWriter is an optional interface of a session's stdin whose writes
// may block (a remote terminal's channel): TryWrite hands p over without
// waiting, or drops it when the input is busy, and reports which. The
// terminal emulator's replies to queries go through it.
type ReplyWriter interface {
	TryWrite(p []byte) bool
}

// answer writes the terminal emulator's replies to queries (cursor
// position, device attributes) without ever blocking: the emulator, and so
// the reader feeding it, waits for each reply to be taken. If the
// terminal's input buffer is full (the child is not reading) or an agent
// write holds the terminal, the reply is dropped rather than stalling
// output capture.
func (s *Session) answer(reply []byte) {
	if !s.tryLockInput() {
		return
	}
	defer s.unlockInput()
	if s.stdinEOF {
		return
	}
	if w, ok := s.stdin.(ReplyWriter); ok {
		w.TryWrite(reply)
		return
	}
	f, ok := s.stdin.(*os.File)
	if !ok {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Write(func(fd uintptr) bool {
		_, _ = unix.Write(int(fd), reply) // best effort: a full terminal drops the reply
		return true                       // never wait for room
	})
}

// run is the owner goroutine: it waits for the exit, ends what is left of
// the process group, drains the output, and records the end. A Process
// that can tell the exit status before the reaping (LateReaper) is reaped
// after the end is recorded, and the output descriptors are closed then
// too: neither changes the end's report. So is an EndSweeper's sweep.
func (s *Session) run(readers *readerCount) {
	p := s.opts.Proc
	_ = p.AwaitExit() // an error means the wait failed: reap tells the rest
	s.awaitLeftovers(readers)
	// Whatever is still left ends with the session: once it is over nobody
	// could stop it through the tool any more.
	sweeper, sweep := p.(EndSweeper)
	if sweep {
		_ = sweeper.KillAtEnd() // failures surface through Release
	} else {
		_ = p.SignalGroup(syscall.SIGKILL) // failures surface through Release
	}
	var (
		ws     syscall.WaitStatus
		err    error
		reaped bool
	)
	if lr, ok := p.(LateReaper); ok {
		ws, ok = lr.ExitStatus()
		reaped = !ok
	} else {
		reaped = true
	}
	if reaped {
		ws, err = p.Reap()
	}
	s.drain(readers)
	s.spill.finish()
	if s.term != nil {
		s.term.close() // nothing feeds it any more
	}

	s.lockInputNow()
	if c, ok := s.stdin.(io.Closer); ok && !s.opts.PTY {
		_ = c.Close() // the child is gone: nobody reads it
	}
	s.stdin = nil
	s.unlockInput()
	oom := limitHit(p) // before Release removes the counters
	leftover := p.Release()

	s.mu.Lock()
	s.ended = true
	s.exit = s.classifyLocked(ws, err)
	s.exit.Leftover = leftover
	if oom {
		s.markOOMLocked()
	}
	if s.timeoutTimer != nil {
		s.timeoutTimer.Stop()
	}
	if s.killTimer != nil {
		s.killTimer.Stop()
	}
	// Who reports the end is decided here, once, under the lock.
	switch {
	case s.waiters > 0:
		s.report = reportByCall // a waiting call returns the exit line
	case s.backgrounded && !s.agentKill && s.notifiableLocked():
		s.report = reportDue
	default:
		s.report = reportNone
	}
	s.broadcastLocked()
	s.mu.Unlock()
	// The registry hears of the end before Recorded closes, so whoever
	// waits on it finds its bookkeeping (expiry, event queue) done too.
	if s.opts.Ended != nil {
		s.opts.Ended(s)
	}
	close(s.recorded)
	// Let the woken caller (it is this P's next goroutine) run first: the
	// rest is clean-up nobody waits for but Close.
	runtime.Gosched()

	if !reaped {
		_, _ = p.Reap() // the status is known: this only frees the pid
	}
	if sweep {
		if err := sweeper.SweepAfterEnd(); err != nil {
			s.mu.Lock()
			s.exit.Leftover = errors.Join(s.exit.Leftover, err)
			s.mu.Unlock()
		}
	}
	for _, r := range s.opts.Outputs {
		if c, ok := r.(io.Closer); ok {
			_ = c.Close() // read side, read to its end: nothing to flush
		}
	}
	close(s.done)
}

// notifiableLocked applies the skip rules of exit events.
func (s *Session) notifiableLocked() bool {
	if !s.opts.NotifyOnExit {
		return false
	}
	quiet := s.out.totalChars == 0
	ok := s.exit.Status() == Completed && s.exit.Code != nil && *s.exit.Code == 0
	return !(ok && quiet) || s.opts.NotifyEmptySuccess
}

// drain waits for the readers to reach EOF; past the drain timeout (a
// process outside the group holds the pipe) it stops them.
func (s *Session) drain(readers *readerCount) {
	select {
	case <-readers.done:
		return
	default:
	}
	t := time.NewTimer(s.opts.DrainTimeout)
	defer t.Stop()
	select {
	case <-readers.done:
		return
	case <-t.C:
	}
	for _, r := range s.opts.Outputs {
		switch r := r.(type) {
		case *os.File:
			_ = r.SetReadDeadline(time.Now()) // wakes the blocked read
		case io.Closer:
			_ = r.Close() // fakes: ends the read
		}
	}
	<-readers.done
}

func (s *Session) classifyLocked(ws syscall.WaitStatus, err error) Exit {
	e := Exit{At: time.Now(), Reason: ReasonExit}
	switch {
	case errors.Is(err, ErrLost):
		// Not even a kill asked for meanwhile is known to have worked.
		e.Reason, e.Note = ReasonLost, err.Error()
		return e
	case err != nil:
		e.Reason = ReasonSignal
	case ws.Signaled():
		e.Signal = SignalName(ws.Signal())
		e.Reason = ReasonSignal
	default:
		code := ws.ExitStatus()
		e.Code = &code
	}
	if s.killReason != "" {
		e.Reason = s.killReason
	}
	return e
}

// Terminate asks the process group to end: SIGTERM now, SIGKILL after the
// grace period. The first reason wins; calling it again is a no-op.
func (s *Session) Terminate(reason Reason) {
	s.mu.Lock()
	if s.ended || s.killReason != "" {
		s.mu.Unlock()
		return
	}
	s.killReason = reason
	s.killTimer = time.AfterFunc(s.opts.KillGrace, func() { _ = s.opts.Proc.SignalGroup(syscall.SIGKILL) })
	s.mu.Unlock()
	_ = s.opts.Proc.SignalGroup(syscall.SIGTERM) // a failure shows at the end
	if s.opts.PTY {
		// A shell reading its terminal ignores SIGTERM; a hangup ends it.
		_ = s.opts.Proc.SignalGroup(syscall.SIGHUP)
	}
}

// ForceKill skips the grace period.
func (s *Session) ForceKill(reason Reason) {
	s.Terminate(reason)
	_ = s.opts.Proc.SignalGroup(syscall.SIGKILL) // a failure shows at the end
}

// Kill is the agent's own kill: the end is reported by the kill's result,
// never by an event. It reports false when the session had ended already.
func (s *Session) Kill() bool {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return false
	}
	s.agentKill = true
	s.mu.Unlock()
	s.Terminate(ReasonKilled)
	return true
}

// Remove forgets a running session at once and kills it without an exit
// event; it reports whether the session was still running.
func (s *Session) Remove() bool {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return false
	}
	s.removed, s.agentKill = true, true
	s.mu.Unlock()
	s.Terminate(ReasonKilled)
	return true
}

// Background marks the session backgrounded unless it has ended; it
// reports whether it did.
func (s *Session) Background() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.backgrounded = true
	return true
}

// Snapshot is a consistent copy of a session's state.
type Snapshot struct {
	Status       Status
	Ended        bool
	Exit         Exit
	Runtime      time.Duration
	Truncated    bool
	TotalChars   int64 // code points ever printed
	Backgrounded bool
	Removed      bool
	CursorMode   keys.CursorMode
	Tail         string // the last tailChars code points, when asked for
}

func (s *Session) snapshotLocked() Snapshot {
	sn := Snapshot{
		Status: Running, Ended: s.ended, Exit: s.exit, Truncated: s.out.truncated(),
		TotalChars: s.out.totalChars, Backgrounded: s.backgrounded, Removed: s.removed,
		CursorMode: s.cursorMode,
	}
	end := time.Now()
	if s.ended {
		sn.Status = s.exit.Status()
		end = s.exit.At
	}
	sn.Runtime = end.Sub(s.opts.StartedAt)
	return sn
}

// Snapshot returns the state, with the last tail code points of output.
func (s *Session) Snapshot(tail int) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.snapshotLocked()
	if tail > 0 {
		sn.Tail = s.out.agg.tail(tail)
	}
	return sn
}

// Aggregated returns the retained output and the snapshot. Readers that find
// nothing new since the last call share one string.
func (s *Session) Aggregated() (string, Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.agg.String(), s.snapshotLocked()
}

// Page returns log lines; see [output.page].
func (s *Session) Page(offset, limit *int64, def int64) (Page, Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.page(offset, limit, def), s.snapshotLocked()
}

// Drained is what a poll or wait takes from a session.
type Drained struct {
	Text       string // pending output, in arrival order
	Loss       Loss
	Snap       Snapshot
	Aggregated string
	EmptyPolls int // consecutive polls of a running session that found nothing
	// AfterOutput reports that a poll of this session has returned output
	// (the empty polls counted follow one).
	AfterOutput bool
	// Retract is the text of an exit event already delivered for the end
	// this call reports; the caller retracts it before it returns.
	Retract string
	// Quiet is how long no output has arrived.
	Quiet time.Duration
	// PartialLine reports that the output ends in an unfinished line (a
	// prompt, perhaps).
	PartialLine bool

	at       int64 // the position of Text's first code point
	runes    int   // Text's length in code points
	reported bool  // this call took over the report of the end
	// Cut, with a head buffer and a lossy drain, is the drained window
	// cut to its head and tail (see HeadTail); nil otherwise.
	Cut *HeadTail
}

// waitChange blocks until cond holds (checked under the lock), the session
// ends, d passes or ctx ends. While it waits it counts as a waiter, so an
// end it will report is never also sent as an event.
func (s *Session) waitChange(ctx context.Context, d time.Duration, cond func() bool) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	s.waiters++
	defer func() { s.waiters-- }()
	for !cond() && !s.ended {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			s.mu.Lock()
			return
		case <-ctx.Done():
			s.mu.Lock()
			return
		}
		s.mu.Lock()
	}
}

// Poll waits up to d for new output or the end, then drains the pending
// output. A poll that returns the end takes over its report.
func (s *Session) Poll(ctx context.Context, d time.Duration) Drained {
	return s.PollIdle(ctx, d, 0)
}

// PollIdle is Poll that, once new output has arrived, also waits until no
// more has arrived for idle (within the same d), so a program's answer is
// read whole rather than at its first bytes.
func (s *Session) PollIdle(ctx context.Context, d, idle time.Duration) Drained {
	s.mu.Lock()
	until := time.Now().Add(d)
	s.waitChange(ctx, d, func() bool { return !s.out.pending.empty() })
	if idle > 0 && !s.ended && !s.out.pending.empty() {
		s.settleLocked(ctx, until.Add(-d), until, idle, false, true)
	}
	dr := s.drainLocked()
	if !dr.Snap.Ended {
		if dr.Text != "" {
			s.emptyPolls = 0
			s.polledOutput = true
		} else {
			s.emptyPolls++
		}
		dr.EmptyPolls, dr.AfterOutput = s.emptyPolls, s.polledOutput
	}
	s.mu.Unlock()
	if dr.Snap.Ended {
		dr.Retract = s.takeReport(ctx)
		dr.reported = true
	}
	return dr
}

// Undrain undoes a poll whose result never reached the agent: its text
// goes back in front of the pending output (within the pending cap; what
// does not fit is dropped oldest first and reported as lost), and an end
// that poll reported is due again, as if no call had reported it. It
// reports true when an exit event (or notice) is now due, which the caller
// hands to the notifier. Calling it twice for one Drained puts the text
// back twice: the caller undoes each result once.
func (s *Session) Undrain(dr *Drained) (eventDue bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.pending.unshift([]byte(dr.Text), dr.runes, dr.at, dr.Loss != LostNothing)
	if dr.reported && s.report == reportByCall && s.waiters == 0 {
		if s.backgrounded && !s.agentKill && s.notifiableLocked() {
			s.report, s.noticeShown = reportDue, false
			eventDue = true
		}
	}
	s.broadcastLocked()
	return eventDue
}

// UnclaimNotice undoes ClaimNotice for a result that never reached the
// agent: the notice is due for the next result again. It reports whether
// it was shown.
func (s *Session) UnclaimNotice() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.noticeShown
	switch s.report {
	case reportDue, reportSending, reportSent:
		s.noticeShown = false
	default:
		return false
	}
	return was
}

func (s *Session) drainLocked() Drained {
	text, loss := s.out.drain()
	n := utf8.RuneCountInString(text)
	return Drained{
		Text: text, Loss: loss, Snap: s.snapshotLocked(), Aggregated: s.out.agg.String(),
		Quiet: s.quietLocked(), PartialLine: s.partialLineLocked(), Cut: s.out.cutLocked(loss),
		at: max(s.out.totalChars-int64(n), 0), runes: n,
	}
}

// takeReport makes the calling poll, wait or kill the reporter of the end.
// It returns the text of an event that was already delivered, which the
// caller must retract; when the event is being delivered right now it
// waits (bounded by ctx) for the delivery to finish first.
func (s *Session) takeReport(ctx context.Context) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.report == reportSending {
		ch := s.sent
		s.mu.Unlock()
		select {
		case <-ch:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			if s.report == reportSending {
				s.retractLate = true // the sender retracts once it is done
				s.report = reportByCall
				return ""
			}
		}
	}
	text := ""
	if s.report == reportSent {
		text = s.eventText
	}
	s.report = reportByCall
	return text
}

// BeginEvent claims the exit event for sending. It reports false when no
// event is due (a call reported the end, or nothing is to be told).
func (s *Session) BeginEvent() (Snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.report != reportDue {
		return Snapshot{}, false
	}
	s.report = reportSending
	s.sent = make(chan struct{})
	sn := s.snapshotLocked()
	sn.Tail = s.out.agg.tail(eventTail)
	return sn, true
}

// eventTail is how much output an event's snippet is made from.
const eventTail = 400

// EventSent records that the event with text was delivered. It reports
// true when a call took over the report meanwhile, so the caller must
// retract the event now.
func (s *Session) EventSent(text string) (retract bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.report == reportSending {
		s.report = reportSent
	}
	s.eventText = text
	retract = s.retractLate
	s.retractLate = false
	close(s.sent)
	return retract
}

// EventDue reports whether the end is to be told by an event (or a
// notice) rather than by a call; it is decided when the session ends.
func (s *Session) EventDue() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.report {
	case reportDue, reportSending, reportSent:
		return true
	}
	return false
}

// ClaimNotice claims the exit notice for one tool result, with the
// snapshot to write it from (Tail holds the output for its snippet). It
// reports false when a call (poll, wait, kill) reported the end, when
// there is nothing to tell, or when a result carried the notice already.
// The event to the notifier is a separate channel and is not affected.
func (s *Session) ClaimNotice() (Snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.report {
	case reportDue, reportSending, reportSent:
	default:
		return Snapshot{}, false
	}
	if s.noticeShown {
		return Snapshot{}, false
	}
	s.noticeShown = true
	sn := s.snapshotLocked()
	sn.Tail = s.out.agg.tail(eventTail)
	return sn, true
}

// Input.

// ErrStdinClosed reports input to a session whose stdin is closed or absent.
var ErrStdinClosed = errStdinClosed{}

type errStdinClosed struct{}

func (errStdinClosed) Error() string { return "stdin is not writable" }

// ErrInputBusy reports input that was not written because another write
// to the same session was still in progress when the caller's context
// ended. Nothing of it was written.
var ErrInputBusy = errors.New("another write to the session is in progress")

// lockInput takes the stdin slot, giving up with ErrInputBusy when ctx
// ends first.
func (s *Session) lockInput(ctx context.Context) error {
	select {
	case s.stdinSem <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.stdinSem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ErrInputBusy
	}
}

// lockInputNow takes the stdin slot, waiting as long as it takes: the
// owner's teardown, which every write's bound keeps short.
func (s *Session) lockInputNow() { s.stdinSem <- struct{}{} }

func (s *Session) tryLockInput() bool {
	select {
	case s.stdinSem <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *Session) unlockInput() { <-s.stdinSem }

// Writable reports whether the session takes input now. It does not wait
// for a write in progress: the answer is the state as of the last write.
func (s *Session) Writable() bool {
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended {
		return false
	}
	if !s.tryLockInput() {
		return true // a write holds it: the input was open when it began
	}
	defer s.unlockInput()
	return s.stdin != nil && !s.stdinEOF
}

// Write writes p to the child's stdin (or PTY), waiting at most bound for
// the child to take it (0 = no bound), and never past ctx's deadline. It
// reports what was delivered. When another write holds the input until
// ctx ends, it writes nothing and returns ErrInputBusy.
func (s *Session) Write(ctx context.Context, p []byte, bound time.Duration) (int, error) {
	if err := s.lockInput(ctx); err != nil {
		return 0, err
	}
	defer s.unlockInput()
	s.noteInput()
	if s.stdin == nil || s.stdinEOF {
		return 0, ErrStdinClosed
	}
	if dl, ok := ctx.Deadline(); ok && (bound <= 0 || time.Until(dl) < bound) {
		bound = max(time.Until(dl), time.Millisecond)
	}
	if f, ok := s.stdin.(interface{ SetWriteDeadline(time.Time) error }); ok && bound > 0 {
		_ = f.SetWriteDeadline(time.Now().Add(bound)) // pipes and PTYs support deadlines
		defer func() { _ = f.SetWriteDeadline(time.Time{}) }()
	}
	return s.stdin.Write(p)
}

// CloseInput ends the child's input: EOT on a PTY, close on a pipe. On a
// PTY in canonical mode an EOT after an unfinished line only hands that
// line to the reader, so then a second EOT follows to signal end of file.
// Like Write it gives up with ErrInputBusy when another write holds the
// input until ctx ends.
func (s *Session) CloseInput(ctx context.Context, unfinishedLine bool) error {
	if s.opts.PTY {
		eot := []byte{0x04}
		if unfinishedLine {
			eot = append(eot, 0x04)
		}
		_, err := s.Write(ctx, eot, time.Second)
		return err
	}
	if err := s.lockInput(ctx); err != nil {
		return err
	}
	defer s.unlockInput()
	if s.stdin == nil || s.stdinEOF {
		return ErrStdinClosed
	}
	s.stdinEOF = true
	if c, ok := s.stdin.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// WithTerminal calls f with the PTY master while the session holds it,
// so the owner cannot close it meanwhile. It reports false (and does not
// call f) for pipe sessions and after the end.
func (s *Session) WithTerminal(f func(master *os.File) error) (bool, error) {
	if !s.opts.PTY {
		return false, nil
	}
	s.lockInputNow()
	defer s.unlockInput()
	master, ok := s.stdin.(*os.File)
	if !ok {
		return false, nil
	}
	return true, f(master)
}

// SignalName is the name of sig ("SIGTERM"), or SIG<number>.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "SIG" + strconv.Itoa(int(sig))
}
