package bgexec

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	dockerhost "github.com/bgexec/bgexec/internal/host/docker"
	"github.com/bgexec/bgexec/internal/host/local"
	"github.com/bgexec/bgexec/internal/host/sandbox"
)

// hostSet is the registry's hosts, chosen once by NewRegistry from
// Config.Host: the gateway always (an elevated call runs there), the
// sandbox with Config.Sandbox, the nodes with host "node", the Docker
// host with Config.Docker, the pods with Config.Kubernetes. An exec call
// only picks one of them (pick).
type hostSet struct {
	kind      string           // Config.Host as resolved: gateway, sandbox, node, docker or kubernetes
	machine   *local.Host      // this machine's host, which the set owns (see close)
	gateway   host.Host        // machine, as the tool layer sees it
	sandbox   host.Host        // nil without Config.Sandbox
	sbx       *sandbox.Host    // the bubblewrap sandbox host, nil without Config.Sandbox (see closeSandboxPool)
	nodes     nodeHosts        // nil without nodes
	nodeNames []string         // the configured nodes, sorted
	defNode   string           // the default node's name, "" for none
	pods      PodHosts         // nil without Config.Kubernetes
	docker    *dockerhost.Host // nil without Config.Docker
}

// nodeHosts is the SSH nodes' hosts and connections (internal/host/ssh's
// pool): a host per configured node, and Close, which ends the
// connections and so every session on them.
type nodeHosts interface {
	Host(name string) host.Host
	Close()
}

// newHostSet builds the hosts of r from its resolved configuration and
// m, this machine's host, pods, the Kubernetes hosts, and docker, the
// Docker host (nil for none).
func newHostSet(r *Registry, m *local.Host, pods PodHosts, docker *dockerhost.Host) hostSet {
	hs := hostSet{kind: r.cfg.host, machine: m, gateway: m, nodes: r.nodes, nodeNames: nodeNames(r.cfg.nodes), defNode: r.cfg.defaultNode, pods: pods, docker: docker}
	if p := r.cfg.sandbox; p != nil {
		hs.sbx = sandbox.NewHost(m, p, r.cfg.sandboxPool)
		hs.sandbox = hs.sbx
	}
	return hs
}

// closeSandboxPool ends the sandbox host's pool of sandboxes started
// ahead of time; Close calls it once every session ended, so no exec
// call can take one, and before this machine's host closes.
func (hs *hostSet) closeSandboxPool() {
	if hs.sbx != nil {
		hs.sbx.Close()
	}
}

// shedDescriptors gives up what the hosts hold ahead of time for
// sessions not started yet (the sandboxes waiting in the pool, the
// descriptors of the spare cgroups), for an exec refused for want of
// descriptors, and returns how many things it gave up.
func (hs *hostSet) shedDescriptors() int {
	n := hs.machine.ShedSpares()
	if hs.sbx != nil {
		n += hs.sbx.ShedPool()
	}
	return n
}

// sweep retries what this machine's host could not release (a session
// cgroup not seen empty), and returns how soon it wants to be called
// again, 0 for not before something else wakes the sweeper.
func (hs *hostSet) sweep() time.Duration { return hs.machine.Sweep() }

// closeRemote ends the node connections, the pods' execs and the Docker
// host's containers, and so every session that runs off this machine.
func (hs *hostSet) closeRemote() {
	if hs.nodes != nil {
		hs.nodes.Close()
	}
	if hs.pods != nil {
		_ = hs.pods.Close() // Its sessions end as lost or killed; nothing else to report.
	}
	if hs.docker != nil {
		_ = hs.docker.Close() // Removes its containers; a failure leaves them labelled for the next.
	}
}

// close stops this machine's host (its spawner thread, watchdogs and
// cgroups) once every session ended, and the remote hosts.
func (hs *hostSet) close() {
	hs.closeSandboxPool()
	hs.closeRemote()
	hs.machine.Close()
}

// picked is the host of one exec call; node is the node's name on a node
// host, "" elsewhere; remote is set where the working directory is the
// remote host's (a node, a pod) and checked there.
type picked struct {
	host   host.Host
	node   string
	remote bool
}

// pick chooses the host of an exec call of scope, or returns the failure
// text: an unknown node, a node asked for where commands do not run on
// nodes.
func (hs *hostSet) pick(req *ExecRequest, scope string) (picked, string) {
	if hs.kind == "node" {
		name, msg := hs.pickNode(req.Node)
		if msg != "" {
			return picked{}, msg
		}
		return picked{host: nodeHost{hs.nodes.Host(name)}, node: name, remote: true}, ""
	}
	if n := strings.TrimSpace(req.Node); n != "" {
		return picked{}, fmt.Sprintf("Node %q given, but commands run on the %s here; node needs host=node (tools.exec.host).", n, hs.kind)
	}
	if hs.kind == "kubernetes" {
		return picked{host: hs.pods.ScopeHost(scope), remote: true}, ""
	}
	if hs.kind == "docker" && !req.Elevated {
		return picked{host: hs.docker.ForScope(scope)}, ""
	}
	if hs.sandbox != nil && !req.Elevated {
		return picked{host: hs.sandbox}, ""
	}
	// Elevation, when allowed, runs on this machine; nothing else does.
	return picked{host: hs.gateway}, ""
}

// nodeName is the configured name of the node an exec call with node
// name would run on, or "" when it would not run on a node.
func (hs *hostSet) nodeName(name string) string {
	if hs.kind != "node" || hs.nodes == nil {
		return ""
	}
	node, msg := hs.pickNode(name)
	if msg != "" {
		return ""
	}
	return node
}

// nodeHost is a node's host (internal/host/ssh) with its errors turned
// into the public ones (see nodeError).
type nodeHost struct{ host.Host }

// Start starts spec on the node.
func (n nodeHost) Start(ctx context.Context, spec *host.Spec) (*host.Started, error) {
	st, err := n.Host.Start(ctx, spec)
	return st, nodeError(err)
}
