package sshhost

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/host"
)

// Resources of node sessions: read on the node, over the connection's
// control shell, by one script for every session of the connection at
// once, at most once per ResourceTTL, on a goroutine of its own: polls
// and lists get the last view at once (see resourcesOf); kill waits for
// a fresh one, at most resourceWait. A
// session's processes are those of its process group and those that
// carry its tag (see taggedScript), so setsid escapers count too.
// Reported: CPUMs, the CPU time (user and system) its live processes
// used; MemoryBytes, the sum of their resident sets; Tasks, the number
// of its processes; Ports, the TCP sockets they listen on, from the
// node's /proc/net/tcp and tcp6. A node whose /proc cannot be read
// reports no resources (nil), and nothing fails.

// ResourceTTL is how long a resource view of a node's sessions is reused:
// polls and lists within it cost no round trip.
const ResourceTTL = 250 * time.Millisecond

// nodeProcRoot is where a node's procfs is mounted.
const nodeProcRoot = "/proc"

// nodeResourceScript prints, for the sessions whose process groups and
// tags are given: "H pagesize clock-ticks"; "T group pid" for every
// process carrying a session's tag; "P pid group cpu-ticks rss-pages"
// for every live process of the groups or carrying a tag; "D pid" then
// "F inode" for each of their sockets; and "N line" for every LISTEN
// line of the TCP tables. It exits 3 when proc cannot be read.
func nodeResourceScript(proc string, groups []int, tags []string) string {
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
		b.WriteString("for f in $(grep -laF " + nodeTagKey + "=" + tag + " " + proc + "/[0-9]*/environ 2>/dev/null); do p=${f#" + proc + "/}; p=${p%/environ}; echo \"T " + g + " $p\"; T=\"$T$p \"; done; ")
	}
	b.WriteString("L=; for d in " + proc + "/[0-9]*; do read -r s <\"$d/stat\" 2>/dev/null || continue; p=${d#" + proc + "/}; s=${s##*)}; set -- $s; " +
		"case \"$G\" in *\" $3 \"*) ;; *) case \"$T\" in *\" $p \"*) ;; *) continue;; esac;; esac; [ \"$1\" = Z ] && continue; " +
		"echo \"P $p $3 $((${12} + ${13})) ${22}\"; L=\"$L $p\"; done; ")
	b.WriteString("for p in $L; do echo \"D $p\"; ls -l " + proc + "/$p/fd 2>/dev/null; done | sed -n -e \"/^D /p\" -e \"s/.*socket:\\[\\([0-9]*\\)\\].*/F \\1/p\"; ")
	b.WriteString("grep -hE \"^ *[0-9]+: [0-9A-Fa-f]+:[0-9A-Fa-f]+ [0-9A-Fa-f]+:[0-9A-Fa-f]+ 0A \" " + proc + "/net/tcp " + proc + "/net/tcp6 2>/dev/null | sed \"s/^/N /\"; exit 0")
	return b.String()
}

// nodeProcInfo is one process of a resource read.
type nodeProcInfo struct {
	group       int
	ticks, rss  int64
	socketInods []uint64
}

