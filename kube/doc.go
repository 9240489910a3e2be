// Package kube runs bgexec sessions in Kubernetes pods: the host named
// "kubernetes". It is a module of its own (github.com/bgexec/bgexec/kube),
// so that client-go, a large dependency, stays out of the core module;
// package bgexec's seam (internal/host) is implemented here because Go's
// internal rule goes by import path, and this module's path lies under
// bgexec's.
//
// # Configuration
//
// [New] takes a [Config]: the cluster (a kubeconfig path and context, or
// the in-cluster service account, or a ready *rest.Config), the
// namespace, and where commands run: one Pod for every scope, or a label
// Selector from which the first command of each scope picks a running
// pod (the one the fewest scopes use, then by name), which the scope keeps
// until the [Cluster] is closed. Container names the container ("" for
// the pod's only one), Shell the shell ("sh"), Workdir the default
// working directory (the image's). [Cluster.Host] returns a scope's
// [Host], whose Start and Name ("kubernetes") make it a host of the seam.
//
// # How a command runs
//
// Every command is one exec through client-go's remotecommand: a
// WebSocket first (the API server's v5 protocol, Kubernetes 1.30 and
// later) and SPDY when the server refuses the upgrade. Its argv is
// sh -c WRAPPER with the shell, the directories, the command, the
// session's tag and the environment as separate arguments (nothing is
// quoted): the wrapper applies the environment, changes directory (a
// missing one falls back to the default, with a warning), reports its pid
// and working directory on the first line of stderr (of the terminal
// under a PTY), and runs the shell in the foreground. When the shell
// ended, the wrapper kills what the session left (below) and writes a
// trailer with the shell's exit status on the same stream; the report and
// the trailer are taken out of the output. Stdout and stderr are separate
// streams without a terminal; with one, stdin and output share the
// terminal, whose size follows Resize (the exec's terminal size queue).
// Stdin is a pipe when asked for; closing it is the command's EOF.
//
// Every process a session's shell starts carries BGEXEC_SESSION=<random
// tag> in its environment. Signals (kill, timeout) are a second exec into
// the same container that signals every process carrying the tag, so a
// process that left the shell's process group (setsid, a double fork) is
// reached too; one that cleared its own environment is not. The wrapper
// does not carry the tag (it gets it as an argument) and catches INT,
// QUIT and TERM, so it outlives the signals and reports the shell's end.
// At that end it sends SIGKILL to every tagged process until none is
// left. When the stream ends without the trailer (the wrapper was killed,
// the stream dropped), an end check (one more exec) notes whether the
// wrapper was still running, kills it and every tagged process. Processes
// neither could end make the session's end report them. The container
// needs sh, grep, kill and sleep (busybox has them all) and a /proc where
// the session's processes are readable (the same user).
//
// # Exit codes, signals, loss
//
// The exit code is the shell's, as the trailer says (the runtime's status,
// exec.CodeExitError, when the trailer did not come). A shell that a
// signal ended shows as 128+n; the host reports such an end as the
// signal when it sent signal n to the session itself (a kill, a timeout,
// Close), and as the code otherwise. client-go reports an exec stream
// that merely closed as a success, so only the trailer confirms an end:
// without it, the end check decides; when the wrapper was still running,
// or the check could not run (the API server is gone), the session ends
// failed with exitReason "lost", and its text says that the stream ended
// without the command's exit and whether one attempt to kill it over a
// new exec worked.
//
// # Not supported here
//
// Shell state is not carried between commands (Started.State reports
// none); processes a shell leaves behind are ended with it; there are no
// resource views or OOM reports; a command travels in the exec URL, so
// one longer than the API server's URL limit fails to start. A wait for a
// port ([host.PortProber]) is answered in the pod: a control exec looks
// for a listening socket in /proc/net/tcp and tcp6 (the pod's network
// namespace, which its containers share).
//
// # Testing
//
// The tests run client-go against the kubelet's own streaming server
// code (k8s.io/cri-streaming) on loopback, behind a small handler that
// takes the API server's pods/exec URLs and hands each to the streaming
// server, with a runtime that runs real processes on the machine (a
// terminal and its resizes included). The wire protocol, the streams,
// resize and exit codes are real; the API server and the kubelet in front
// of the streaming server are not exercised in CI, and the WebSocket
// attempt is refused there (the kubelet's server stops at v4), so the
// tests' execs go over SPDY. TestRealCluster runs the same checks
// against a real cluster when BGEXEC_KUBE_POD names a pod; see
// docs/kubernetes.md for the steps.
//
// # Concurrency and goroutines
//
// A [Cluster] and its hosts are safe for concurrent use. Each session
// has one goroutine (its exec stream) counted by the cluster; it ends
// with the stream, and [Cluster.Close] kills what still runs and waits
// for them all.
//
// [host.PortProber]: https://pkg.go.dev/github.com/bgexec/bgexec/internal/host#PortProber
package kube
