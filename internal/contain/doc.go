// Package contain keeps a registry's sessions on this machine inside
// bounds: it puts each in a cgroup of its own, applies the memory, task
// and CPU limits there, finds the processes a session left behind, reads
// what a session uses, and kills every session when the host process
// dies. It is the machinery the local hosts (the gateway, and the sandbox
// wrapping it) share; package bgexec keeps the public types (Limits,
// ContainmentReport) and converts at the boundary.
//
// # The registry's cgroup
//
// [NewRoot] makes the registry's cgroup below this process's cgroup v2
// cgroup and checks that a shell can be cloned into a child of it.
// [Root.NewSession] hands each session an empty [Cgroup], a spare one
// when there is one; the child is cloned straight into it (its
// [Cgroup.FD] for clone3's CLONE_INTO_CGROUP) and, when
// [Cgroup.UnshareNamespace] says so, into a cgroup namespace of its own,
// which [Cgroup.OpenNamespace] then holds (through the leader's pidfd
// where the kernel can). [Cgroup.KillLeft] and [Cgroup.KillNamespace] end
// what is left; [Cgroup.Remove] waits to see the cgroup empty and keeps it
// for reuse, or, when it cannot, never reuses it and lets
// [Root.RetryDirty] (the registry's sweeper) kill it again. A cgroup kept
// for reuse is prepared for its next session once the last one's end was
// reported ([Cgroup.PrepareSpare]): its counters read, its descriptors
// opened and its peak reset, so the next session's start does none of it.
// [Root.Remove] goes last.
//
// # Limits
//
// [NewLimiter] decides, per controller, whether a limit comes from the
// cgroup v2 tree or from a cgroup v1 hierarchy (hybrid hosts), caps the
// task limit by the host's own task budget, and says so in a [Report].
// [Limiter.Attach] gives a session cgroup its limits. On cgroup v1 the
// child must be forked from a thread inside the session's directories:
// the caller locks a thread, calls [Cgroup.EnterV1], forks, and calls the
// leave function it got back. [DescriptorRefusal] says when the host is
// too short of file descriptors to start another session.
//
// # Process trees and usage
//
// Without a cgroup a session's processes are its process tree: [WalkTree]
// walks it down from the leader through the kernel's children lists,
// [Descendants] lists it before a kill and [EscapeWarning] names what
// survived. [ReadUsage] reads a session's CPU, memory, tasks and
// listening ports, from its cgroup's counters when it has one, else by
// adding up its processes' own.
//
// # The watchdog
//
// [StartWatchdog] starts two small sh processes per registry that kill
// every session (its cgroup, the process groups and cgroup namespaces
// listed with [Watchdog.Watch] and [Watchdog.WatchNamespace]) when the
// host process dies, even by SIGKILL. The list is kept in a sealed memfd
// the watchdogs read only when the host is gone, so listing a session
// wakes no watchdog; lines on their lifelines carry what does not fit.
// docs/containment.md has how and why.
//
// Everything here needs Linux; elsewhere the constructors return
// [errors.ErrUnsupported]. Methods are safe for concurrent use unless
// their documentation says otherwise.
package contain
