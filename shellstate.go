package bgexec

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/bgexec/bgexec/internal/allowlist"
	"github.com/bgexec/bgexec/internal/host"
)

// shellState is what one scope's execs left for the next one
// (Config.KeepShellState): a working directory and a whole environment
// on this machine; on a node, the variables the commands changed
// relative to the node's own environment.
type shellState struct {
	cwd string   // "" means the default workdir
	env []string // nil means the host's environment; on a node, the variables set
	// unset are the variables the commands unset on a node (names).
	unset []string
}

// shellStates holds every scope's shell state: one for this machine,
// and one per node. The zero value is ready.
type shellStates struct {
	mu     sync.Mutex                       // guards scopes
	scopes map[string]map[string]shellState // by scope, then node ("" for this machine)
}

func (s *shellStates) get(scope string) (shellState, bool) { return s.getOn(scope, "") }

// getOn returns the scope's state on a node ("" is this machine).
func (s *shellStates) getOn(scope, node string) (shellState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.scopes[scope][node]
	return st, ok
}

// setOn stores the scope's state on a node ("" is this machine).
func (s *shellStates) setOn(scope, node string, st shellState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scopes == nil {
		s.scopes = make(map[string]map[string]shellState)
	}
	if s.scopes[scope] == nil {
		s.scopes[scope] = make(map[string]shellState)
	}
	s.scopes[scope][node] = st
}

// reset forgets the scope's states, on this machine and every node.
func (s *shellStates) reset(scope string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := len(s.scopes[scope]) > 0
	delete(s.scopes, scope)
	return ok
}

