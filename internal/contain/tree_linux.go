//go:build linux

package contain

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Proc names one process across time: a pid plus its start time, so a
// reused pid is not mistaken for the original.
// Its zero value names no process. Safe for concurrent use (a value).
type Proc struct {
	Pid   int    // the process id
	start string // its start time in clock ticks after boot, as /proc shows it
	Comm  string // its command name, as /proc/<pid>/stat shows it
}

// Stat is what /proc/<pid>/stat says of a process, as far as containment
// needs it.
type Stat struct {
	ppid     int
	pgrp     int
	start    string
	comm     string
	State    byte  // the state letter: 'R', 'S', 'Z' for a zombie …
	ExitCode int   // the wait status of a zombie (waitpid's form); 0 before Linux 3.5
	cpuTicks int64 // user plus system time, in clock ticks (USER_HZ, 100 a second)
	rssPages int64 // resident set, in pages
	threads  int
	flags    uint64 // the kernel's PF_* flags of its main thread
}

// pfExiting is the kernel's PF_EXITING flag: the thread is in its exit.
const pfExiting = 0x4

// Live reports whether the process still runs: it is not a zombie, and
// not a process of one thread already on its way out (its descriptors
// may be closed and its output ended, but the kernel has not made it a
// zombie yet, which on a loaded machine can take milliseconds).
func (st Stat) Live() bool {
	if st.State == 'Z' || st.State == 'X' {
		return false
	}
	return st.flags&pfExiting == 0 || st.threads > 1
}

// ReadStat parses /proc/<pid>/stat. An error for which Gone holds
// means the process is gone; any other means it could not tell.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return parseStat(pid, string(b))
}

// parseStat parses the text of /proc/<pid>/stat.
func parseStat(pid int, s string) (Stat, error) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 >= len(s) {
		return Stat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[end+2:])
	// After the comm: state(0) ppid(1) pgrp(2) session(3) tty_nr(4)
	// tpgid(5) flags(6) … utime(11) stime(12) … num_threads(17) …
	// starttime(19) vsize(20) rss(21) … exit_code(49, Linux 3.5+).
	if len(f) < 22 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	st := Stat{start: f[19], comm: s[open+1 : end], State: f[0][0]}
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgrp, _ = strconv.Atoi(f[2])
	st.flags, _ = strconv.ParseUint(f[6], 10, 64)
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	st.cpuTicks = ut + stime
	st.threads, _ = strconv.Atoi(f[17])
	st.rssPages, _ = strconv.ParseInt(f[21], 10, 64)
	if len(f) > 49 {
		st.ExitCode, _ = strconv.Atoi(f[49])
	}
	return st, nil
}

// Gone reports whether a ReadStat error means the process is gone:
// its /proc entry vanished (ENOENT), or it died while being read (ESRCH).
func Gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// descendants lists the live descendants of root (root excluded), from
// the kernel's per-task children lists (see [WalkTree]), or, on a kernel
// without them, from the parent links of every process in /proc. An error
// means the list may be incomplete.
func Descendants(root int) ([]Proc, error) {
	procs, err := WalkTree(root, nil)
	if errors.Is(err, ErrNoChildrenFiles) {
		return scanDescendants(root)
	}
	out := make([]Proc, 0, len(procs))
	for _, p := range procs {
		if p.Pid != root {
			out = append(out, p.Proc)
		}
	}
	return out, err
}

// ErrNoChildrenFiles means the kernel has no /proc/<pid>/task/<tid>/children
// (CONFIG_PROC_CHILDREN is off).
var ErrNoChildrenFiles = errors.New("/proc/<pid>/task/<tid>/children is not available")

// TreeProc is a live process of a session's tree with its stat, as
// [WalkTree] found it.
type TreeProc struct {
	Proc
	st Stat
}

