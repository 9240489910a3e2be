// Package sandbox runs commands of this machine inside bubblewrap: it
// validates a sandbox's configuration, checks once that bwrap works here
// (probe), places a call's working directory among the paths the sandbox
// exposes, and builds the bwrap command line, its mounts (directories
// opened without following links and bound by descriptor) and its
// seccomp filter. Starting the process is the local host's job; this
// package only says what to run. It also keeps a pool of sandboxes
// started ahead of time (Pool, Warm), each used by one session. See
// docs/sandbox.md for the design.
package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Config is a sandbox's configuration, as the public bgexec.Sandbox
// gives it (see its documentation): bubblewrap's path, the network, and
// the paths bound writable, bound read-only and hidden.
type Config struct {
	Bwrap         string
	Network       bool
	WritablePaths []string
	ReadOnlyPaths []string
	HidePaths     []string
	MinimalRoot   bool
}

// Plan is a validated Sandbox: absolute, clean, link-free paths.
type Plan struct {
	bwrap    string
	network  bool
	writable []string
	readOnly []string
	hide     []string
	minimal  bool
	seccomp  []byte // the BPF program handed to bwrap --seccomp
	// workdir is Config.Workdir with its symbolic links resolved at
	// NewRegistry; "" means the process's working directory, looked up
	// at each call.
	workdir string
	// defaultDir is where a call without workdir runs, given the
	// configured default (bgexec's default-workdir rule).
	defaultDir func(configured string) string
	// testHook, set only by tests (export_test.go), runs at each stage
	// of a spawn, on the thread that forks bwrap.
	testHook func(stage string)
}

// Root is a directory a sandboxed call's workdir may lie in.
type Root struct {
	path      string
	readOnly  bool
	isDefault bool
}

// Resolve validates sb. home is the host user's $HOME.
func Resolve(sb Config, home string) (*Plan, error) {
	p := &Plan{network: sb.Network, minimal: sb.MinimalRoot}
	var err error
	if p.writable, err = sandboxPaths("WritablePaths", sb.WritablePaths, true); err != nil {
		return nil, err
	}
	if p.readOnly, err = sandboxPaths("ReadOnlyPaths", sb.ReadOnlyPaths, true); err != nil {
		return nil, err
	}
	hide := sb.HidePaths
	if hide == nil {
		if home != "" && filepath.Clean(home) != "/" {
			hide = append(hide, home)
		}
		if !sb.Network {
			// /run holds the host's service sockets (a container
			// runtime's, D-Bus, systemd's). A read-only mount does not
			// stop a connect(2), and the caller's uid reaches them.
			hide = append(hide, "/run")
		}
	}
	if p.hide, err = sandboxPaths("HidePaths", hide, false); err != nil {
		return nil, err
	}
	return p, nil
}

// sandboxPaths checks and canonicalises one list of paths. Paths that must
// exist have their symbolic links resolved; others are resolved when they
// exist and dropped when they do not.
func sandboxPaths(field string, in []string, mustExist bool) ([]string, error) {
	var out []string
	for _, p := range in {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("bgexec: Sandbox.%s: %q is not an absolute path", field, p)
		}
		if strings.ContainsAny(p, "\x00") {
			return nil, fmt.Errorf("bgexec: Sandbox.%s: %q contains a NUL byte", field, p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			if mustExist {
				return nil, fmt.Errorf("bgexec: Sandbox.%s: %q: %w", field, p, err)
			}
			continue
		}
		if real == "/" {
			return nil, fmt.Errorf("bgexec: Sandbox.%s: %q is the root directory; name a directory below it", field, p)
		}
		if !slices.Contains(out, real) {
			out = append(out, real)
		}
	}
	return out, nil
}

// WritableSummary names what a sandboxed command may write, for the tool
// description and the read-only hint: cwd ("" = "the working directory")
// unless it lies in a read-only path, /tmp, the writable paths and the
// hidden ones.
func (p *Plan) WritableSummary(cwd string, cwdReadOnly bool) string {
	if cwd == "" {
		cwd = "the working directory"
	}
	var parts []string
	if !cwdReadOnly {
		parts = append(parts, cwd)
	}
	parts = append(parts, p.writable...)
	parts = append(parts, "/tmp (private to the command, emptied when it ends)")
	if len(p.hide) > 0 {
		parts = append(parts, strings.Join(p.hide, ", ")+" (hidden: empty and private to the command)")
	}
	return strings.Join(parts, ", ")
}

// ReadOnlyHint is the line the first "Read-only file system" of a
// sandboxed session adds to a result; cwdReadOnly says the working
// directory lies in a read-only path.
func (p *Plan) ReadOnlyHint(cwd string, cwdReadOnly bool) string {
	h := "Note: this command runs in a sandbox where the file system is read-only except " + p.WritableSummary(cwd, cwdReadOnly) + "."
	if cwdReadOnly {
		h += " Its working directory, " + cwd + ", lies in a read-only path: to write there, use a workdir in a writable one."
	}
	return h
}

// WorkdirSummary names where a workdir may lie, for the tool description.
func (p *Plan) WorkdirSummary() string {
	parts := []string{"the default working directory"}
	parts = append(parts, p.writable...)
	for _, r := range p.readOnly {
		parts = append(parts, r+" (read-only)")
	}
	return "A workdir must lie in " + strings.Join(parts, ", ") + "."
}

// sandboxHome is HOME inside the sandbox: the host's when a command can
// write there (a hidden or writable path holds it), else /tmp.
func (p *Plan) sandboxHome(home, cwd string) string {
	if home != "" && home != "/" && p.writableInside(home, cwd) {
		return home
	}
	return "/tmp"
}

