//go:build linux

package local

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
		if err == nil {
			// Before the file joins the poller: a plain ioctl on a
			// descriptor nobody else holds yet.
			err = unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
		}
		if err != nil {
			_ = unix.Close(fd)
		}
	}
	if err != nil {
		_ = t.Close()
		return nil, nil, err
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), t, nil
}