// ResetShellState forgets the working directory and environment the
// scope's execs left (Config.KeepShellState): the next exec starts from
// the defaults again. It is what the process action "reset-shell" does.
// It reports whether there was a state to forget. Safe for concurrent use;
// an exec running meanwhile may still leave its state.
func (sc *Scope) ResetShellState(ctx context.Context) (bool, error) {
	if ctx == nil {
		panic("bgexec: nil context")
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return sc.reg.shells.reset(sc.key), nil
}

// parseState finds the last complete state block in data.
func parseState(data []byte) (cwd string, env []string, ok bool) {
	const begin, end = "\x00bgexec-state\x00", "\x00bgexec-end\x00"
	e := bytes.LastIndex(data, []byte(end))
	if e < 0 {
		return "", nil, false
	}
	b := bytes.LastIndex(data[:e], []byte(begin))
	if b < 0 {
		return "", nil, false
	}
	body := data[b+len(begin) : e+1] // keep the last entry's NUL
	dir, rest, found := bytes.Cut(body, []byte{0})
	if !found {
		return "", nil, false
	}
	cwd = strings.TrimSuffix(string(dir), "\n")
	for _, kv := range bytes.Split(rest, []byte{0}) {
		if i := bytes.IndexByte(kv, '='); i > 0 {
			env = append(env, string(kv))
		}
	}
	return cwd, env, true
}

// unmanagedKey reports keys the shell sets on its own, which never carry.
func unmanagedKey(k string) bool {
	switch k {
	case "PWD", "OLDPWD", "SHLVL", "_":
		return true
	}
	return false
}

// envMap makes a map of "K=V" entries; the last of a key wins.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// carry computes the next state from the one the exec started with
// (prev, whose env is the base the exec's environment was built on),
// the environment the shell started with (started), the call's env, and
// what the shell left (cwd, left). It returns the keys the command
// changed that the environment rules refuse, which are not carried.
func (sc *Scope) carry(prev shellState, base, started []string, callEnv map[string]string, startCwd, cwd string, left []string) (shellState, []string) {
	next := shellState{cwd: prev.cwd}
	if cwd != "" && cwd != startCwd {
		next.cwd = cwd
	}
	baseM, startM, leftM := envMap(base), envMap(started), envMap(left)
	keys := make(map[string]bool, len(baseM)+len(leftM))
	for k := range baseM {
		keys[k] = true
	}
	for k := range leftM {
		keys[k] = true
	}
	var refused []string
	out := make(map[string]string, len(keys))
	for k := range keys {
		bv, inBase := baseM[k]
		lv, inLeft := leftM[k]
		switch sc.changed(k, startM, leftM) {
		case changeCarry:
			if inLeft {
				out[k] = lv
			}
		case changeRefused:
			refused = append(refused, k)
			fallthrough
		default:
			// Unchanged by the command: the base value stays (a marker
			// or a per-call value applied to that call only).
			if inBase {
				out[k] = bv
			}
		}
	}
	next.env = make([]string, 0, len(out))
	for k, v := range out {
		next.env = append(next.env, k+"="+v)
	}
	slices.Sort(next.env)
	slices.Sort(refused)
	return next, refused
}

// What a command did to a variable (see changed).
const (
	changeNone    = iota // unchanged, or one the shell sets on its own
	changeCarry          // changed, and carried
	changeRefused        // changed, but refused by the environment rules
)

// changed says what the command did to variable k, from the environment
// its shell started with and the one it left: the same rules on this
// machine and on nodes.
func (sc *Scope) changed(k string, started, left map[string]string) int {
	lv, inLeft := left[k]
	sv, inStart := started[k]
	switch {
	case unmanagedKey(k), inLeft == inStart && lv == sv:
		return changeNone
	case k == "PATH":
		return changeCarry
	case sc.reg.env.ValidateOverrides(map[string]string{k: "x"}) != "":
		return changeRefused
	}
	return changeCarry
}

// carriedRefusedNote is the line a result gets when the command changed
// variables that do not carry.
func carriedRefusedNote(keys []string) string {
	return "Note: not carried to the next exec (refused by the environment rules): " + strings.Join(keys, ", ") + "."
}

// lookPathIn resolves name on the directories of path, as exec.LookPath
// does on $PATH; relative directories are skipped.
func lookPathIn(path string) func(string) (string, error) {
	return func(name string) (string, error) {
		if strings.Contains(name, "/") {
			return "", errors.New("not a bare name")
		}
		for _, dir := range filepath.SplitList(path) {
			if !filepath.IsAbs(dir) {
				continue
			}
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", os.ErrNotExist
	}
}

// checkerFor returns the allowlist checker for a scope whose carried
// state has PATH path: names resolve on it, and a listed name is the
// listed program only when it resolves to the same file as on the host's
// PATH.
func checkerFor(c *allowlist.Checker, path string) *allowlist.Checker {
	cc := *c
	cc.HostLookPath = c.LookPath
	cc.LookPath = lookPathIn(path)
	return &cc
}

func stateValue(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// carryState stores what a foreground exec's shell left (data, in its
// host's format) as the scope's state on that host, and notes in res what
// did not carry.
func (sc *Scope) carryState(res *Result, c *execCall, sp *host.Started, data []byte) {
	var next shellState
	var refused []string
	if c.host.node != "" {
		started, cwd, left, ok := parseNodeState(data)
		if !ok {
			return // no state written: exec'd away, killed, or its own EXIT trap
		}
		next, refused = sc.carryNode(c.prev, started, left, c.cwd, cwd)
	} else {
		cwd, left, ok := parseState(data)
		if !ok {
			return
		}
		base := c.prev.env
		if base == nil {
			base = os.Environ()
		}
		next, refused = sc.carry(c.prev, base, sp.Env, c.req.Env, c.cwd, cwd, left)
	}
	sc.reg.shells.setOn(sc.key, c.host.node, next)
	if len(refused) > 0 {
		res.Details.NotCarried = refused
		res.Content[0].Text += "\n\n" + carriedRefusedNote(refused)
	}
}

// allowlistChecker is the registry's allowlist checker, or, when the
// scope's shell state carries a PATH other than the host's, one that
// resolves names on the carried PATH (see checkerFor).
func (sc *Scope) allowlistChecker(node string) *allowlist.Checker {
	base := sc.reg.checker() // the configured entries and allow-always rules
	if !sc.reg.cfg.keepState {
		return base
	}
	if sc.reg.cfg.host == "node" {
		return sc.nodeAllowlistChecker(base, node)
	}
	prev, ok := sc.reg.shells.get(sc.key)
	if !ok || prev.env == nil {
		return base
	}
	path, _ := stateValue(prev.env, "PATH")
	if path == os.Getenv("PATH") {
		return base
	}
	return checkerFor(base, path)
}

// resetShell answers the process action reset-shell.
func (sc *Scope) resetShell(ctx context.Context) (*Result, error) {
	if !sc.reg.cfg.keepState {
		return textResult("Shell state is not kept here (Config.KeepShellState is off): every exec starts fresh.", Details{Status: StatusCompleted}), nil
	}
	had, err := sc.ResetShellState(ctx)
	if err != nil {
		return nil, err
	}
	if !had {
		return textResult("No shell state to reset: the next exec starts from the defaults.", Details{Status: StatusCompleted}), nil
	}
	return textResult("Shell state reset: the next exec starts in the default workdir with the host's environment.", Details{Status: StatusCompleted}), nil
}
