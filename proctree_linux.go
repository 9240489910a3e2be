//go:build linux

package bgexec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procRef names one process across time: a pid plus its start time, so a
// reused pid is not mistaken for the original.
type procRef struct {
	pid   int
	start string
	comm  string
}

type procStat struct {
	ppid     int
	pgrp     int
	start    string
	comm     string
	state    byte
	exitCode int // the wait status of a zombie (waitpid's form)
}

// readStat parses /proc/<pid>/stat. An error for which procGone holds
// means the process is gone; any other means it could not tell.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 >= len(s) {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[end+2:])
	// After the comm: state(0) ppid(1) pgrp(2) … starttime(19) …
	// exit_code(49, Linux 3.5+).
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	st := procStat{start: f[19], comm: s[open+1 : end], state: f[0][0]}
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgrp, _ = strconv.Atoi(f[2])
	if len(f) > 49 {
		st.exitCode, _ = strconv.Atoi(f[49])
	}
	return st, nil
}

// procGone reports whether a readStat error means the process is gone:
// its /proc entry vanished (ENOENT), or it died while being read (ESRCH).
func procGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// descendants lists the live descendants of root (root excluded), walking
// the parent links of every process in /proc. An error means the list may
// be incomplete.
func descendants(root int) ([]procRef, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	kids := make(map[int][]int)
	stats := make(map[int]procStat)
	var errs []error
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		switch {
		case err == nil:
			stats[pid] = st
			kids[st.ppid] = append(kids[st.ppid], pid)
		case !procGone(err):
			// It may be a descendant; say so once.
			if len(errs) == 0 {
				errs = append(errs, err)
			}
		}
	}
	var out []procRef
	queue := append([]int(nil), kids[root]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		st := stats[pid]
		if st.state != 'Z' {
			out = append(out, procRef{pid: pid, start: st.start, comm: st.comm})
		}
		queue = append(queue, kids[pid]...)
	}
	return out, errors.Join(errs...)
}

// alive reports whether the very same process still runs. When it cannot
// tell, it reports true and the reason.
func (p procRef) alive() (bool, error) {
	st, err := readStat(p.pid)
	if err != nil {
		return !procGone(err), err
	}
	return st.start == p.start && st.state != 'Z', nil
}

// escapeWarning describes which of the processes seen before a kill
// survived it, or may have, or "" when none did.
func escapeWarning(before []procRef) string {
	var left []string
	for _, p := range before {
		switch alive, err := p.alive(); {
		case alive && err != nil:
			left = append(left, fmt.Sprintf("pid %d (%s; could not check: %v)", p.pid, p.comm, err))
		case alive:
			left = append(left, fmt.Sprintf("pid %d (%s)", p.pid, p.comm))
		}
	}
	switch len(left) {
	case 0:
		return ""
	case 1:
		return "Warning: 1 process of the session may have escaped the kill (it left the process group): " + left[0] + "."
	default:
		return fmt.Sprintf("Warning: %d processes of the session may have escaped the kill (they left the process group): %s.", len(left), strings.Join(left, ", "))
	}
}

// groupMembers lists the live processes of process group pgid but the
// leader, from /proc.
func groupMembers(pgid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pgid {
			continue
		}
		if st, err := readStat(pid); err == nil && st.pgrp == pgid && st.state != 'Z' {
			out = append(out, pid)
		}
	}
	return out, nil
}

// liveAmong keeps the pids that are neither gone nor zombies, nor skip.
func liveAmong(pids []int, skip int) []int {
	out := pids[:0]
	for _, pid := range pids {
		if pid == skip {
			continue
		}
		if st, err := readStat(pid); err == nil && st.state != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// commandLine is a process's command line, shortened to max characters,
// or its comm when the command line cannot be read.
func commandLine(pid int, limit int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if err != nil || s == "" {
		if st, err := readStat(pid); err == nil {
			return st.comm
		}
		return "?"
	}
	if r := []rune(s); len(r) > limit {
		s = string(r[:limit-1]) + "…"
	}
	return s
}
