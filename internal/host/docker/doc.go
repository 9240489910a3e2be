// Package dockerhost runs commands in Docker containers: the Docker host
// of package bgexec (host name "docker"). Its directory is
// internal/host/docker; the package is named dockerhost so that it does
// not clash with the engine's own packages.
//
// # A container per session
//
// [New] takes a [Config] (the daemon's address in DOCKER_HOST form, the
// image, the mounts, network on or off, the user, and the memory, process
// and CPU caps of each container). [Host.Start] runs one command from a
// [host.Spec] in a container of its own: the container's init is the
// image's shell reading a stdin that never ends, and the command runs as
// an exec in it ([Shell, "-c", command]). A container per session, rather
// than one per scope ([Config.PerScope], see [Host.ForScope] and scope.go),
// is the default, because it makes the contract hold without trusting the
// command:
//
//   - kill, timeout and Close reach every process of the session, including
//     ones that left its process group or session (setsid, double forks,
//     nohup): the signal is sent with kill -1 from an exec inside the
//     container, which reaches every process of its pid namespace but init;
//   - the memory, process and CPU caps are the session's own, so the end
//     of a session the memory cap killed is "oom", read from the
//     container's memory cgroup (memory.events on cgroup v2,
//     memory.oom_control on v1);
//   - resources (CPU time, memory without page cache, processes) are the
//     container's stats, and its listening ports those of the container's
//     network namespace (its /proc/net/tcp and tcp6, read by an exec),
//     which are all the session's;
//   - nothing outlives the session: Release removes the container, and
//     Close removes every container the host made (they carry the label
//     [Label] with the host's own id).
//
// Creating a container costs more than an exec (much more with the vfs
// storage driver), so the host keeps one started container ready for the
// next session, made in the background after each Start
// ([Config.NoSpare] turns it off), and removes the container of an ended
// session in the background once a SIGKILL reached all of it.
//
// # Streams
//
// The exec's streams are the engine's hijacked attach connection. Without
// a terminal, stdout and stderr arrive framed on it and are split apart by
// one copier goroutine per session (stdcopy); with StdinPipe, writes go to
// the connection and end of file half-closes it (CloseWrite), so output
// keeps coming. With a terminal the connection is the terminal: the
// started process is a [host.Resizer] (the exec resize API). Daemons
// before API 1.42 ignore an exec's initial console size: for them the
// host sizes the terminal with a resize once the exec runs, and the
// command first waits (at most five seconds) until its terminal has a
// size. A resize made right after the start therefore sticks, which
// setting the size with stty from inside the command would race.
//
// The session's readers must read the outputs to their end (the session
// engine does): the end of the stream is how the host learns that the
// exec ended. The exec ends when its attach stream ends (the engine closes it after
// the process exited and its output was copied, waiting at most two
// seconds for background processes that still hold it); the exit code is
// then read from the exec's inspection. The engine reports a process
// killed by signal N as code 128+N, as a shell does: the host reads it
// back as that signal when it sent the signal itself (kill, timeout) or,
// for SIGKILL, when the memory cap was hit; any other code is an exit
// code.
//
// # A daemon that goes away
//
// When the daemon is killed, its attach streams end and the exec cannot
// be inspected: the session ends failed with the reason "lost" and a text
// that says the connection to the daemon was lost and that the container
// may still be running (without the daemon nothing can be killed; the
// container keeps the host's label, so it can be found and removed once
// the daemon is back). A session whose daemon cannot be reached when its
// stream ends (its socket removed, say) ends the same way; one whose
// stream and daemon both stay up runs on.
//
// # Working directories
//
// A command's working directory is a path of this machine, and it must
// lie inside a mount's Source ([Host.Place] and [Host.Prepare] say what
// to fix otherwise, and nothing starts); it runs at the same place under
// the mount's Target. Without a working directory a command starts in the
// first mount's Target. The container sees no other path of this machine.
//
// # Environment
//
// The exec's environment is the image's, with the spec's layers set over
// it in order: carried KEY=value entries, defaults the caller does not
// override, the overrides, the forced entries, the added ones. Shell
// state (Spec.Carry) is not kept: Started.State is nil.
//
// # Why this client
//
// The host talks to the Engine API through github.com/moby/moby/client
// (with github.com/moby/moby/api for the types and stdcopy), the module
// the Moby project split out of github.com/docker/docker for API clients:
// it is the maintained client, it carries only the client's dependencies
// (the monolithic module pulls the daemon's packages into go.sum), and it
// negotiates the API version down to the daemon's (1.40 and later: Docker
// 19.03 and later). The docker command is never run.
//
// # Goroutines
//
// Each pipe session has one stream copier; a spare being made and a
// background removal have one each. Close refuses new sessions, waits
// for the spare and the removals, removes every container left, then
// waits for the copiers, which end with their containers.
package dockerhost
