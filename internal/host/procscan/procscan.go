// Package procscan reads what groups of processes use from a procfs, in
// one POSIX shell script run where the processes are (a node over SSH, a
// container through an exec): their CPU time, resident memory, number,
// and the TCP ports their sockets listen on. A group is the processes of
// one process group and those carrying one tag in their environment
// (TAGKEY=tag), so processes that left the group (setsid, a double fork)
// count too. Script makes the script and Parse reads its output; nothing
// here runs a process.
package procscan

import (
	"strconv"
	"strings"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/host"
)

// Script prints, for the groups whose process group ids and tags are
// given (tags[i] is groups[i]'s; a group id must be positive): "H pagesize clock-ticks"; "T group pid" for every
// process carrying a session's tag; "P pid group cpu-ticks rss-pages"
// for every live process of the groups or carrying a tag; "D pid" then
// "F inode" for each of their sockets; and "N line" for every LISTEN
// line of the TCP tables. It exits 3 when proc cannot be read. The tag
// search is a regular expression, not grep -F, whose busybox version
// stops at an environment's first NUL byte: tagKey and the tags must hold
// no character special to grep.
func Script(proc, tagKey string, groups []int, tags []string) string {
	var b strings.Builder
	b.WriteString("[ -r " + proc + "/self/stat ] || exit 3; ")
	b.WriteString("z=$(getconf PAGESIZE 2>/dev/null) || z=4096; h=$(getconf CLK_TCK 2>/dev/null) || h=100; echo \"H $z $h\"; ")
	b.WriteString("G=\" ")
	for _, g := range groups {
		b.WriteString(strconv.Itoa(g) + " ")
	}
	b.WriteString("\"; T=\" \"; ")
	for i, tag := range tags {
		g := strconv.Itoa(groups[i])
		b.WriteString("for f in $(grep -la " + tagKey + "=" + tag + " " + proc + "/[0-9]*/environ 2>/dev/null); do p=${f#" + proc + "/}; p=${p%/environ}; echo \"T " + g + " $p\"; T=\"$T$p \"; done; ")
	}
	b.WriteString("L=; for d in " + proc + "/[0-9]*; do read -r s <\"$d/stat\" 2>/dev/null || continue; p=${d#" + proc + "/}; s=${s##*)}; set -- $s; " +
		"case \"$G\" in *\" $3 \"*) ;; *) case \"$T\" in *\" $p \"*) ;; *) continue;; esac;; esac; [ \"$1\" = Z ] && continue; " +
		"echo \"P $p $3 $((${12} + ${13})) ${22}\"; L=\"$L $p\"; done; ")
	b.WriteString("for p in $L; do echo \"D $p\"; ls -l " + proc + "/$p/fd 2>/dev/null; done | sed -n -e \"/^D /p\" -e \"s/.*socket:\\[\\([0-9]*\\)\\].*/F \\1/p\"; ")
	b.WriteString("grep -hE \"^ *[0-9]+: [0-9A-Fa-f]+:[0-9A-Fa-f]+ [0-9A-Fa-f]+:[0-9A-Fa-f]+ 0A \" " + proc + "/net/tcp " + proc + "/net/tcp6 2>/dev/null | sed \"s/^/N /\"; exit 0")
	return b.String()
}

// procInfo is one process of a resource read.
type procInfo struct {
	group       int
	ticks, rss  int64
	socketInods []uint64
}

// Parse turns Script's output into each group's resources; ok is false
// when it said nothing usable.
func Parse(lines []string, groups []int) (map[int]*host.Usage, bool) {
	rd := read{page: 4096, hz: int64(contain.UserHZ), procs: map[int]*procInfo{}, tagged: map[int][]int{}, cur: -1}
	rd.table.WriteString("header\n") // contain.ParseListeners skips a table's first line
	for _, l := range lines {
		rd.line(l)
	}
	if !rd.sawHeader {
		return nil, false
	}
	listening := map[uint64]host.Listener{}
	contain.ParseListeners(rd.table.String(), listening)
	out := make(map[int]*host.Usage, len(groups))
	for _, g := range groups {
		out[g] = rd.usage(g, listening)
	}
	return out, true
}

// read is what Script's lines said, as they are parsed.
type read struct {
	page, hz  int64 // bytes per page, clock ticks per second
	sawHeader bool
	procs     map[int]*procInfo
	tagged    map[int][]int   // group -> tagged pids
	table     strings.Builder // the listening sockets, as /proc/net/tcp shows them
	cur       int             // the pid whose descriptors the "F" lines list
}

// line parses one line of the script's output; it skips what it does not
// understand.
func (rd *read) line(l string) {
	f := strings.Fields(l)
	if len(f) == 0 {
		return
	}
	num := func(i int) int64 {
		if i >= len(f) {
			return -1
		}
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
	switch f[0] {
	case "H":
		if z := num(1); z > 0 {
			rd.page = z
		}
		if h := num(2); h > 0 {
			rd.hz = h
		}
		rd.sawHeader = true
	case "T":
		if g, p := num(1), num(2); g > 0 && p > 0 {
			rd.tagged[int(g)] = append(rd.tagged[int(g)], int(p))
		}
	case "P":
		if p, g, t, r := num(1), num(2), num(3), num(4); p > 0 && t >= 0 && r >= 0 {
			rd.procs[int(p)] = &procInfo{group: int(g), ticks: t, rss: r}
		}
	case "D":
		rd.cur = int(num(1))
	case "F":
		if pi := rd.procs[rd.cur]; pi != nil {
			if ino, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				pi.socketInods = append(pi.socketInods, ino)
			}
		}
	case "N":
		rd.table.WriteString(strings.TrimPrefix(l, "N ") + "\n")
	}
}

// members are the pids of group g: those in its process group and those
// tagged with it, that the read saw.
func (rd *read) members(g int) map[int]bool {
	members := map[int]bool{}
	for pid, pi := range rd.procs {
		if pi.group == g {
			members[pid] = true
		}
	}
	for _, pid := range rd.tagged[g] {
		if rd.procs[pid] != nil {
			members[pid] = true
		}
	}
	return members
}

// usage adds up group g's processes: CPU, memory, tasks and the ports of
// listening its sockets are among.
func (rd *read) usage(g int, listening map[uint64]host.Listener) *host.Usage {
	members := rd.members(g)
	r := &host.Usage{Ports: []host.Listener{}}
	var ticks, pages int64
	for pid := range members {
		pi := rd.procs[pid]
		ticks += pi.ticks
		pages += pi.rss
		for _, ino := range pi.socketInods {
			if l, ok := listening[ino]; ok {
				r.Ports = append(r.Ports, l)
			}
		}
	}
	r.CPUMs = ticks * 1000 / rd.hz
	r.MemoryBytes = pages * rd.page
	r.Tasks = len(members)
	r.Ports = host.SortListeners(r.Ports)
	return r
}
