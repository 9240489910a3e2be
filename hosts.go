package bgexec

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/host/sandbox"
)

// hostSet is the registry's hosts, chosen once by NewRegistry from
// Config.Host: the gateway always (an elevated call runs there), the
// sandbox with Config.Sandbox, the nodes with host "node". An exec call
// only picks one of them (pick).
type hostSet struct {
	kind      string    // Config.Host as resolved: gateway, sandbox or node
	gateway   host.Host // this machine
	sandbox   host.Host // nil without Config.Sandbox
	nodes     nodeHosts // nil without nodes
	nodeNames []string  // the configured nodes, sorted
	defNode   string    // the default node's name, "" for none
}

// nodeHosts is the SSH nodes' hosts and connections (internal/host/ssh's
// pool): a host per configured node, and Close, which ends the
// connections and so every session on them.
type nodeHosts interface {
	Host(name string) host.Host
	Close()
}

// newHostSet builds the hosts of r from its resolved configuration.
func newHostSet(r *Registry) hostSet {
	gw := &gatewayHost{r: r}
	hs := hostSet{kind: r.cfg.host, gateway: gw, nodes: r.nodes, nodeNames: nodeNames(r.cfg.nodes), defNode: r.cfg.defaultNode}
	if p := r.cfg.sandbox; p != nil {
		hs.sandbox = &sandboxHost{local: gw, plan: p}
	}
	return hs
}

// picked is the host of one exec call; node is the node's name on a node
// host, "" on this machine.
type picked struct {
	host host.Host
	node string
}

