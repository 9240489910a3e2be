// Package local is the gateway host: it starts commands on this machine,
// as children of this process, and is what the sandbox host wraps.
//
// A [Host] turns a [host.Spec] into the configured shell's argv (or, for
// a command too long for an argument, a sealed script on a descriptor),
// an environment and a terminal or pipes, and starts it in a cgroup of
// its own when containment is on ([contain.Root]), else in a process
// group of its own. It owns what that needs for the registry's life: the
// registry's cgroup and limits, the watchdog that kills every session
// when this process dies, and the spawner thread.
//
// # The spawner threads
//
// A child outside a cgroup gets Pdeathsig, which the kernel sends when
// the thread that forked it ends, not the process. The Go runtime may end
// a thread, so such children are forked on OS threads locked for the
// host's life: one per CPU the Go scheduler uses (GOMAXPROCS), at most
// four, serving one queue, so concurrent starts fork in parallel.
// [Host.Close] stops them only after every session ended: their exits
// SIGKILL every child they forked. A child in a cgroup is forked on the
// calling goroutine's thread: the watchdog kills the registry's cgroup as
// a whole when the host dies. The hop to a spawner thread and back costs
// a foreground exec about 50 µs on an idle 2-core VM (two thread
// wake-ups), about 5 % of an exec of true.
//
// # Started processes
//
// The process of a started command is waited for through a pidfd in the
// runtime's netpoller, so an idle session holds no thread. It has the
// optional capabilities of package host: resource usage
// ([host.UsageReader]), escape watching ([host.EscapeWatcher]), its
// cgroup ([host.Container]), the CPU its reaped processes used
// ([host.EndUsager]) and its cgroup's peak memory ([host.PeakReporter]).
//
// # Wrapped commands
//
// [Host.StartWrapped] starts a command inside a program that runs it for
// us (bubblewrap, for package sandbox): the wrapper is the process group's
// leader, reports a command killed by signal n as exit code 128+n, passes
// no signals on, and nothing outlives it. [Host.StartHeld] starts such a
// wrapper ahead of its session (package sandbox's pool of warm
// sandboxes), contained as a cold start would be, at that time; a later
// StartWrapped hands it the session's command through [Wrap.Take], or it
// is ended with [Held.Discard].
//
// Everything here needs Linux; elsewhere New returns an error wrapping
// [errors.ErrUnsupported]. A Host is safe for concurrent use.
package local
