package bgexec

import (
	"strings"

	"github.com/bgexec/bgexec/internal/host/sandbox"
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
	// Pool is how many sandboxes are kept started ahead of time, each set
	// up (namespaces, mounts, seccomp filter) in the default workdir and
	// waiting for a command, so that a call does not wait for bubblewrap
	// to start. Each serves one session and is replaced in the
	// background; nothing carries over from one session to another. Zero
	// means the default, 2; a negative value turns the pool off (every
	// call starts its sandbox then). Unit: sandboxes. See docs/sandbox.md.
	Pool int
}

// defaultSandboxPool is the pool size Sandbox.Pool zero stands for.
const defaultSandboxPool = sandbox.DefaultPoolSize

// poolSize is the number of sandboxes sb keeps started ahead; 0: none.
func (sb *Sandbox) poolSize() int {
	switch {
	case sb.Pool < 0:
		return 0
	case sb.Pool == 0:
		return defaultSandboxPool
	}
	return sb.Pool
}

// sandboxConfig is sb as package sandbox takes it.
func sandboxConfig(sb *Sandbox) sandbox.Config {
	return sandbox.Config{
		Bwrap:         sb.Bwrap,
		Network:       sb.Network,
		WritablePaths: sb.WritablePaths,
		ReadOnlyPaths: sb.ReadOnlyPaths,
		HidePaths:     sb.HidePaths,
		MinimalRoot:   sb.MinimalRoot,
	}
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
	p, err := sandbox.Resolve(sandboxConfig(cfg.Sandbox), sandbox.UserHome())
	if err != nil {
		return nil, err
	}
	return describeTools(p), nil
}

// describeTools returns the tool definitions for commands run in p (nil:
// on this machine).
func describeTools(p *sandbox.Plan) []ToolDefinition {
	defs := ToolDefinitions()
	if p != nil {
		net := "no network access (only its own loopback)"
		if p.Network() {
			net = "the host's network"
		}
		// The first line, which says where commands run, is replaced.
		_, rest, _ := strings.Cut(defs[0].Description, "\n")
		defs[0].Description = "Run a shell command in a sandbox (the shell's -c, so pipes, && and globs work). " +
			"The sandbox has " + net + "; the file system is read-only except " + p.WritableSummary("", false) +
			"; other processes of the machine are invisible. Processes a command leaves running in the background end with it. " +
			p.WorkdirSummary() +
			"\n" + rest
	}
	return defs
}
