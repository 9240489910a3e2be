//go:build linux && amd64

package session

import "golang.org/x/sys/unix"

// legacyKind: the older calls amd64 still has.
func legacyKind(nr int64) callKind {
	switch nr {
	case unix.SYS_POLL:
		return callPoll
	case unix.SYS_SELECT:
		return callSelect
	case unix.SYS_EPOLL_WAIT:
		return callEpoll
	}
	return callOther
}
