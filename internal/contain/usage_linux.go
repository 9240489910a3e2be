//go:build linux

package contain

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bgexec/bgexec/internal/host"
)

// ReadUsage reads what a session uses now: the processes of its cgroup
// cg, or, when cg is nil, those of its tree below leader (see [WalkTree]),
// walked down from known too, so that a process stays counted after its
// parent exits; never all of /proc but on a kernel without children
// files. It returns the processes to pass as known next time (known's
// array reused; nil with a cgroup). A figure that cannot be read shows as
// idle. scan, when not nil, shares the TCP tables among the sessions of
// one call.
func ReadUsage(scan *host.Scan, leader int, cg *Cgroup, known []Proc) (*host.Usage, []Proc) {
	var pids []int
	var stats []Stat // of pids, when read already
	if cg != nil {
		pids, _ = cg.Procs() // an unreadable cgroup shows as idle
	} else if procs, err := WalkTree(leader, known); errors.Is(err, ErrNoChildrenFiles) {
		// A kernel without children files: the old way, all of /proc.
		pids, _ = GroupMembers(leader)
		pids = append(pids, leader)
	} else {
		// An error leaves out what could not be read: it shows as idle.
		known = known[:0]
		for _, p := range procs {
			pids = append(pids, p.Pid)
			stats = append(stats, p.st)
			known = append(known, p.Proc)
		}
	}
	r := &host.Usage{CPUMs: -1, MemoryBytes: -1, Tasks: -1}
	if cg != nil {
		cg.counters(r)
	}
	if r.CPUMs < 0 || r.MemoryBytes < 0 {
		// No cgroup counter: add up the live processes' own.
		var ticks, pages int64
		for i, pid := range pids {
			var st Stat
			if i < len(stats) {
				st = stats[i]
			} else {
				var err error
				if st, err = ReadStat(pid); err != nil {
					continue
				}
			}
			ticks += st.cpuTicks
			pages += st.rssPages
		}
		if r.CPUMs < 0 {
			r.CPUMs = ticks * 1000 / UserHZ
		}
		if r.MemoryBytes < 0 {
			r.MemoryBytes = pages * int64(os.Getpagesize())
		}
	}
	if r.Tasks < 0 {
		r.Tasks = len(pids)
	}
	r.Ports = listeners(scan, pids)
	if r.Ports == nil {
		r.Ports = []host.Listener{}
	}
	return r, known
}

// counters fills in the cgroup's CPU, memory and task counters; a counter
// it cannot read stays -1.
func (c *Cgroup) counters(r *host.Usage) {
	if c.lim != nil && c.lim.released.Load() {
		return // ended: its cgroup may serve another session already
	}
	var base int64
	if c.lim != nil {
		base = c.lim.baseCPUUsec
	}
	if us := ReadKey(filepath.Join(c.dir, "cpu.stat"), "usage_usec"); us >= 0 {
		r.CPUMs = max(us-base, 0) / 1000
	}
	sl := c.lim
	if sl == nil {
		return
	}
	switch {
	case sl.root.v2["memory"]:
		r.MemoryBytes = ReadInt(filepath.Join(c.dir, "memory.current"))
	case sl.v1Dir("memory") != "":
		r.MemoryBytes = ReadInt(filepath.Join(sl.v1Dir("memory"), "memory.usage_in_bytes"))
	}
	n := int64(-1)
	switch {
	case sl.root.v2["pids"]:
		n = ReadInt(filepath.Join(c.dir, "pids.current"))
	case sl.v1Dir("pids") != "":
		n = ReadInt(filepath.Join(sl.v1Dir("pids"), "pids.current"))
	}
	if n >= 0 {
		r.Tasks = int(n)
	}
}

// listeners returns the listening TCP sockets among the descriptors of
// pids, from the TCP tables of the first one's network namespace (a
// sandboxed session may have its own).
func listeners(scan *host.Scan, pids []int) []host.Listener {
	var inodes []uint64
	netPid := 0
	for _, pid := range pids {
		for _, t := range fdTargets(pid) {
			if v, ok := strings.CutPrefix(t, "socket:["); ok {
				if ino, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64); err == nil {
					inodes = append(inodes, ino)
					if netPid == 0 {
						netPid = pid
					}
				}
			}
		}
	}
	if len(inodes) == 0 {
		return nil
	}
	table := netTable(scan, netPid)
	var out []host.Listener
	for _, ino := range inodes {
		if l, ok := table[ino]; ok {
			out = append(out, l)
		}
	}
	return host.SortListeners(out)
}

// fdTargets reads where the open descriptors of pid point ("socket:[123]",
// "/dev/null" …); nil when they cannot be read.
func fdTargets(pid int) []string {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	names, err := f.Readdirnames(-1)
	f.Close() // Best effort: a directory opened for reading only.
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if t, err := os.Readlink(dir + n); err == nil {
			out = append(out, t)
		}
	}
	return out
}

// netTable returns the listening sockets of pid's network namespace, by
// inode, read once per scan and namespace (every time without a scan).
func netTable(scan *host.Scan, pid int) map[uint64]host.Listener {
	if scan == nil {
		scan = &host.Scan{}
	}
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err == nil {
		if t, ok := scan.Tables[ns]; ok {
			return t
		}
	}
	if scan.Tables == nil {
		scan.Tables = make(map[string]map[uint64]host.Listener)
	}
	t := make(map[uint64]host.Listener)
	for _, name := range []string{"tcp", "tcp6"} {
		// procfs's NetTCP is deprecated in favour of netlink; the table's
		// format is stable and small to read.
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/" + name)
		if err != nil {
			continue // no IPv6, or the process is gone
		}
		ParseListeners(string(b), t)
	}
	if err == nil {
		scan.Tables[ns] = t
	}
	return t
}
