//go:build linux

package local

import (
	"slices"
	"sync"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
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
	known []contain.Proc
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
		rc.view, rc.known = contain.ReadUsage(scan, c.leader, c.cg, rc.known)
		rc.at = time.Now()
		if note != nil {
			note(host.PortNames(rc.view.Ports))
		}
	}
	r := *rc.view
	r.Ports = slices.Clone(r.Ports)
	return &r
}
