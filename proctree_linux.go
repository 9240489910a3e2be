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
	exitCode int   // the wait status of a zombie (waitpid's form)
	cpuTicks int64 // user plus system time, in clock ticks (USER_HZ, 100 a second)
	rssPages int64 // resident set, in pages
	threads  int
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
	// After the comm: state(0) ppid(1) pgrp(2) … utime(11) stime(12) …
	// num_threads(17) … starttime(19) vsize(20) rss(21) …
	// exit_code(49, Linux 3.5+).
	if len(f) < 22 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	st := procStat{start: f[19], comm: s[open+1 : end], state: f[0][0]}
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgrp, _ = strconv.Atoi(f[2])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	st.cpuTicks = ut + stime
	st.threads, _ = strconv.Atoi(f[17])
	st.rssPages, _ = strconv.ParseInt(f[21], 10, 64)
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

// descendants lists the live descendants of root (root excluded), from
// the kernel's per-task children lists (see [walkTree]), or, on a kernel
// without them, from the parent links of every process in /proc. An error
// means the list may be incomplete.
func descendants(root int) ([]procRef, error) {
	procs, err := walkTree(root, nil)
	if errors.Is(err, errNoChildrenFiles) {
		return scanDescendants(root)
	}
	out := make([]procRef, 0, len(procs))
	for _, p := range procs {
		if p.pid != root {
			out = append(out, p.procRef)
		}
	}
	return out, err
}

// errNoChildrenFiles means the kernel has no /proc/<pid>/task/<tid>/children
// (CONFIG_PROC_CHILDREN is off).
var errNoChildrenFiles = errors.New("/proc/<pid>/task/<tid>/children is not available")

// treeProc is a live process of a session's tree with its stat.
type treeProc struct {
	procRef
	st procStat
}

// walkTree lists the live processes of the tree rooted at root, root
// included when alive: root, the processes of known that are still the
// same processes (a pid and its start time), and everything below them,
// found through /proc/<pid>/task/<tid>/children, which the kernel keeps per
// thread. It reads a few files per process of the tree and never scans
// /proc, so its cost does not depend on the host's process count. Passing
// the previous result as known keeps a process whose parent exited (it is
// reparented out of the tree) once it has been seen. Zombies are left out.
// An error means the list may be incomplete; errNoChildrenFiles means the
// kernel cannot list children at all.
func walkTree(root int, known []procRef) ([]treeProc, error) {
	seen := make(map[int]bool, len(known)+1)
	var out []treeProc
	var errs []error
	queue := make([]int, 0, len(known)+1)
	queue = append(queue, root)
	starts := make(map[int]string, len(known))
	for _, p := range known {
		if p.pid != root {
			queue = append(queue, p.pid)
			starts[p.pid] = p.start
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		st, err := readStat(pid)
		if err != nil {
			if !procGone(err) && len(errs) == 0 {
				errs = append(errs, err) // it may be a live member: say so once
			}
			continue
		}
		if want, ok := starts[pid]; ok && want != st.start {
			continue // a known pid now names another process
		}
		if st.state == 'Z' {
			continue
		}
		out = append(out, treeProc{procRef{pid: pid, start: st.start, comm: st.comm}, st})
		kids, err := childrenOf(pid, st.threads)
		switch {
		case err == nil:
		case pid == root && errors.Is(err, fs.ErrNotExist) && len(out) == 1:
			if _, serr := readStat(pid); serr == nil {
				return nil, errNoChildrenFiles // alive, yet no children file
			}
		case !procGone(err) && len(errs) == 0:
			errs = append(errs, err)
		}
		queue = append(queue, kids...)
	}
	return out, errors.Join(errs...)
}

// childrenOf reads the children of every thread of pid (a child belongs to
// the thread that forked it). A single-threaded process costs one read.
func childrenOf(pid, threads int) ([]int, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tids := []string{strconv.Itoa(pid)}
	if threads > 1 {
		f, err := os.Open(dir)
		if err != nil {
			return nil, err
		}
		tids, err = f.Readdirnames(-1)
		f.Close() // Best effort: a directory opened for reading only.
		if err != nil {
			return nil, err
		}
	}
	var kids []int
	var first error
	for _, tid := range tids {
		b, err := os.ReadFile(dir + tid + "/children")
		if err != nil {
			if first == nil && (threads <= 1 || !procGone(err)) {
				first = err // a thread that exited meanwhile took no children with it
			}
			continue
		}
		for f := range strings.FieldsSeq(string(b)) {
			if k, err := strconv.Atoi(f); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids, first
}

// scanDescendants is descendants for a kernel without children files: it
// walks the parent links of every process in /proc.
func scanDescendants(root int) ([]procRef, error) {
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