// pick chooses the host of an exec call, or returns the failure text: an
// unknown node, a node asked for where commands do not run on nodes.
func (hs *hostSet) pick(req *ExecRequest) (picked, string) {
	if hs.kind == "node" {
		name, msg := hs.pickNode(req.Node)
		if msg != "" {
			return picked{}, msg
		}
		return picked{host: nodeHost{hs.nodes.Host(name)}, node: name}, ""
	}
	if n := strings.TrimSpace(req.Node); n != "" {
		return picked{}, fmt.Sprintf("Node %q given, but commands run on the %s here; node needs host=node (tools.exec.host).", n, hs.kind)
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

// gatewayHost runs commands on this machine, in a session cgroup when
// containment is on, else in a process group of their own.
type gatewayHost struct{ r *Registry }

func (g *gatewayHost) Name() string { return "gateway" }

// Start starts spec on this machine.
func (g *gatewayHost) Start(_ context.Context, spec *host.Spec) (*host.Started, error) {
	return g.start(g.localSpec(spec), spec, "")
}

// localSpec turns spec into the spawn of the configured shell on this
// machine: its argv (or script), environment and state descriptor.
func (g *gatewayHost) localSpec(spec *host.Spec) *spawnSpec {
	st := &g.r.cfg
	command := spec.Command
	var stateFile *os.File
	if spec.Carry != nil {
		// Best effort: without a memfd the state is not kept.
		if f, err := stateMemfd(); err == nil {
			stateFile = f
			command = statePrologue + spec.Command
		}
	}
	args, script := shellArgs(st.shell, command)
	ls := &spawnSpec{
		path:      st.shellPath,
		args:      args,
		script:    script,
		dir:       spec.Dir,
		stdinPipe: spec.StdinPipe,
		pty:       spec.PTY,
		stateFile: stateFile,
		cols:      spec.Cols,
		rows:      spec.Rows,
	}
	if ls.path == "" {
		ls.path = st.shell
		if p, err := exec.LookPath(st.shell); err == nil {
			ls.path = p
		}
	}
	base := spec.Env.Carried
	if base == nil {
		base = os.Environ()
	}
	inherited := withDefaults(base, spec.Env.Defaults)
	if spec.PTY {
		inherited = withoutSizeVars(inherited)
	}
	// No pager may wait for a key on a terminal nobody reads; they win over
	// inherited values (a per-call value is refused).
	ls.env = g.r.env.Merge(inherited, spec.Env.Overrides, append([]string{"PAGER=cat", "GIT_PAGER=cat"}, spec.Env.Forced...)...)
	if len(spec.Env.Added) > 0 {
		ls.env = host.SetEnv(ls.env, spec.Env.Added)
	}
	return ls
}

// start spawns ls (retrying on pipes when no terminal could be opened)
// and hands its session what it owns.
func (g *gatewayHost) start(ls *spawnSpec, spec *host.Spec, hint string) (*host.Started, error) {
	sp, err := g.r.spawn(ls)
	var warnings []string
	if err != nil && ls.pty {
		warnings = append(warnings, fmt.Sprintf("Warning: PTY spawn failed (%v); retrying without PTY for `%s`.", err, host.MiddleTruncate(spec.Command, 200)))
		ls.pty, ls.stdinPipe = false, true
		spec.PTY, spec.StdinPipe = false, true
		sp, err = g.r.spawn(ls)
	}
	if err != nil {
		if ls.stateFile != nil {
			_ = ls.stateFile.Close()
		}
		if len(warnings) > 0 {
			return nil, fmt.Errorf("%w (%s)", err, warnings[0])
		}
		return nil, err
	}
	hs := &host.Started{
		Process:  sp.child,
		Outputs:  sp.outputs,
		Stdin:    sp.stdin,
		TTYName:  sp.ttyName,
		Warnings: warnings,
		Env:      ls.env,
		Hint:     hint,
	}
	if f := ls.stateFile; f != nil {
		hs.State = func(keep bool) ([]byte, bool) {
			defer f.Close()
			if !keep {
				return nil, false
			}
			return readState(f)
		}
	}
	return hs, nil
}

// sandboxHost runs commands on this machine inside bubblewrap (see
// package sandbox), in a workdir the sandbox exposes.
type sandboxHost struct {
	local *gatewayHost
	plan  *sandbox.Plan
}

func (s *sandboxHost) Name() string { return "sandbox" }

// Place checks that dir lies in a path the sandbox exposes.
func (s *sandboxHost) Place(dir string) string {
	_, _, msg := s.plan.Place(dir)
	return msg
}

// sandboxPlaced is what Prepare left for Start: the workdir's real path
// and whether it lies in a read-only path.
type sandboxPlaced struct {
	real     string
	readOnly bool
}

// Prepare checks spec's workdir and the configured paths (see
// sandbox.Plan.Prepare).
func (s *sandboxHost) Prepare(spec *host.Spec) string {
	real, ro, msg := s.plan.Prepare(spec.Dir)
	if msg != "" {
		return msg
	}
	spec.Prepared = sandboxPlaced{real: real, readOnly: ro}
	return ""
}

// Start starts spec inside a fresh sandbox.
func (s *sandboxHost) Start(_ context.Context, spec *host.Spec) (*host.Started, error) {
	pl, ok := spec.Prepared.(sandboxPlaced)
	if !ok {
		if msg := s.Prepare(spec); msg != "" {
			return nil, fmt.Errorf("%s", msg)
		}
		pl = spec.Prepared.(sandboxPlaced)
	}
	ls := s.local.localSpec(spec)
	ls.sandbox, ls.sandboxDir, ls.sandboxReadOnly = s.plan, pl.real, pl.readOnly
	ls.env = s.plan.Environ(ls.env, pl.real, pl.readOnly)
	return s.local.start(ls, spec, s.plan.ReadOnlyHint(spec.Dir, pl.readOnly))
}

// nodeHost is a node's host (internal/host/ssh) with its errors turned
// into the public ones (see nodeError).
type nodeHost struct{ host.Host }

// Start starts spec on the node.
func (n nodeHost) Start(ctx context.Context, spec *host.Spec) (*host.Started, error) {
	st, err := n.Host.Start(ctx, spec)
	return st, nodeError(err)
}
