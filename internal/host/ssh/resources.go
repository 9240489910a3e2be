package sshhost

import (
	"slices"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/host/procscan"
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

// nodeResourceScript is the resource script of a node's sessions (see
// procscan.Script), whose processes carry nodeTagKey.
func nodeResourceScript(proc string, groups []int, tags []string) string {
	return procscan.Script(proc, nodeTagKey, groups, tags)
}

// parseNodeResources reads nodeResourceScript's output (see
// procscan.Parse).
func parseNodeResources(lines []string, groups []int) (map[int]*host.Usage, bool) {
	return procscan.Parse(lines, groups)
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
