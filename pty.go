//go:build linux

package bgexec

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/bgexec/bgexec/internal/session"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Default PTY geometry and terminal type (SPEC §3.1).
const (
	DefaultPTYCols = 120
	DefaultPTYRows = 30
	DefaultTERM    = "xterm-256color"
)

// openPTY opens a pseudo-terminal pair sized cols×rows. The master comes back
// in non-blocking mode and registered with the runtime poller: creack/pty's
// Open calls Fd(), which switches a file to blocking mode, and a blocking
// master read would hold an OS thread per idle session and could not be
// interrupted by Close.
func openPTY(cols, rows uint16) (master, tty *os.File, err error) {
	m, t, err := pty.Open()
	if err != nil {
		return nil, nil, err
	}
	// F_DUPFD_CLOEXEC, not dup and then FD_CLOEXEC: a child forked in
	// between by a concurrent exec would inherit this session's master.
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	_ = m.Close()
	if err == nil {
		err = unix.SetNonblock(fd, true)
		if err != nil {
			_ = unix.Close(fd)
		}
	}
	if err != nil {
		_ = t.Close()
		return nil, nil, err
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := setWinsize(master, cols, rows); err != nil {
		_ = master.Close()
		_ = t.Close()
		return nil, nil, err
	}
	return master, t, nil
}

// setWinsize sets the terminal size through the raw connection, keeping the
// master non-blocking (pty.Setsize would call Fd()). The kernel sends
// SIGWINCH to the terminal's foreground process group.
func setWinsize(master *os.File, cols, rows uint16) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	err = rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
	})
	if err != nil {
		return err
	}
	return ierr
}

// Terminal size bounds for resize.
const (
	MinPTYSize = 1
	MaxPTYSize = 1000
)

func (sc *Scope) resize(_ context.Context, s *session.Session, req *ProcessRequest) (*Result, error) {
	if req.Cols < MinPTYSize || req.Cols > MaxPTYSize || req.Rows < MinPTYSize || req.Rows > MaxPTYSize {
		return failure(fmt.Sprintf("Invalid size %dx%d: pass cols and rows from 1 to 1000.", req.Cols, req.Rows)), nil
	}
	if !s.PTY() {
		return failure("Session " + s.ID() + " has no terminal; resize needs a session started with pty:true."), nil
	}
	if r := inputCheck(s); r != nil {
		return r, nil
	}
	found, err := s.WithTerminal(func(master *os.File) error {
		return setWinsize(master, uint16(req.Cols), uint16(req.Rows))
	})
	if !found {
		// It ended after inputCheck: the owner released the terminal.
		return failure("No active session found for " + s.ID()), nil
	}
	if err != nil {
		return failure(fmt.Sprintf("Resizing session %s failed: %v", s.ID(), err)), nil
	}
	return textResult(fmt.Sprintf("Resized session %s to %dx%d.", s.ID(), req.Cols, req.Rows), Details{Status: StatusRunning, SessionID: s.ID()}), nil
}

// maxCanonLine is how many bytes a Linux terminal in canonical mode keeps
// per input line (N_TTY_BUF_SIZE - 1); the rest of a longer line is dropped.
const maxCanonLine = 4095

// canonicalMode reports whether the terminal's line discipline is in
// canonical (line-editing) mode. It reads the slave's termios by path, so
// the master stays the only descriptor the session holds.
func canonicalMode(ttyName string) bool {
	if ttyName == "" {
		return false
	}
	fd, err := unix.Open(ttyName, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil && t.Lflag&unix.ICANON != 0
}

// canonicalKept is how many bytes of data a canonical-mode terminal keeps:
// each line is cut at maxCanonLine bytes, its newline kept.
func canonicalKept(data []byte) int {
	kept := 0
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return kept + min(len(data), maxCanonLine)
		}
		kept += min(i, maxCanonLine) + 1
		data = data[i+1:]
	}
	return kept
}
