//go:build linux

package bgexec

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bgexec/bgexec/internal/session"
	"github.com/prometheus/procfs"
)

// resourceScan reads the resources of sessions for one call; the TCP
// tables of each network namespace are read once per scan. Not safe for
// concurrent use.
type resourceScan struct {
	fs     procfs.FS
	err    error
	tables map[string]map[uint64]Listener // by network namespace: listening sockets by inode
}

func newResourceScan() *resourceScan {
	fs, err := procfs.NewFS("/proc")
	return &resourceScan{fs: fs, err: err, tables: make(map[string]map[uint64]Listener)}
}

// sessionResources reads what a running session uses now (see
// [resourceScan.of]).
func sessionResources(s *session.Session) *Resources { return newResourceScan().of(s) }

// of reads what a running session uses now, and records its listening
// ports with it for the text of its end. It returns nil for a session
// that is not a real process.
func (rs *resourceScan) of(s *session.Session) *Resources {
	c, ok := s.Process().(*osChild)
	if !ok || rs.err != nil {
		return nil
	}
	fs := rs.fs
	var pids []int
	if c.cg != nil {
		pids, _ = c.cg.procs() // an unreadable cgroup shows as idle
	} else {
		pids, _ = groupMembers(c.leader)
		pids = append(pids, c.leader)
	}
	r := &Resources{CPUMs: -1, MemoryBytes: -1, Tasks: -1}
	if c.cg != nil {
		c.cg.counters(r)
	}
	if r.CPUMs < 0 || r.MemoryBytes < 0 {
		// No cgroup counter: add up the live processes' own.
		var cpu float64
		var rss int64
		for _, pid := range pids {
			p, err := fs.Proc(pid)
			if err != nil {
				continue
			}
			if st, err := p.Stat(); err == nil {
				cpu += st.CPUTime()
				rss += int64(st.ResidentMemory())
			}
		}
		if r.CPUMs < 0 {
			r.CPUMs = int64(cpu * 1000)
		}
		if r.MemoryBytes < 0 {
			r.MemoryBytes = rss
		}
	}
	if r.Tasks < 0 {
		r.Tasks = len(pids)
	}
	r.Ports = rs.listeners(pids)
	if r.Ports == nil {
		r.Ports = []Listener{}
	}
	s.NoteListeners(r.portNames())
	return r
}

// counters fills in the cgroup's CPU, memory and task counters; a counter
// it cannot read stays -1.
func (c *sessionCgroup) counters(r *Resources) {
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
func (rs *resourceScan) listeners(pids []int) []Listener {
	var inodes []uint64
	netPid := 0
	for _, pid := range pids {
		p, err := rs.fs.Proc(pid)
		if err != nil {
			continue
		}
		targets, err := p.FileDescriptorTargets()
		if err != nil {
			continue
		}
		for _, t := range targets {
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
	table := rs.table(netPid)
	var out []Listener
	for _, ino := range inodes {
		if l, ok := table[ino]; ok {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b Listener) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Address, b.Address))
	})
	return slices.Compact(out)
}

// table returns the listening sockets of pid's network namespace, by
// inode, read once per scan and namespace.
func (rs *resourceScan) table(pid int) map[uint64]Listener {
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err == nil {
		if t, ok := rs.tables[ns]; ok {
			return t
		}
	}
	t := make(map[uint64]Listener)
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
		rs.tables[ns] = t
	}
	return t
}

// parseListeners adds the LISTEN sockets of a /proc/net/tcp{,6} table to
// t, by inode. A line is "sl local rem st tx:rx tr:when retrnsmt uid
// timeout inode …", local being the address in hex (32-bit words in host
// order) and the port in hex.
func parseListeners(table string, t map[uint64]Listener) {
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
		t[ino] = Listener{Port: int(p), Address: net.IP(ip).String()}
	}
}
