package bgexec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
)

// Resources is what a running session uses now, from its cgroup's
// counters (list entries and poll details); on a node, from the node's
// /proc (see the package documentation's "Nodes over SSH"). Values are
// read at most every 250 ms and reused in between (on a node, a view
// may be older while its next read is under way); a field that cannot
// be read is 0.
//
// A Resources is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type Resources struct {
	// CPUMs is the CPU time all its processes used so far, in milliseconds.
	CPUMs int64 `json:"cpuMs"`
	// MemoryBytes is the memory charged to the session now, in bytes
	// (memory.current, or memory.usage_in_bytes on cgroup v1; the sum of
	// resident sets without a memory cgroup).
	MemoryBytes int64 `json:"memoryBytes"`
	// Tasks is the number of its processes and threads now (pids.current;
	// the number of processes without a pids cgroup).
	Tasks int `json:"tasks"`
	// Ports are the TCP sockets its processes listen on, by port.
	Ports []Listener `json:"ports"`
}

// Listener is a listening TCP socket of a session.
//
// A Listener is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type Listener struct {
	// Port is the TCP port.
	Port int `json:"port"`
	// Address is the local address it is bound to ("0.0.0.0", "::",
	// "127.0.0.1" …).
	Address string `json:"address"`
}

// resourceScan reads the resources of sessions for one call, sharing
// what one read serves for all (the TCP tables of each network
// namespace). Not safe for concurrent use.
type resourceScan struct {
	scan host.Scan
}

func newResourceScan() *resourceScan { return &resourceScan{} }

// sessionResources is what a running session uses (see [resourceScan.of]).
func sessionResources(s *session.Session) *Resources { return newResourceScan().of(s) }

// refreshResources reads what a running session uses now, whatever the
// age of its last view, and records its listening ports (kill looks
// before it kills).
func refreshResources(s *session.Session) { newResourceScan().view(s, true) }

// of returns what a running session uses: its last view when young
// enough, else one read now, which also records its listening ports for
// the text of its end. It returns nil when the session's host cannot say.
func (rs *resourceScan) of(s *session.Session) *Resources { return rs.view(s, false) }

func (rs *resourceScan) view(s *session.Session, fresh bool) *Resources {
	u, ok := s.Process().(host.UsageReader)
	if !ok {
		return nil
	}
	v := u.Usage(&rs.scan, fresh, s.NoteListeners)
	if v == nil {
		return nil
	}
	r := &Resources{CPUMs: v.CPUMs, MemoryBytes: v.MemoryBytes, Tasks: v.Tasks, Ports: make([]Listener, len(v.Ports))}
	for i, l := range v.Ports {
		r.Ports[i] = Listener{Port: l.Port, Address: l.Address}
	}
	return r
}

// portNames returns ":3000"-style names of the distinct ports, in order.
func (r *Resources) portNames() []string {
	names := make([]string, 0, len(r.Ports))
	for _, l := range r.Ports {
		names = append(names, fmt.Sprintf(":%d", l.Port))
	}
	return slices.Compact(names)
}

// listSuffix is what a list line shows of the resources:
// "  [:3000, 412 MiB]", or "" when there is nothing to show.
func (r *Resources) listSuffix() string {
	if r == nil {
		return ""
	}
	parts := r.portNames()
	if r.MemoryBytes > 0 {
		parts = append(parts, formatBytes(r.MemoryBytes))
	}
	if len(parts) == 0 {
		return ""
	}
	return "  [" + strings.Join(parts, ", ") + "]"
}

// closedPortsNote is the sentence an exit text gets when the session was
// last seen listening: " Its listening ports :3000, :3001 are closed."
func closedPortsNote(ports []string) string {
	switch len(ports) {
	case 0:
		return ""
	case 1:
		return " Its listening port " + ports[0] + " is closed."
	}
	return " Its listening ports " + strings.Join(ports, ", ") + " are closed."
}
