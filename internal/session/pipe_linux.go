package session

import "golang.org/x/sys/unix"

// growPipe enlarges a busy pipe to BusyPipe. Best effort: it fails
// harmlessly on a PTY and over the user's pipe quota.
func growPipe(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, BusyPipe) }
