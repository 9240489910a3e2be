// Package sshhost runs commands on SSH nodes: it is the node host of
// package bgexec (Config.Host "node"). Its directory is internal/host/ssh;
// the package is named sshhost so that it does not clash with
// golang.org/x/crypto/ssh, which it uses.
//
// # Pool and hosts
//
// [NewPool] takes the validated nodes ([Config], converted by package
// bgexec from its public Node) and keeps one SSH connection per node,
// dialed when the first session needs it and again, for new sessions,
// after it dropped. A failed dial is an [*Error] that says what failed,
// never retried behind the caller's back. [Pool.Host] is a node's
// [host.Host]: Start runs one command there from a [host.Spec], over a
// session channel of the connection, inside a small sh wrapper that
// reports the shell's pid, process group and working directory and execs
// the shell (see nodeWrapper). A command too long for the exec request is
// uploaded to a private temporary file first.
//
// # Started processes
//
// The started process is a [session.Process] whose signals, checks and
// kills are scripts run by one control shell per connection. Every
// process of a session carries a tag in its environment, so no signal or
// kill ever reaches a process that merely got the same pid or group id.
// It has the optional abilities [host.Resizer] (window-change),
// [host.PortProber] (a direct-tcpip dial on the node's loopback) and
// [host.UsageReader] (one /proc reading script for every session of a
// connection, at most every [ResourceTTL]), and lists and awaits the
// processes a shell left behind ([session.Lingerer]). A session whose
// connection drops ends as lost ([session.ErrLost]), after one attempt to
// kill it over a new connection.
//
// # Shell state
//
// With [host.Spec.Carry], the wrapper opens a private state file on the
// node as the shell's fd 4 and writes the environment the shell starts
// with; an EXIT trap appends the final working directory and environment.
// When the session ends the file is read back over the control shell and
// removed; [host.Started.State] returns its bytes, which the tool layer
// parses by its own environment rules.
//
// # Goroutines
//
// Every goroutine the pool starts (connection watchers, keepalives,
// channel request handlers, bounded stdin writes, resource reads) is
// counted on the WaitGroup given to [NewPool]; they end when their
// connection or channel closes, so after [Pool.Close] and the end of every
// session the WaitGroup's Wait returns.
package sshhost
