//go:build linux

package bgexec

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bgexec/bgexec/internal/host"
)

// resourceTTL is how long a session's resource view is reused: polls and
// lists within it read no /proc or cgroup file. kill reads anew.
const resourceTTL = 250 * time.Millisecond

// resourceCache is a session's last resource view, owned by its osChild.
// Safe for concurrent use.
type resourceCache struct {
	mu   sync.Mutex  // guards the fields below
	at   time.Time   // when view was read
	view *host.Usage // nil before the first read
	// known are the session's processes seen so far (process-group
	// containment): each read walks down from them and the leader, so a
	// process stays counted after its parent exits.
	known []procRef
}

// Usage is what the session of c uses now (see [host.UsageReader]): its
// last view when younger than resourceTTL, else one read now. The view's
// listening ports go to note, under the cache's lock, so that views noted
// in turn are noted in order.
func (c *osChild) Usage(scan *host.Scan, fresh bool, note func([]string)) *host.Usage {
	rc := &c.res
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if fresh || rc.view == nil || time.Since(rc.at) >= resourceTTL {
		rc.view = readUsage(scan, c, rc)
		rc.at = time.Now()
		if note != nil {
			note(portNames(rc.view.Ports))
		}
	}
	r := *rc.view
	r.Ports = slices.Clone(r.Ports)
	return &r
}

// read reads what the session of c uses now. Without a cgroup, its
// processes are those of its tree (see [walkTree]), learned incrementally
// in rc.known; never all of /proc.
func readUsage(scan *host.Scan, c *osChild, rc *resourceCache) *host.Usage {
	var pids []int
	var stats []procStat // of pids, when read already
	if c.cg != nil {
		pids, _ = c.cg.procs() // an unreadable cgroup shows as idle
	} else if procs, err := walkTree(c.leader, rc.known); errors.Is(err, errNoChildrenFiles) {
		// A kernel without children files: the old way, all of /proc.
		pids, _ = groupMembers(c.leader)
		pids = append(pids, c.leader)
	} else {
		// An error leaves out what could not be read: it shows as idle.
		rc.known = rc.known[:0]
		for _, p := range procs {
			pids = append(pids, p.pid)
			stats = append(stats, p.st)
			rc.known = append(rc.known, p.procRef)
		}
	}
	r := &host.Usage{CPUMs: -1, MemoryBytes: -1, Tasks: -1}
	if c.cg != nil {
		c.cg.counters(r)
	}
	if r.CPUMs < 0 || r.MemoryBytes < 0 {
		// No cgroup counter: add up the live processes' own.
		var ticks, pages int64
		for i, pid := range pids {
			var st procStat
			if i < len(stats) {
				st = stats[i]
			} else {
				var err error
				if st, err = readStat(pid); err != nil {
					continue
				}
			}
			ticks += st.cpuTicks
			pages += st.rssPages
		}
		if r.CPUMs < 0 {
			r.CPUMs = ticks * 1000 / userHZ
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
	return r
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat: clock ticks,
// 100 a second on every Linux architecture (USER_HZ).
const userHZ = 100

// counters fills in the cgroup's CPU, memory and task counters; a counter
// it cannot read stays -1.
func (c *sessionCgroup) counters(r *host.Usage) {
	if c.lim != nil && c.lim.released.Load() {
		return // ended: its cgroup may serve another session already
	}
	var base int64
	if c.lim != nil {
		base = c.lim.baseCPUUsec
	}
	if us := readKey(filepath.Join(c.dir, "cpu.stat"), "usage_usec"); us >= 0 {
		r.CPUMs = max(us-base, 0) / 1000
	}
	sl := c.lim
	if sl == nil {
		return
	}
	switch {
	case sl.root.v2["memory"]:
		r.MemoryBytes = readInt(filepath.Join(c.dir, "memory.current"))
	case sl.v1Dir("memory") != "":
		r.MemoryBytes = readInt(filepath.Join(sl.v1Dir("memory"), "memory.usage_in_bytes"))
	}
	n := int64(-1)
	switch {
	case sl.root.v2["pids"]:
		n = readInt(filepath.Join(c.dir, "pids.current"))
	case sl.v1Dir("pids") != "":
		n = readInt(filepath.Join(sl.v1Dir("pids"), "pids.current"))
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
	slices.SortFunc(out, func(a, b host.Listener) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Address, b.Address))
	})
	return slices.Compact(out)
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
		parseListeners(string(b), t)
	}
	if err == nil {
		scan.Tables[ns] = t
	}
	return t
}

// parseListeners adds the LISTEN sockets of a /proc/net/tcp{,6} table to
// t, by inode. A line is "sl local rem st tx:rx tr:when retrnsmt uid
// timeout inode …", local being the address in hex (32-bit words in host
// order) and the port in hex.
func parseListeners(table string, t map[uint64]host.Listener) {
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" { // TCP_LISTEN
			continue
		}
		addr, port, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		p, err1 := strconv.ParseUint(port, 16, 16)
		ino, err2 := strconv.ParseUint(f[9], 10, 64)
		ip, err3 := hex.DecodeString(addr)
		if err1 != nil || err2 != nil || err3 != nil || (len(ip) != 4 && len(ip) != 16) {
			continue
		}
		for i := 0; i < len(ip); i += 4 {
			binary.BigEndian.PutUint32(ip[i:], binary.NativeEndian.Uint32(ip[i:]))
		}
		t[ino] = host.Listener{Port: int(p), Address: net.IP(ip).String()}
	}
}
