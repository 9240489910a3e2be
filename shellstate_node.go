package bgexec

import (
	"bytes"
	"slices"

	"github.com/bgexec/bgexec/internal/allowlist"
)

// Shell state on nodes (Config.KeepShellState with Host "node").
//
// The state is kept per scope and per node: what an exec on node A left
// applies to the scope's next exec on A, never to one on node B. The node
// host (internal/host/ssh) captures it as on this machine, without
// touching the output, in a state file on the node that it reads back
// when the session ends (host.Started.State). The node's environment is
// its own (the login's), so a node's state is not a whole environment but
// what the commands changed: the variables they set and those they unset,
// which the node host applies before the call's own env (host.Env's
// Carried). What carries is decided here, by this machine's environment
// rules (carryNode).

// parseNodeState splits a node's state file into the environment the
// shell started with and what its EXIT trap left.
func parseNodeState(data []byte) (started []string, cwd string, left []string, ok bool) {
	const begin, end = "\x00bgexec-start\x00", "\x00bgexec-started\x00"
	b := bytes.Index(data, []byte(begin))
	e := bytes.Index(data, []byte(end))
	if b < 0 || e < b {
		return nil, "", nil, false
	}
	for _, kv := range bytes.Split(data[b+len(begin):e], []byte{0}) {
		if i := bytes.IndexByte(kv, '='); i > 0 {
			started = append(started, string(kv))
		}
	}
	cwd, left, ok = parseState(data[e+len(end):])
	return started, cwd, left, ok
}

// validName reports whether k can be a shell variable's name.
func validName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// carryNode computes a node's next state from the one the exec started
// with (prev), the environment its shell started with and the one it
// left, by the rules of this machine (see changed): a changed variable
// is set or unset from now on. It returns the changed keys the
// environment rules refuse, which are not carried.
func (sc *Scope) carryNode(prev shellState, started, left []string, startCwd, cwd string) (shellState, []string) {
	next := shellState{cwd: prev.cwd}
	if cwd != "" && cwd != startCwd {
		next.cwd = cwd
	}
	set := envMap(prev.env)
	unset := make(map[string]bool, len(prev.unset))
	for _, k := range prev.unset {
		unset[k] = true
	}
	startM, leftM := envMap(started), envMap(left)
	keys := make(map[string]bool, len(startM)+len(leftM))
	for k := range startM {
		keys[k] = true
	}
	for k := range leftM {
		keys[k] = true
	}
	var refused []string
	for k := range keys {
		switch sc.changed(k, startM, leftM) {
		case changeRefused:
			refused = append(refused, k)
		case changeCarry:
			if !validName(k) {
				continue
			}
			if v, ok := leftM[k]; ok {
				set[k] = v
				delete(unset, k)
			} else {
				delete(set, k)
				unset[k] = true
			}
		}
	}
	for k, v := range set {
		next.env = append(next.env, k+"="+v)
	}
	for k := range unset {
		next.unset = append(next.unset, k)
	}
	slices.Sort(next.env)
	slices.Sort(next.unset)
	slices.Sort(refused)
	return next, refused
}

// errNodePath is why a name does not resolve on a node's carried PATH.
type errNodePath struct{}

func (errNodePath) Error() string { return "the carried PATH is the node's: not resolved here" }

// nodeAllowlistChecker is the allowlist checker for an exec on node
// name: when the scope's state there changed PATH, a bare listed name is
// not taken for the listed program, since which file the carried PATH
// names on the node cannot be checked from here (a full path still
// matches as before).
func (sc *Scope) nodeAllowlistChecker(base *allowlist.Checker, name string) *allowlist.Checker {
	node := sc.reg.hosts.nodeName(name)
	if node == "" {
		return base // the exec fails on the node name anyway
	}
	prev, ok := sc.reg.shells.getOn(sc.key, node)
	if !ok {
		return base
	}
	_, setPath := stateValue(prev.env, "PATH")
	if !setPath && !slices.Contains(prev.unset, "PATH") {
		return base
	}
	cc := *base
	cc.HostLookPath = base.LookPath
	cc.LookPath = func(string) (string, error) { return "", errNodePath{} }
	return &cc
}
