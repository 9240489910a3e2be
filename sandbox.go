package bgexec

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

// Sandbox runs every command of a registry inside bubblewrap (bwrap), in
// namespaces of its own: set [Config.Sandbox] and the host "auto" becomes
// "sandbox". The zero value is the documented defaults: no network, the
// root file system read-only, the working directory and a private /tmp
// writable, the host user's $HOME hidden. [NewRegistry] copies the value
// and checks once that bwrap runs here; a Sandbox may be shared between
// goroutines as long as nobody mutates it.
//
// Each command gets its own pid, mount, ipc, uts, cgroup and network
// namespaces and a user namespace that maps the caller's uid and gid onto
// themselves; all capabilities dropped; no new privileges; a seccomp
// filter that refuses the system calls that reach into the kernel's global
// state or other processes (mount, ptrace, namespaces, modules, keyrings,
// bpf, perf, reboot …); a fresh /proc that shows only the command's own
// processes, with the kernel's settings (/proc/sys, sysrq-trigger, irq,
// bus, fs) read-only, and a minimal /dev. The session's cgroup is the root
// of its cgroup namespace and cgroupfs is read-only, so nothing inside can
// leave it. The sandbox's first process ending ends everything in it.
//
// A call's workdir must lie, once its symbolic links are resolved on the
// host, in a directory the configuration exposes: the registry's default
// workdir (Config.Workdir, else the process's working directory) or a
// WritablePaths entry, where it is writable, or a ReadOnlyPaths entry,
// where it is read-only (the deepest of them that holds it decides). It
// is never "/", and never at or below a HidePaths entry, unless the
// directory that holds it lies in that hidden path itself (a default
// workdir below the hidden $HOME shows through). A relative workdir is
// taken from the default. Anything else is a failure result that names
// the allowed directories, and nothing runs.
//
// Every directory bound into the sandbox (the workdir, WritablePaths,
// ReadOnlyPaths) is opened at each spawn without following any symbolic
// link, by openat2 with RESOLVE_NO_SYMLINKS, or on kernels without openat2
// (before 5.6) by the same walk one component at a time, and bwrap binds
// that descriptor (--bind-fd, in bubblewrap 0.10.0 and Debian 12's
// 0.8.0-2+deb12u1; NewRegistry refuses an older bwrap). So a directory
// swapped for a link after the check makes the spawn fail, or bwrap binds
// the directory that was checked; and a configured path turned into a link
// since NewRegistry fails every call, naming it, until it is put back.
//
// The command keeps the caller's uid. On a root host it writes only where
// the mounts allow, but reads what root reads of the bound file system:
// root-only files such as /etc/shadow, the host keys in /etc/ssh, other
// users' homes. Hide such directories with HidePaths, bind less with
// MinimalRoot, or run the host as an unprivileged user, whose permissions
// then apply inside too.
type Sandbox struct {
	// Bwrap is the path of the bubblewrap binary. Empty means "bwrap"
	// looked up on PATH by NewRegistry.
	Bwrap string
	// Network gives the command the host's network. False (the default)
	// gives it a network namespace of its own with only a loopback
	// interface: nothing outside, the host's 127.0.0.1 included, is
	// reachable.
	Network bool
	// WritablePaths are host paths bound read-write, besides the working
	// directory of each call (writable when it lies in the default
	// workdir or one of these). Each must be an absolute path to an
	// existing file or directory; symbolic links are resolved by
	// NewRegistry, and a path that is a link later fails each call.
	// Default none.
	WritablePaths []string
	// ReadOnlyPaths are host paths bound read-only. With the whole root
	// bound (MinimalRoot false) they matter below /tmp or a hidden path,
	// which they show through, and as places a call's workdir may lie in
	// (read-only); with MinimalRoot they add to the system directories.
	// Same rules as WritablePaths. Default none.
	ReadOnlyPaths []string
	// HidePaths are replaced by an empty, writable tmpfs private to each
	// command. Nil means the host user's $HOME (when set and not "/") and,
	// without Network, /run, whose service sockets (a container runtime's,
	// D-Bus) a read-only bind would still let a command connect to; an
	// empty non-nil slice hides nothing. The default workdir and the
	// writable and read-only paths show through a hidden path that
	// contains them; a workdir named below a hidden path otherwise is
	// refused. Paths that do not exist are skipped. Programs
	// installed under the hidden $HOME (pyenv, nvm, ~/.local/bin, ~/go/bin)
	// are not found inside unless their directories are in ReadOnlyPaths.
	HidePaths []string
	// MinimalRoot binds only the system directories that exist of /usr,
	// /bin, /sbin, /lib, /lib32, /lib64 and /etc (read-only), plus the
	// paths above, instead of the whole root file system. Default false.
	MinimalRoot bool
}

