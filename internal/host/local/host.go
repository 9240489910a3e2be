package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/envpolicy"
	"github.com/bgexec/bgexec/internal/host"
)

// ErrClosed is returned by a start after [Host.Close].
var ErrClosed = errors.New("local: host closed")

// Options configure a [Host]. The zero value runs sh with process-group
// or cgroup containment (whichever this machine allows), no limits but
// contain's default task limit handling, and the zero environment policy.
type Options struct {
	// Shell is the shell as configured: a name looked up in PATH, or a
	// path. It is argv[0] of every command.
	Shell string
	// ShellPath is Shell resolved against PATH once; "" looks Shell up
	// at each start (and runs it as named when it is not found).
	ShellPath string
	// Env is the environment policy commands' environments are merged
	// with (see envpolicy.Policy.Merge).
	Env envpolicy.Policy
	// Containment says how commands are contained: a cgroup each when
	// one can be made (Auto), never (Off), or New fails without (Required).
	Containment Containment
	// Limits are each command's limits, applied through its cgroup.
	Limits contain.Limits
	// Check, when set, is called with what the limiter found, before the
	// watchdog starts. An error fails New, which then leaves nothing.
	Check func(contain.Report) error
	// Kick, when set, is called when a session cgroup could not be
	// removed (or a limit directory released), so that the owner calls
	// [Host.Sweep] soon. It must not block.
	Kick func()
}

// Containment says how a [Host] contains its commands.
type Containment int

const (
	// ContainmentAuto puts each command in a cgroup of its own when this
	// process may make one, else in a process group of its own.
	ContainmentAuto Containment = iota
	// ContainmentOff uses process groups only.
	ContainmentOff
	// ContainmentRequired makes New fail without cgroups, or when a limit
	// Check refuses cannot be applied.
	ContainmentRequired
)

// Host starts commands on this machine (the gateway). It implements
// [host.Host]; its started processes have the capabilities the package
// documentation lists. Safe for concurrent use.
type Host struct {
	opts     Options
	spawner  spawner
	watchdog *contain.Watchdog // kills the sessions' groups if this process dies
	cgroups  *contain.Root     // nil without cgroup containment
	limits   *contain.Limiter  // the per-command limits (applies none without cgroups)
	bare     bool              // skip the limits' Attach (DropLimits)

	stop      chan struct{}  // closed by Close: the spawner threads end
	spawners  sync.WaitGroup // the spawner goroutines
	closeOnce sync.Once
}

// New sets up containment (the registry's cgroup, the limits, the
// watchdog processes) and starts the spawner goroutines, each on a locked
// OS thread (spawnerThreads). Call Close, after every command ended, to
// stop them. On error it leaves nothing.
func New(opts Options) (*Host, error) {
	cg, lim, wd, err := startContainment(&opts)
	if err != nil {
		return nil, err
	}
	h := &Host{
		opts:     opts,
		spawner:  spawner{reqs: make(chan spawnCall)},
		watchdog: wd,
		cgroups:  cg,
		limits:   lim,
		stop:     make(chan struct{}),
	}
	lim.SetKick(h.kick)
	for range spawnerThreads() {
		h.spawners.Add(1)
		go func() {
			defer h.spawners.Done()
			h.spawner.run(h.stop)
		}()
	}
	return h, nil
}

var _ host.Host = (*Host)(nil)

// Name is "gateway".
func (h *Host) Name() string { return "gateway" }

// Close stops the spawner threads, whose ends SIGKILL every child they
// forked (so call it only once every command ended), waits for them, stops
// the watchdogs and removes the registry's cgroups and limit directories.
// It is idempotent.
func (h *Host) Close() {
	h.closeOnce.Do(func() {
		close(h.stop)
		h.spawners.Wait()
		h.watchdog.Close()
		if h.cgroups != nil {
			_ = h.cgroups.Remove() // Best effort: RetryDirty kept what it could.
		}
		h.limits.Remove()
	})
}

// kick tells the owner to call Sweep soon.
func (h *Host) kick() {
	if h.opts.Kick != nil {
		h.opts.Kick()
	}
}

// dirtyRetry is how often Sweep wants to retry the kill of a session
// cgroup that could not be seen empty, and dirtyBound how long each try
// waits.
const (
	dirtyRetry = time.Second
	dirtyBound = 100 * time.Millisecond
)

// Sweep kills session cgroups again that could not be seen empty, and
// releases limit directories left behind. It returns how soon it wants to
// be called again, 0 when nothing is left to retry. Call it from one
// goroutine at a time.
func (h *Host) Sweep() (again time.Duration) {
	if h.cgroups != nil && h.cgroups.RetryDirty(dirtyBound) > 0 {
		again = dirtyRetry
	}
	h.limits.RetryDirty()
	return again
}

// ShedSpares closes the descriptors that the spare session cgroups (and
// sets of cgroup v1 directories) hold ready for the next sessions, for a
// host process short of descriptors, and returns how many spares held
// any. The spares stay, and are set up by the session that takes one.
// Safe for concurrent use.
func (h *Host) ShedSpares() int { return h.cgroups.ShedPrepared() + h.limits.ShedPrepared() }

// DropLimits makes later starts give each command a bare session cgroup,
// without the limits' files and cgroup v1 directories: a baseline for
// benchmarks that price the limits. For benchmarks only; not safe to
// call while commands start.
func (h *Host) DropLimits() { h.bare = true }

// Report is what the limiter found when New ran (see contain.Report).
func (h *Host) Report() contain.Report { return h.limits.Report() }

// Cgroups is the registry's cgroup, nil without cgroup containment. For
// tests and diagnostics; the host owns it.
func (h *Host) Cgroups() *contain.Root { return h.cgroups }

