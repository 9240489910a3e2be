package dockerhost

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/host/procscan"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// ResourceTTL is how long a resource view of a session is reused unless
// a fresh one is asked for.
const ResourceTTL = time.Second

// Usage reads, in a scope's container (Config.PerScope), what the
// session's tagged processes use (see taggedUsage). Otherwise it reads
// the session's container: from the daemon's stats (one
// sample) its CPU time, its memory without the page cache, and its
// processes but the idle init; and, from the container's /proc/net/tcp
// and tcp6 (an exec), its listening TCP sockets, which are all the
// session's, as the container is. The two reads go on at once. It returns
// nil when the daemon cannot be asked; a table that cannot be read leaves
// Ports empty.
func (p *process) Usage(_ *host.Scan, fresh bool, note func(ports []string)) *host.Usage {
	p.resMu.Lock()
	defer p.resMu.Unlock()
	if !fresh && p.resView != nil && time.Since(p.resAt) < ResourceTTL {
		u := *p.resView
		return &u
	}
	var u *host.Usage
	if p.tag != "" {
		u = p.taggedUsage()
	} else {
		var ports []host.Listener
		var wg sync.WaitGroup
		wg.Go(func() { ports = p.listeners() })
		u = p.stats()
		wg.Wait()
		if u != nil {
			u.Ports = ports
		}
	}
	if u == nil {
		return nil
	}
	p.resView, p.resAt = u, time.Now()
	if note != nil {
		note(host.PortNames(u.Ports))
	}
	c := *u
	return &c
}

// tagGroup is the group id taggedUsage asks procscan for: no process
// group has it (pids stay below 2^22), so the group is its tagged
// processes alone.
const tagGroup = 1 << 30

// taggedUsage reads, in a scope's container, what the processes carrying
// the session's tag use, from the container's /proc (procscan): the
// container's stats are the scope's. nil when it cannot be read.
func (p *process) taggedUsage() *host.Usage {
	out, code, err := p.h.run(p.cid, procscan.Script("/proc", tagKey, []int{tagGroup}, []string{p.tag}))
	if err != nil || code != 0 {
		return nil
	}
	views, ok := procscan.Parse(strings.Split(string(out), "\n"), []int{tagGroup})
	if !ok {
		return nil
	}
	return views[tagGroup]
}

// stats reads the container's CPU time, memory and tasks from one sample
// of the daemon's stats; nil when the daemon cannot be asked.
func (p *process) stats() *host.Usage {
	ctx, cancel := context.WithTimeout(context.Background(), p.h.cfg.APITimeout)
	defer cancel()
	res, err := p.h.api.ContainerStats(ctx, p.cid, client.ContainerStatsOptions{})
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return nil
	}
	mem := int64(st.MemoryStats.Usage)
	// The page cache is the kernel's to reclaim, as docker stats shows it.
	for _, k := range []string{"total_inactive_file", "inactive_file"} {
		if v, ok := st.MemoryStats.Stats[k]; ok && int64(v) <= mem {
			mem -= int64(v)
			break
		}
	}
	return &host.Usage{
		CPUMs:       int64(st.CPUStats.CPUUsage.TotalUsage / 1e6),
		MemoryBytes: mem,
		Tasks:       max(int(st.PidsStats.Current)-1, 0),
	}
}

// listeners reads the listening TCP sockets of the container's network
// namespace, sorted; empty (not nil) when none or when the tables cannot
// be read. The addresses are decoded in this machine's byte order, which
// is the daemon's unless it runs on another architecture.
func (p *process) listeners() []host.Listener {
	out, _, err := p.h.run(p.cid, "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; exit 0")
	ls := []host.Listener{}
	if err != nil {
		return ls
	}
	t := map[uint64]host.Listener{}
	contain.ParseListeners(string(out), t)
	for _, l := range t {
		ls = append(ls, l)
	}
	return host.SortListeners(ls)
}

// PortOpen reports whether a process in the session's container listens
// on TCP port (any address), from the container's /proc/net/tcp tables.
func (p *process) PortOpen(_ context.Context, port int) bool {
	if port <= 0 || port > 65535 {
		return false
	}
	hexPort := fmt.Sprintf("%04X", port)
	script := `for f in /proc/net/tcp /proc/net/tcp6; do [ -r "$f" ] || continue; while read -r _ l _ st _; do [ "$st" = 0A ] && [ "${l##*:}" = ` + hexPort + ` ] && { echo open; exit 0; }; done <"$f"; done; exit 0`
	out, _, err := p.h.run(p.cid, script)
	return err == nil && strings.Contains(string(out), "open")
}
