package session

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Lingerer is an optional interface of a Process whose shell can exit
// while processes it started still run (`server &`, `nohup x &`, a
// daemon). Such processes are kept: the session stays running until the
// last of them ends, instead of being killed with the shell.
type Lingerer interface {
	// Lingering lists the session's live processes other than the exited
	// leader: its cgroup's members, or its process group's. outputHeld
	// says whether something still holds the session's output open; a
	// Process that cannot look cheaply may skip the look when it does not.
	Lingering(outputHeld bool) []Lingering
	// AwaitLingering blocks until none of them is left. The leader is not
	// reaped meanwhile, so its process group id stays reserved and a kill
	// of the group still reaches them.
	AwaitLingering()
	// PeekStatus is the exited leader's wait status, without reaping it.
	PeekStatus() (syscall.WaitStatus, error)
}

// Lingering is a process a session's shell left running.
type Lingering struct {
	Pid int
	// Command reads its command line (shortened). It is read when a text
	// is built, not when the process was found: a job the shell forked
	// has usually exec'd its program by then.
	Command func() string
}

// LeftBehind is closed when the shell has exited but processes it started
// are kept running in the session.
func (s *Session) LeftBehind() <-chan struct{} { return s.leftBehind }

// Lingered returns the processes that were still running when the shell
// exited, and the shell's exit code (nil when a signal ended it). It is
// empty when the shell left nothing behind or has not exited yet.
func (s *Session) Lingered() ([]Lingering, *int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lingering, s.shellCode
}

// awaitLeftovers handles the processes the shell left behind, when nobody
// asked the session to end: it records them and, when the session keeps
// them, waits until they are gone.
func (s *Session) awaitLeftovers(readers *readerCount) {
	l, ok := s.opts.Proc.(Lingerer)
	if !ok {
		return
	}
	s.mu.Lock()
	asked := s.killReason != ""
	s.mu.Unlock()
	if asked {
		return // a kill or timeout ends them all
	}
	rest := l.Lingering(s.outputHeld(readers))
	if len(rest) == 0 {
		return
	}
	var code *int
	if ws, err := l.PeekStatus(); err == nil && ws.Exited() {
		c := ws.ExitStatus()
		code = &c
	}
	s.mu.Lock()
	s.lingering, s.shellCode = rest, code
	keep := s.opts.KeepLeftovers && s.killReason == ""
	if keep {
		close(s.leftBehind)
		s.broadcastLocked()
	}
	s.mu.Unlock()
	if keep {
		l.AwaitLingering()
	}
}

// outputHeld reports, without waiting, whether some process still holds a
// write end of the session's output: not when every reader has reached
// its stream's end already, and a read end whose writers are all gone
// polls as hung up, whatever data is still in it.
func (s *Session) outputHeld(readers *readerCount) bool {
	select {
	case <-readers.done:
		return false
	default:
	}
	for _, r := range s.opts.Outputs {
		f, ok := r.(*os.File)
		if !ok {
			return true // a fake: assume so
		}
		rc, err := f.SyscallConn()
		if err != nil {
			return true
		}
		held := true
		_ = rc.Control(func(fd uintptr) {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, err := unix.Poll(fds, 0); err == nil && n > 0 && fds[0].Revents&unix.POLLHUP != 0 {
				held = false
			}
		})
		if held {
			return true
		}
	}
	return false
}