// Limiter is what applies the limits. For tests and diagnostics; the
// host owns it.
func (h *Host) Limiter() *contain.Limiter { return h.limits }

// Watchdog is the host's watchdog. For tests and diagnostics; the host
// owns it.
func (h *Host) Watchdog() *contain.Watchdog { return h.watchdog }

// Start starts spec on this machine.
func (h *Host) Start(_ context.Context, spec *host.Spec) (*host.Started, error) {
	return h.start(h.localSpec(spec), spec, "")
}

// Wrap runs a command inside a program that starts it (bubblewrap): see
// [Host.StartWrapped].
type Wrap struct {
	// Command turns the shell's argv, and the descriptors the command gets
	// from fd 3 on, into the wrapper's path, argv and descriptors; owned
	// are descriptors it opened for the start, closed once it started.
	Command func(argv []string, pty bool, extra []*os.File) (path string, args []string, files, owned []*os.File, err error)
	// Env, when set, rewrites the command's environment as composed here.
	Env func(env []string) []string
	// Hint is the Started's hint (see host.Started.Hint).
	Hint string
	// Take, when set, is offered the command before a cold start: argv
	// is the shell's argv and env its environment (after Env), stdin
	// whether the session writes to the command's stdin (else it reads
	// /dev/null), keepState whether the shell writes its state to fd 4
	// (else fd 4 is closed). It returns a command of [Host.StartHeld]
	// it handed all that to, which the session then owns, or nil to
	// start cold. A terminal session, or a command long enough to be
	// handed over as a script, is never offered.
	Take func(argv, env []string, stdin, keepState bool) *Held
	// MoveStdio, when set, gives the command's stdin, stdout and stderr
	// to the wrapper as fds 5, 6 and 7 (after the script's fd 3 and the
	// state file's fd 4; fd 5 is closed when the command reads
	// /dev/null), and the wrapper /dev/null as its own fds 0 to 2: the
	// wrapper moves them into place for its command. A wrapper whose
	// pid 1 keeps its own fds 0 to 2 until its namespaces are torn down
	// (bwrap's init does) then does not hold the session's output open
	// after its command ended, so the output's end is seen when the
	// command's is. Not with a terminal.
	MoveStdio bool
}

// StartWrapped starts spec inside w's wrapper. The wrapper is the process
// group's leader and is expected to report its command's death by signal
// n as exit code 128+n, to pass on no signal, and to leave nothing
// running when it ends (a pid namespace): signals other than SIGKILL go
// to the other processes of its cgroup, and a status of 128+n after the
// session sent signal n is reported as that signal. It is forked on the
// spawner thread even in a cgroup (bwrap's --die-with-parent follows the
// forking thread) and gets no cgroup namespace of its own.
func (h *Host) StartWrapped(spec *host.Spec, w *Wrap) (*host.Started, error) {
	ls := h.localSpec(spec)
	ls.wrap = w
	if w.Env != nil {
		ls.env = w.Env(ls.env)
	}
	if w.Take != nil && !ls.pty && ls.script == "" {
		argv := append([]string{ls.path}, ls.args[1:]...)
		if held := w.Take(argv, ls.env, ls.stdinPipe, ls.stateFile != nil); held != nil {
			return held.started(ls, w.Hint), nil
		}
	}
	return h.start(ls, spec, w.Hint)
}

// localSpec turns spec into the spawn of the configured shell on this
// machine: its argv (or script), environment and state descriptor.
func (h *Host) localSpec(spec *host.Spec) *spawnSpec {
	command := spec.Command
	var stateFile *os.File
	if spec.Carry != nil {
		// Best effort: without a memfd the state is not kept.
		if f, err := stateMemfd(); err == nil {
			stateFile = f
			command = StatePrologue + spec.Command
		}
	}
	args, script := shellArgs(h.opts.Shell, command)
	return &spawnSpec{
		path:      h.shellPath(),
		args:      args,
		script:    script,
		dir:       spec.Dir,
		env:       h.environ(spec),
		stdinPipe: spec.StdinPipe,
		pty:       spec.PTY,
		stateFile: stateFile,
		cols:      spec.Cols,
		rows:      spec.Rows,
	}
}

// shellPath is the path the shell is executed from.
func (h *Host) shellPath() string {
	if h.opts.ShellPath != "" {
		return h.opts.ShellPath
	}
	if p, err := exec.LookPath(h.opts.Shell); err == nil {
		return p
	}
	return h.opts.Shell
}

// environ composes the command's environment from spec's layers (see
// host.Env) over this process's environment.
func (h *Host) environ(spec *host.Spec) []string {
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
	env := h.opts.Env.Merge(inherited, spec.Env.Overrides, append([]string{"PAGER=cat", "GIT_PAGER=cat"}, spec.Env.Forced...)...)
	if len(spec.Env.Added) > 0 {
		env = host.SetEnv(env, spec.Env.Added)
	}
	return env
}

// start spawns ls (retrying on pipes when no terminal could be opened)
// and hands its session what it owns.
func (h *Host) start(ls *spawnSpec, spec *host.Spec, hint string) (*host.Started, error) {
	sp, err := h.spawn(ls)
	var warnings []string
	if err != nil && ls.pty {
		warnings = append(warnings, fmt.Sprintf("Warning: PTY spawn failed (%v); retrying without PTY for `%s`.", err, host.MiddleTruncate(spec.Command, 200)))
		ls.pty, ls.stdinPipe = false, true
		spec.PTY, spec.StdinPipe = false, true
		sp, err = h.spawn(ls)
	}
	if err != nil {
		if ls.stateFile != nil {
			_ = ls.stateFile.Close() // Best effort: nothing was written to it.
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
