package bgexec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	// directory of each call, which always is. Each must be an absolute
	// path to an existing file or directory; symbolic links are resolved
	// by NewRegistry. Default none.
	WritablePaths []string
	// ReadOnlyPaths are host paths bound read-only. With the whole root
	// bound (MinimalRoot false) they matter only below /tmp or a hidden
	// path, which they show through; with MinimalRoot they add to the
	// system directories. Same rules as WritablePaths. Default none.
	ReadOnlyPaths []string
	// HidePaths are replaced by an empty, writable tmpfs private to each
	// command. Nil means the host user's $HOME (when set and not "/") and,
	// without Network, /run, whose service sockets (a container runtime's,
	// D-Bus) a read-only bind would still let a command connect to; an
	// empty non-nil slice hides nothing. The working directory and the
	// writable and read-only paths show through a hidden path that
	// contains them. Paths that do not exist are skipped. Programs
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
	// testHook, set only by tests (export_test.go), runs at each stage
	// of a spawn, on the thread that forks bwrap.
	testHook func(stage string)
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
// description and the read-only hint: cwd ("" = "the working directory"),
// /tmp, the writable paths and the hidden ones.
func (p *sandboxPlan) writableSummary(cwd string) string {
	if cwd == "" {
		cwd = "the working directory"
	}
	parts := []string{cwd}
	parts = append(parts, p.writable...)
	parts = append(parts, "/tmp (private to the command, emptied when it ends)")
	if len(p.hide) > 0 {
		parts = append(parts, strings.Join(p.hide, ", ")+" (hidden: empty and private to the command)")
	}
	return strings.Join(parts, ", ")
}

// readOnlyHint is the line the first "Read-only file system" of a
// sandboxed session adds to a result.
func (p *sandboxPlan) readOnlyHint(cwd string) string {
	return "Note: this command runs in a sandbox where the file system is read-only except " + p.writableSummary(cwd) + "."
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
// bubblewrap; an error says which path is wrong.
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
			"The sandbox has " + net + "; the file system is read-only except " + p.writableSummary("") +
			"; other processes of the machine are invisible. Processes a command leaves running in the background end with it." +
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

// prepare makes spec a sandboxed spawn in cwd, or returns the failure text
// when cwd cannot be the sandbox's writable working directory.
func (p *sandboxPlan) prepare(spec *spawnSpec, cwd string) string {
	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return fmt.Sprintf("The sandbox cannot use the workdir %q (%v); pass an existing directory.", cwd, err)
	}
	if real == "/" {
		return `The sandbox does not make the whole file system writable, so the workdir cannot be "/"; pass a directory below it.`
	}
	for _, b := range slices.Concat(p.writable, p.readOnly) {
		if _, err := os.Stat(b); err != nil {
			return fmt.Sprintf("The sandbox cannot start: its path %q no longer exists (%v).", b, err)
		}
	}
	spec.sandbox, spec.sandboxDir = p, real
	spec.env = p.environ(spec.env, real)
	return ""
}

// environ points HOME, and TMPDIR when set, at directories a command may
// write inside the sandbox.
func (p *sandboxPlan) environ(env []string, cwd string) []string {
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

// writableInside reports whether a command can write at path.
func (p *sandboxPlan) writableInside(path, cwd string) bool {
	path = filepath.Clean(path)
	under := func(dirs []string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return within(path, d) })
	}
	return within(path, cwd) || within(path, "/tmp") || under(p.writable) || under(p.hide)
}
