package bgexec

import (
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
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