// sandboxPlan is a validated Sandbox: absolute, clean, link-free paths.
type sandboxPlan struct {
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
	// testHook, set only by tests (export_test.go), runs at each stage
	// of a spawn, on the thread that forks bwrap.
	testHook func(stage string)
}

// sandboxRoot is a directory a sandboxed call's workdir may lie in.
type sandboxRoot struct {
	path      string
	readOnly  bool
	isDefault bool
}

// resolveSandbox validates sb. home is the host user's $HOME.
func resolveSandbox(sb *Sandbox, home string) (*sandboxPlan, error) {
	p := &sandboxPlan{network: sb.Network, minimal: sb.MinimalRoot}
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

// writableSummary names what a sandboxed command may write, for the tool
// description and the read-only hint: cwd ("" = "the working directory")
// unless it lies in a read-only path, /tmp, the writable paths and the
// hidden ones.
func (p *sandboxPlan) writableSummary(cwd string, cwdReadOnly bool) string {
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

// readOnlyHint is the line the first "Read-only file system" of a
// sandboxed session adds to a result; cwdReadOnly says the working
// directory lies in a read-only path.
func (p *sandboxPlan) readOnlyHint(cwd string, cwdReadOnly bool) string {
	h := "Note: this command runs in a sandbox where the file system is read-only except " + p.writableSummary(cwd, cwdReadOnly) + "."
	if cwdReadOnly {
		h += " Its working directory, " + cwd + ", lies in a read-only path: to write there, use a workdir in a writable one."
	}
	return h
}

// workdirSummary names where a workdir may lie, for the tool description.
func (p *sandboxPlan) workdirSummary() string {
	parts := []string{"the default working directory"}
	parts = append(parts, p.writable...)
	for _, r := range p.readOnly {
		parts = append(parts, r+" (read-only)")
	}
	return "A workdir must lie in " + strings.Join(parts, ", ") + "."
}

// ToolDefinitions returns the tool definitions as [ToolDefinitions] does,
// with the exec description saying where this registry runs commands: on
// this machine, or in a sandbox (with or without network, and what is
// writable there), so a model does not retry blindly. Safe for concurrent
// use.
func (r *Registry) ToolDefinitions() []ToolDefinition {
	return describeTools(r.cfg.sandbox)
}

// ToolDefinitionsFor returns the tool definitions a registry made from cfg
// would return from [Registry.ToolDefinitions], without making one (for a
// server that lists its tools before its first registry starts). It
// checks cfg.Sandbox's paths as NewRegistry does, but does not run
// bubblewrap; an error says which path is wrong. Safe for concurrent use.
func ToolDefinitionsFor(cfg Config) ([]ToolDefinition, error) {
	if cfg.Sandbox == nil {
		return ToolDefinitions(), nil
	}
	p, err := resolveSandbox(cfg.Sandbox, userHome())
	if err != nil {
		return nil, err
	}
	return describeTools(p), nil
}

// describeTools returns the tool definitions for commands run in p (nil:
// on this machine).
func describeTools(p *sandboxPlan) []ToolDefinition {
	defs := ToolDefinitions()
	if p != nil {
		net := "no network access (only its own loopback)"
		if p.network {
			net = "the host's network"
		}
		// The first line, which says where commands run, is replaced.
		_, rest, _ := strings.Cut(defs[0].Description, "\n")
		defs[0].Description = "Run a shell command in a sandbox (the shell's -c, so pipes, && and globs work). " +
			"The sandbox has " + net + "; the file system is read-only except " + p.writableSummary("", false) +
			"; other processes of the machine are invisible. Processes a command leaves running in the background end with it. " +
			p.workdirSummary() +
			"\n" + rest
	}
	return defs
}

// sandboxHome is HOME inside the sandbox: the host's when a command can
// write there (a hidden or writable path holds it), else /tmp.
func (p *sandboxPlan) sandboxHome(home, cwd string) string {
	if home != "" && home != "/" && p.writableInside(home, cwd) {
		return home
	}
	return "/tmp"
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// userHome is the host user's home directory, "" if unknown.
func userHome() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(h); err == nil {
		return real
	}
	return filepath.Clean(h)
}

// prepare checks that cwd may be the sandbox's working directory (see
// placeWorkdir) and that no configured path has changed since
// NewRegistry, and returns cwd's real path and whether it lies in a
// read-only path; or the failure text. The spawn opens the directories
// again without following links and binds what it opened.
func (p *sandboxPlan) prepare(cwd string) (real string, readOnly bool, failure string) {
	real, root, msg := p.placeWorkdir(cwd)
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

// defaultRoot is the real path of the directory a call without workdir
// runs in: Config.Workdir as resolved at NewRegistry (not resolved again,
// so a link put in its place since is refused at the spawn rather than
// followed), else the process's working directory; "" when unknown.
func (p *sandboxPlan) defaultRoot() string {
	d := defaultWorkdir(p.workdir)
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
func (p *sandboxPlan) roots() []sandboxRoot {
	var out []sandboxRoot
	add := func(r sandboxRoot) {
		if !slices.ContainsFunc(out, func(o sandboxRoot) bool { return o.path == r.path }) {
			out = append(out, r)
		}
	}
	if d := p.defaultRoot(); d != "" && d != "/" {
		add(sandboxRoot{path: d, isDefault: true})
	}
	for _, w := range p.writable {
		add(sandboxRoot{path: w})
	}
	for _, r := range p.readOnly {
		add(sandboxRoot{path: r, readOnly: true})
	}
	return out
}

// placeWorkdir resolves every symbolic link of cwd on the host and finds
// the root it lies in: the deepest root that holds it. A workdir in no
// root, or at or below a hidden path that its root does not lie in, gets
// the failure text.
func (p *sandboxPlan) placeWorkdir(cwd string) (real string, root sandboxRoot, msg string) {
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
		if !within(real, r.path) {
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
		if within(real, h) && !within(roots[best].path, h) {
			return "", root, "workdir " + shown + " is hidden in the sandbox (it lies in " + strconv.Quote(h) + ", a hidden path): command was not executed. " + rootsAdvice(roots)
		}
	}
	return real, roots[best], ""
}

// rootsAdvice tells the model where a workdir may lie.
func rootsAdvice(roots []sandboxRoot) string {
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

// environ points HOME, and TMPDIR when set, at directories a command may
// write inside the sandbox. cwd is the working directory's real path,
// read-only when it lies in a read-only path.
func (p *sandboxPlan) environ(env []string, cwd string, cwdReadOnly bool) []string {
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
		home = userHome()
	}
	return append(out, "HOME="+p.sandboxHome(filepath.Clean(home), cwd))
}

// writableInside reports whether a command can write at path; cwd is the
// writable working directory, "" for none.
func (p *sandboxPlan) writableInside(path, cwd string) bool {
	path = filepath.Clean(path)
	under := func(dirs []string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return within(path, d) })
	}
	return (cwd != "" && within(path, cwd)) || within(path, "/tmp") || under(p.writable) || under(p.hide)
}
