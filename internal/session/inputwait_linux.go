//go:build linux

package session

import (
	"encoding/binary"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lookReading tells whether the session's foreground process is blocked
// reading its input (see [Session.ReadingInput]): for a PTY, a process of the terminal's foreground
// process group (TIOCGPGRP on the master); for a pipe, a process of the
// session's tree. It is blocked reading when /proc/<pid>/syscall shows a
// read-like call, a poll, select or epoll wait on a descriptor that is the
// session's stdin pipe or terminal (compared by device and inode, so a
// sandbox's own /dev paths do not matter).
//
// Reading /proc/<pid>/syscall needs ptrace access to the process: root
// has it; an unprivileged host has it for its own children unless they
// changed credentials or Yama forbids it. Without it the answer is
// ReadingUnknown, and callers then claim nothing.
//
// A write being delivered right now makes it answer ReadingNo, not to be
// kept (busy is true).
func (s *Session) lookReading() (ans Reading, busy bool) {
	if !s.tryLockInput() {
		return ReadingNo, true
	}
	var target unix.Stat_t
	fg, ok := 0, false
	switch {
	case s.stdin == nil || s.stdinEOF:
	case s.opts.PTY:
		master, isFile := s.stdin.(*os.File)
		if isFile && s.opts.TTYName != "" {
			pg, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPGRP)
			ok = err == nil && pg > 0 && unix.Stat(s.opts.TTYName, &target) == nil
			fg = pg
		}
	default:
		if f, isFile := s.stdin.(*os.File); isFile {
			ok = unix.Fstat(int(f.Fd()), &target) == nil
		}
	}
	s.unlockInput()
	if !ok {
		return ReadingUnknown, false
	}
	cands := candidates(s.opts.Proc, s.Pid(), fg)
	answer := ReadingNo
	for _, pid := range cands {
		switch blockedOn(pid, &target) {
		case ReadingYes:
			return ReadingYes, false
		case ReadingUnknown:
			answer = ReadingUnknown
		}
	}
	if len(cands) == 0 {
		return ReadingUnknown, false
	}
	return answer, false
}

// candidates lists the processes whose reads count: the session's
// processes (see [TreeLister]; the leader alone for a Process that cannot
// list them), kept to those of process group fg when fg > 0 (a terminal's
// foreground). It never scans /proc, so it costs the same on a host with
// thousands of processes.
func candidates(proc Process, leader, fg int) []int {
	pids := []int{leader}
	if tl, ok := proc.(TreeLister); ok {
		pids = tl.TreePids()
	}
	if fg <= 0 {
		return pids
	}
	out := pids[:0:0]
	for _, pid := range pids {
		if pgrpOf(pid) == fg {
			out = append(out, pid)
		}
	}
	return out
}

// pgrpOf reads the process group of pid from /proc/<pid>/stat, or -1.
func pgrpOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	st := string(b)
	end := strings.LastIndexByte(st, ')')
	if end < 0 || end+2 >= len(st) {
		return -1
	}
	f := strings.Fields(st[end+2:]) // state ppid pgrp …
	if len(f) < 3 {
		return -1
	}
	pg, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return pg
}

// blockedOn reads what pid is blocked in and whether it waits on target.
func blockedOn(pid int, target *unix.Stat_t) Reading {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/syscall")
	if err != nil {
		if os.IsNotExist(err) {
			return ReadingNo // gone meanwhile
		}
		return ReadingUnknown
	}
	f := strings.Fields(string(b))
	if len(f) < 7 || f[0] == "running" || f[0] == "-1" {
		return ReadingNo
	}
	nr, err1 := strconv.ParseInt(f[0], 10, 64)
	var a [6]uint64
	for i := range a {
		a[i], err = strconv.ParseUint(strings.TrimPrefix(f[i+1], "0x"), 16, 64)
		if err != nil || err1 != nil {
			return ReadingUnknown
		}
	}
	is := func(fd uint64) bool { return fdIs(dir, fd, target) }
	switch kindOf(nr) {
	case callRead:
		return yesIf(is(a[0]))
	case callPoll:
		return yesIf(pollsOn(dir, a[0], a[1], is))
	case callSelect:
		return yesIf(selectsOn(dir, a[0], a[1], is))
	case callEpoll:
		return yesIf(epollOn(dir, a[0], is))
	}
	return ReadingNo
}