// Within reports whether path is dir or below it (both clean).
func Within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// UserHome is the host user's home directory, "" if unknown.
func UserHome() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(h); err == nil {
		return real
	}
	return filepath.Clean(h)
}

// Prepare checks that cwd may be the sandbox's working directory (see
// Place) and that no configured path has changed since
// NewRegistry, and returns cwd's real path and whether it lies in a
// read-only path; or the failure text. The spawn opens the directories
// again without following links and binds what it opened.
func (p *Plan) Prepare(cwd string) (real string, readOnly bool, failure string) {
	real, root, msg := p.Place(cwd)
	if msg != "" {
		return "", false, msg
	}
	for _, b := range slices.Concat(p.writable, p.readOnly) {
		f, err := openRealPath(b)
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, fmt.Sprintf("The sandbox cannot start: its path %q no longer exists (%v).", b, err)
		}
		if err != nil {
			return "", false, fmt.Sprintf("The sandbox cannot start: its path %q is no longer the directory it was at NewRegistry (%v): command was not executed.", b, err)
		}
		_ = f.Close() // Best effort: an O_PATH descriptor, only looked at.
	}
	return real, root.readOnly, ""
}

// Network reports whether commands get the host's network.
func (p *Plan) Network() bool { return p.network }

// defaultRoot is the real path of the directory a call without workdir
// runs in: Config.Workdir as resolved at NewRegistry (not resolved again,
// so a link put in its place since is refused at the spawn rather than
// followed), else the process's working directory; "" when unknown.
func (p *Plan) defaultRoot() string {
	d := p.workdir
	if p.defaultDir != nil {
		d = p.defaultDir(p.workdir)
	}
	if p.workdir != "" && d == p.workdir {
		return d
	}
	real, err := filepath.EvalSymlinks(d)
	if err != nil {
		return ""
	}
	return real
}

// roots lists the directories a workdir may lie in: the default workdir
// and the writable paths (read-write), and the read-only paths, each path
// once (the first, read-write, wins). The root directory never is one.
func (p *Plan) roots() []Root {
	var out []Root
	add := func(r Root) {
		if !slices.ContainsFunc(out, func(o Root) bool { return o.path == r.path }) {
			out = append(out, r)
		}
	}
	if d := p.defaultRoot(); d != "" && d != "/" {
		add(Root{path: d, isDefault: true})
	}
	for _, w := range p.writable {
		add(Root{path: w})
	}
	for _, r := range p.readOnly {
		add(Root{path: r, readOnly: true})
	}
	return out
}

// Place resolves every symbolic link of cwd on the host and finds
// the root it lies in: the deepest root that holds it. A workdir in no
// root, or at or below a hidden path that its root does not lie in, gets
// the failure text.
func (p *Plan) Place(cwd string) (real string, root Root, msg string) {
	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return "", root, fmt.Sprintf("The sandbox cannot use the workdir %q (%v); pass an existing directory.", cwd, err)
	}
	if real == "/" {
		return "", root, `The sandbox does not make the whole file system writable, so the workdir cannot be "/"; pass a directory below it.`
	}
	roots := p.roots()
	best := -1
	for i, r := range roots {
		if !Within(real, r.path) {
			continue
		}
		if best < 0 || len(r.path) > len(roots[best].path) {
			best = i
		}
	}
	shown := strconv.Quote(cwd)
	if real != cwd {
		shown += " (" + strconv.Quote(real) + " on the host)"
	}
	if best < 0 {
		return "", root, "workdir " + shown + " is outside the sandbox's paths: command was not executed. " + rootsAdvice(roots)
	}
	for _, h := range p.hide {
		if Within(real, h) && !Within(roots[best].path, h) {
			return "", root, "workdir " + shown + " is hidden in the sandbox (it lies in " + strconv.Quote(h) + ", a hidden path): command was not executed. " + rootsAdvice(roots)
		}
	}
	return real, roots[best], ""
}

// rootsAdvice tells the model where a workdir may lie.
func rootsAdvice(roots []Root) string {
	if len(roots) == 0 {
		return "The sandbox has no directory a command may run in: the host must set Config.Workdir or Sandbox.WritablePaths."
	}
	names := make([]string, len(roots))
	for i, r := range roots {
		names[i] = r.path
		switch {
		case r.isDefault:
			names[i] += " (the default)"
		case r.readOnly:
			names[i] += " (read-only)"
		}
	}
	return "Use a directory under " + strings.Join(names, ", ") + ", or omit workdir for the default."
}

// Environ points HOME, and TMPDIR when set, at directories a command may
// write inside the sandbox. cwd is the working directory's real path,
// read-only when it lies in a read-only path.
func (p *Plan) Environ(env []string, cwd string, cwdReadOnly bool) []string {
	if cwdReadOnly {
		cwd = ""
	}
	out := make([]string, 0, len(env)+1)
	home := ""
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME":
			home = v
			continue
		case "TMPDIR":
			if !p.writableInside(v, cwd) {
				kv = "TMPDIR=/tmp"
			}
		}
		out = append(out, kv)
	}
	if home == "" {
		home = UserHome()
	}
	return append(out, "HOME="+p.sandboxHome(filepath.Clean(home), cwd))
}

// writableInside reports whether a command can write at path; cwd is the
// writable working directory, "" for none.
func (p *Plan) writableInside(path, cwd string) bool {
	path = filepath.Clean(path)
	under := func(dirs []string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return Within(path, d) })
	}
	return (cwd != "" && Within(path, cwd)) || Within(path, "/tmp") || under(p.writable) || under(p.hide)
}
