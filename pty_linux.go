package bgexec

import (
	"os"

	"golang.org/x/sys/unix"
)

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