func yesIf(b bool) Reading {
	if b {
		return ReadingYes
	}
	return ReadingNo
}

// fdIs reports whether descriptor fd of the process is the target file.
func fdIs(dir string, fd uint64, target *unix.Stat_t) bool {
	if fd > 1<<20 {
		return false
	}
	var st unix.Stat_t
	if unix.Stat(dir+"/fd/"+strconv.FormatUint(fd, 10), &st) != nil {
		return false
	}
	return st.Dev == target.Dev && st.Ino == target.Ino
}

// readMem reads n bytes of the process's memory at addr.
func readMem(dir string, addr uint64, n int) []byte {
	if n <= 0 || n > 1<<16 {
		return nil
	}
	f, err := os.Open(dir + "/mem")
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, int64(addr)); err != nil {
		return nil
	}
	return buf
}

// pollsOn: poll/ppoll(fds, nfds): a struct pollfd (int fd, short events,
// short revents) asking for input on the target.
func pollsOn(dir string, addr, nfds uint64, is func(uint64) bool) bool {
	buf := readMem(dir, addr, int(min(nfds, 4096))*8)
	for i := 0; i+8 <= len(buf); i += 8 {
		fd := int32(binary.NativeEndian.Uint32(buf[i:]))
		ev := binary.NativeEndian.Uint16(buf[i+4:])
		if fd >= 0 && ev&(unix.POLLIN|unix.POLLPRI) != 0 && is(uint64(fd)) {
			return true
		}
	}
	return false
}

// selectsOn: select/pselect6(nfds, readfds, …): a bit set in readfds for
// the target.
func selectsOn(dir string, nfds, readfds uint64, is func(uint64) bool) bool {
	if readfds == 0 || nfds == 0 {
		return false
	}
	nfds = min(nfds, 1024)
	buf := readMem(dir, readfds, int((nfds+63)/64*8))
	for fd := uint64(0); fd < nfds && fd/8 < uint64(len(buf)); fd++ {
		// A fd_set is an array of longs; on a little- or big-endian
		// machine bit fd%64 of long fd/64.
		word := binary.NativeEndian.Uint64(buf[fd/64*8:])
		if word&(1<<(fd%64)) != 0 && is(fd) {
			return true
		}
	}
	return false
}

// epollOn: epoll_wait(epfd, …): the epoll instance's fdinfo lists its
// targets ("tfd: N events: MASK …").
func epollOn(dir string, epfd uint64, is func(uint64) bool) bool {
	b, err := os.ReadFile(dir + "/fdinfo/" + strconv.FormatUint(epfd, 10))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != "tfd:" || f[2] != "events:" {
			continue
		}
		fd, err1 := strconv.ParseUint(f[1], 10, 64)
		ev, err2 := strconv.ParseUint(f[3], 16, 32)
		if err1 == nil && err2 == nil && ev&unix.EPOLLIN != 0 && is(fd) {
			return true
		}
	}
	return false
}

type callKind uint8

const (
	callOther callKind = iota
	callRead
	callPoll
	callSelect
	callEpoll
)

// kindOf sorts the system calls a reader blocks in; legacyKind adds the
// ones only some architectures have.
func kindOf(nr int64) callKind {
	switch nr {
	case unix.SYS_READ, unix.SYS_READV, unix.SYS_PREAD64, unix.SYS_PREADV, unix.SYS_PREADV2:
		return callRead
	case unix.SYS_PPOLL:
		return callPoll
	case unix.SYS_PSELECT6:
		return callSelect
	case unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2:
		return callEpoll
	}
	return legacyKind(nr)
}
