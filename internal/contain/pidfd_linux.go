//go:build linux

package contain

import (
	"os"

	"golang.org/x/sys/unix"
)

// AwaitPidfd blocks until the process behind a non-blocking pidfd has
// exited, parked in the runtime poller rather than holding a thread. It
// does not reap.
func AwaitPidfd(pidfd *os.File) error {
	rc, err := pidfd.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		// A pidfd becomes readable when the process exits. Even a
		// zero-timeout poll fails with EINTR when a signal arrives (SIGCHLD
		// from any other child, SIGURG preemption): that is no exit, and
		// taking it for one would SIGKILL a live process group.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, 0)
			if err == unix.EINTR {
				continue
			}
			perr = err
			return err != nil || n > 0
		}
	})
	if err != nil {
		return err
	}
	return perr
}

// CloseOnExecAbove2 keeps every descriptor the host inherited without
// close-on-exec from the next child: it marks every descriptor above
// stderr close-on-exec. Go creates its own descriptors close-on-exec
// already, and a child's 0-2 are set up by dup2, which clears the flag.
func CloseOnExecAbove2() {
	// Best effort: without close_range (Linux 5.11) the inherited ones leak.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
}