// WalkTree lists the live processes of the tree rooted at root, root
// included when alive: root, the processes of known that are still the
// same processes (a pid and its start time), and everything below them,
// found through /proc/<pid>/task/<tid>/children, which the kernel keeps per
// thread. It reads a few files per process of the tree and never scans
// /proc, so its cost does not depend on the host's process count. Passing
// the previous result as known keeps a process whose parent exited (it is
// reparented out of the tree) once it has been seen. Zombies are left out.
// An error means the list may be incomplete; ErrNoChildrenFiles means the
// kernel cannot list children at all.
func WalkTree(root int, known []Proc) ([]TreeProc, error) {
	seen := make(map[int]bool, len(known)+1)
	var out []TreeProc
	var errs []error
	queue := make([]int, 0, len(known)+1)
	queue = append(queue, root)
	starts := make(map[int]string, len(known))
	for _, p := range known {
		if p.Pid != root {
			queue = append(queue, p.Pid)
			starts[p.Pid] = p.start
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		st, err := ReadStat(pid)
		if err != nil {
			if !Gone(err) && len(errs) == 0 {
				errs = append(errs, err) // it may be a live member: say so once
			}
			continue
		}
		if want, ok := starts[pid]; ok && want != st.start {
			continue // a known pid now names another process
		}
		if st.State == 'Z' {
			continue
		}
		out = append(out, TreeProc{Proc{Pid: pid, start: st.start, Comm: st.comm}, st})
		kids, err := childrenOf(pid, st.threads)
		switch {
		case err == nil:
		case pid == root && errors.Is(err, fs.ErrNotExist) && len(out) == 1:
			if _, serr := ReadStat(pid); serr == nil {
				return nil, ErrNoChildrenFiles // alive, yet no children file
			}
		case !Gone(err) && len(errs) == 0:
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
			if first == nil && (threads <= 1 || !Gone(err)) {
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
func scanDescendants(root int) ([]Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	kids := make(map[int][]int)
	stats := make(map[int]Stat)
	var errs []error
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := ReadStat(pid)
		switch {
		case err == nil:
			stats[pid] = st
			kids[st.ppid] = append(kids[st.ppid], pid)
		case !Gone(err):
			// It may be a descendant; say so once.
			if len(errs) == 0 {
				errs = append(errs, err)
			}
		}
	}
	var out []Proc
	queue := append([]int(nil), kids[root]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		st := stats[pid]
		if st.State != 'Z' {
			out = append(out, Proc{Pid: pid, start: st.start, Comm: st.comm})
		}
		queue = append(queue, kids[pid]...)
	}
	return out, errors.Join(errs...)
}

// Alive reports whether the very same process still runs. When it cannot
// tell, it reports true and the reason.
func (p Proc) Alive() (bool, error) {
	st, err := ReadStat(p.Pid)
	if err != nil {
		return !Gone(err), err
	}
	return st.start == p.start && st.State != 'Z', nil
}

// EscapeWarning describes which of the processes seen before a kill
// survived it, or may have, or "" when none did.
func EscapeWarning(before []Proc) string {
	var left []string
	for _, p := range before {
		switch alive, err := p.Alive(); {
		case alive && err != nil:
			left = append(left, fmt.Sprintf("pid %d (%s; could not check: %v)", p.Pid, p.Comm, err))
		case alive:
			left = append(left, fmt.Sprintf("pid %d (%s)", p.Pid, p.Comm))
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

// GroupMembers lists the live processes of process group pgid but the
// leader, from /proc.
func GroupMembers(pgid int) ([]int, error) {
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
		if st, err := ReadStat(pid); err == nil && st.pgrp == pgid && st.Live() {
			out = append(out, pid)
		}
	}
	return out, nil
}

// LiveAmong keeps the pids that are neither gone nor zombies nor on their
// way out (see [Stat.Live]), nor skip.
func LiveAmong(pids []int, skip int) []int {
	out := pids[:0]
	for _, pid := range pids {
		if pid == skip {
			continue
		}
		if st, err := ReadStat(pid); err == nil && st.Live() {
			out = append(out, pid)
		}
	}
	return out
}

// CommandLine is a process's command line, shortened to max characters,
// or its comm when the command line cannot be read.
func CommandLine(pid int, limit int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if err != nil || s == "" {
		if st, err := ReadStat(pid); err == nil {
			return st.comm
		}
		return "?"
	}
	if r := []rune(s); len(r) > limit {
		s = string(r[:limit-1]) + "…"
	}
	return s
}