// parseNodeResources turns nodeResourceScript's output into each
// group's resources; ok is false when it said nothing usable.
func parseNodeResources(lines []string, groups []int) (map[int]*host.Usage, bool) {
	rd := nodeRead{page: 4096, hz: int64(contain.UserHZ), procs: map[int]*nodeProcInfo{}, tagged: map[int][]int{}, cur: -1}
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

// nodeRead is what nodeResourceScript's lines said, as they are parsed.
type nodeRead struct {
	page, hz  int64 // bytes per page, clock ticks per second
	sawHeader bool
	procs     map[int]*nodeProcInfo
	tagged    map[int][]int   // group -> tagged pids
	table     strings.Builder // the listening sockets, as /proc/net/tcp shows them
	cur       int             // the pid whose descriptors the "F" lines list
}

// line parses one line of the script's output; it skips what it does not
// understand.
func (rd *nodeRead) line(l string) {
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
			rd.procs[int(p)] = &nodeProcInfo{group: int(g), ticks: t, rss: r}
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
func (rd *nodeRead) members(g int) map[int]bool {
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
func (rd *nodeRead) usage(g int, listening map[uint64]host.Listener) *host.Usage {
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

// resourceWait bounds how long a call waits for a read under way when it
// has no view of the session yet, or asks for a fresh one (kill); after
// it, it goes on with what there is, so a slow or hung node never holds
// up a poll or a list.
const resourceWait = time.Second

// resourcesOf returns p's resources and when they were read. A view
// younger than ResourceTTL is returned as it is (unless fresh); an older
// one starts a read of every session on the connection, on a goroutine
// of its own, and is returned at once while the read goes on, so the
// call costs no round trip. Only a call with no view of p yet, or a
// fresh one, waits for the read, at most resourceWait. A nil view means
// none could be read (yet).
func (c *nodeConn) resourcesOf(p *remoteProcess, fresh bool) (*host.Usage, time.Time) {
	c.resMu.Lock()
	v, have := c.resViews[p]
	at := c.resAt
	if have && !fresh && time.Now().Before(c.resNext) {
		c.resMu.Unlock()
		return v, at
	}
	if c.isDead() {
		c.resMu.Unlock()
		return v, at
	}
	started := time.Now()
	done := c.resRead
	if done == nil {
		done = make(chan struct{})
		c.resRead = done
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.readResources(done)
		}()
	}
	c.resMu.Unlock()
	if have && !fresh {
		return v, at // the stale view now; the read refreshes it
	}
	t := time.NewTimer(resourceWait)
	defer t.Stop()
	for {
		select {
		case <-done:
		case <-t.C:
			c.resMu.Lock()
			defer c.resMu.Unlock()
			return c.resViews[p], c.resAt
		}
		c.resMu.Lock()
		if !fresh || !c.resBegan.Before(started) {
			defer c.resMu.Unlock()
			return c.resViews[p], c.resAt
		}
		// The read that was under way began before this call: a fresh
		// view needs the next one.
		done = c.resRead
		if done == nil {
			done = make(chan struct{})
			c.resRead = done
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				c.readResources(done)
			}()
		}
		c.resMu.Unlock()
	}
}

// readResources reads the resources of every session on the connection
// and stores them, then closes done. The read goes through the control
// shell, so it is bounded like every control command.
func (c *nodeConn) readResources(done chan struct{}) {
	began := time.Now()
	c.mu.Lock()
	procs := make([]*remoteProcess, 0, len(c.procs))
	for rp := range c.procs {
		procs = append(procs, rp)
	}
	c.mu.Unlock()
	views := make(map[*remoteProcess]*host.Usage, len(procs))
	if len(procs) > 0 {
		groups := make([]int, len(procs))
		tags := make([]string, len(procs))
		for i, rp := range procs {
			groups[i], tags[i] = rp.pid, rp.tag
		}
		lines, code, err := c.controlOutput(nodeResourceScript(c.node.procRoot(), groups, tags))
		if err == nil && code == 0 {
			if byGroup, ok := parseNodeResources(lines, groups); ok {
				for _, rp := range procs {
					views[rp] = byGroup[rp.pid]
				}
			}
		}
	}
	c.mu.Lock()
	for _, rp := range procs {
		if _, live := c.procs[rp]; !live {
			delete(views, rp) // released meanwhile: untrack ran
		} else if _, ok := views[rp]; !ok {
			views[rp] = nil // unreadable: none, until the next read
		}
	}
	c.mu.Unlock()
	c.resMu.Lock()
	// The next read comes ResourceTTL after this one ended, or later
	// when reads take longer, so they never fill the control shell,
	// which kills and checks share.
	now := time.Now()
	c.resViews, c.resAt, c.resBegan, c.resRead = views, now, began, nil
	c.resNext = now.Add(max(ResourceTTL, now.Sub(began)))
	c.resMu.Unlock()
	close(done)
}

// procRoot is where the node's procfs is read.
func (nc *nodeConfig) procRoot() string {
	if d := nc.procDir.Load(); d != nil {
		return *d
	}
	return nodeProcRoot
}

// Usage is what the node session of p uses (see resourcesOf and
// [host.UsageReader]; one call's scan is not needed: a node's sessions
// are read together anyway); a new view's listening ports go to note, in
// the order the views were read.
func (p *remoteProcess) Usage(_ *host.Scan, fresh bool, note func([]string)) *host.Usage {
	view, at := p.conn.resourcesOf(p, fresh)
	if view == nil {
		return nil
	}
	p.resMu.Lock()
	if at.After(p.resNoted) {
		p.resNoted = at
		if note != nil {
			note(host.PortNames(view.Ports))
		}
	}
	p.resMu.Unlock()
	r := *view
	r.Ports = slices.Clone(r.Ports)
	return &r
}
