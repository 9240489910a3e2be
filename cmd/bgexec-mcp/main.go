// Command bgexec-mcp serves the bgexec exec and process tools to MCP
// clients, over stdio (newline-delimited JSON-RPC on stdin and stdout, one
// client) or over the Streamable HTTP transport (-http, any number of
// clients). Install it with
//
//	go install github.com/bgexec/bgexec/cmd/bgexec-mcp@latest
//
// and register it with a host, for example
//
//	claude mcp add bgexec -- bgexec-mcp -security allowlist -ask on-miss -allowlist ls,cat,git
//	bgexec-mcp -http 127.0.0.1:8080 -token-file ~/.bgexec-token
//
// The README shows the lines for Claude Code, Codex, Cursor, VS Code and
// Claude Desktop.
//
// # Configuration
//
// Every setting is a key of the JSON file given with -config and a flag;
// -h lists them. The defaults come first, then the file, then the flags
// given on the command line, each overriding the one before (a list flag
// such as -allowlist replaces the file's list, and repeating it appends).
// Everything is checked at start: an unknown key, a value of the wrong
// type or out of range, and a configuration bgexec refuses (a sandbox
// without bwrap, a node without an address) stop the server with an error
// that names the key and its flag. BGEXEC_SANDBOX=1 in the environment
// turns the sandbox on by default, and the registry settings that are not
// keys (yield window, output caps) come from the environment variables of
// [bgexec.ConfigFromEnv].
//
// # Where commands run
//
// By default on this machine, in the client's first root. -sandbox runs
// them in bubblewrap; the file's key nodes and -host node on SSH nodes.
// -docker-image (key docker.image) runs each command in a Docker
// container of that image, on the daemon at -docker-host (key
// docker.host), with -docker-network, -docker-user, -docker-memory-bytes,
// -docker-pids and -docker-cpus, and the file's keys docker.shell,
// docker.noSpare, docker.perScope (one container per MCP session rather
// than per command) and docker.mounts ([{"source", "target", "readOnly"}];
// by default the workdir alone, read-write). Without -workdir the
// workdir is then the server's own directory, not the client's root: the
// containers' mount is fixed before a client names its roots. The daemon
// is first reached by the first exec. Kubernetes pods cannot be
// configured here: that host is the module github.com/bgexec/bgexec/kube,
// which this command does not build in; embed bgexec with
// [bgexec.Config].Kubernetes for them.
//
// # Approvals
//
// -security allowlist refuses every command not on -allowlist, and
// -security deny every command. With -ask on-miss (under -security
// allowlist, commands not on -allowlist; under full nothing misses) or
// -ask always, a command that needs a decision is shown to
// the person through the client's elicitation form: the command, its workdir,
// the commands the shell parser found and why approval is needed, with one
// choice: allow-once, allow-session (this exact command runs without
// asking for the rest of the MCP session) or deny.
//
// By default (-approval-mode pending) exec does not wait for the answer:
// it returns at once with status approval-pending and an approval id (see
// [bgexec.ErrApprovalDeferred]) while a goroutine of the MCP session puts
// the form to the person and decides with [bgexec.Scope.Decide]:
// allow-once runs the command as a background session, allow-session
// does too and remembers the exact command for the session (the server
// keeps that rule; it does not use the library's lasting allow-always),
// and deny, a declined or cancelled form and no answer within
// -approval-timeout (default 5m, also the registry's ApprovalTimeout)
// deny it. The model reads the outcome as notices in the next result
// ("[bgexec] Exec approved (approval …): running as session …", then the
// command's exit notice; or "[bgexec] Exec denied (approval …): not
// approved; nothing ran: …"), and it is sent as a logging message too;
// why a denial happened goes to the server's log. The goroutine is
// stopped and waited for when the session ends, before its registry
// closes. With -approval-mode wait the exec call waits for the answer
// instead (with progress notifications when the request has a progress
// token), and its refusal says which way it was denied. In both modes a
// client that does not offer elicitation is refused at once, with a text
// that says so.
//
// Over HTTP the endpoint is http://<addr>/mcp, and every request must carry
// "Authorization: Bearer <token>", the token being the content of
// -token-file (surrounding whitespace trimmed); a request without it gets
// 401. A request whose Origin header is not a loopback origin ("null"
// included) gets 403; one without Origin passes. At most
// -max-http-sessions (default 64) sessions are open at once; a request
// that would open another gets 503. A body over -max-message-bytes gets
// 413: before it is read when its Content-Length says so, else once the
// limit is passed. Other requests are the SDK's Streamable HTTP
// transport, including its DNS-rebinding protection for loopback
// addresses.
//
// # Sessions and lifetime
//
// Every MCP session gets its own [bgexec.Registry] and scope, so a client
// sees only the sessions it started. Over stdio a process serves one
// session; it ends when the client disconnects (stdin reaches EOF). Over
// HTTP a session ends when the client sends DELETE or when it made no
// request for -session-idle. When a session ends, or the server gets
// SIGTERM or SIGINT, its registry is closed, which kills every running
// command's process group. Nothing is written to disk.
//
// # Exit notices
//
// When a background command ends, the exit summary
//
//	[bgexec] Exec completed (warm-falcon, code 0) :: done
//
// comes first in the text of the session's next tool result (either tool),
// unless a poll, wait or kill reported that end already: each end reaches
// the model once. MCP hosts show the model tool results, not logging
// messages, so this is how a completion reaches it. -exit-notices=false
// turns this off.
//
// The server also sends every exit as MCP logging messages
// (notifications/message) for user interfaces that show them: level
// "notice", logger "bgexec", data {"event":"exit","text":…}, then level
// "info" with data {"event":"wake","reason":"exec:<sessionId>:exit"}. They
// arrive only after the client set a log level (logging/setLevel) and do
// not count as telling the model. Protocol revision 2026-07-28 deprecates
// logging (and roots, below; SEP-2577), and the Go SDK marks their API
// deprecated, but it has no other channel for messages outside a request,
// so the server offers the earlier revisions only and keeps both.
//
// # Calls that fit the host
//
// MCP clients give up on a request after a timeout (60 s for the
// TypeScript SDK). No call waits longer than -max-call-ms (default 50000):
// exec's yield window, poll's and wait's timeout are cut to it, and the
// call then returns the current state (a running exec keeps running in the
// background) with a sentence saying it stopped at the limit. While a call
// whose request has a progress token waits, the server sends
// notifications/progress every -progress-ms. A request the client cancels
// (notifications/cancelled) gets no response over stdio; a foreground
// exec it was running is killed, a backgrounded one keeps running. Over
// HTTP the run ends the same way, but the SDK's transport, which this
// server cannot wrap, still writes the response into the stream of the
// request the client gave up. A result that never reached the client is
// given back ([bgexec.Scope.Undelivered]): its drained output, exit
// report and notices come again in the next result. bgexec does that for
// a call whose context ended while it ran; over stdio the server also
// does it when the cancel arrives after the handler returned (the
// response is dropped) or writing the response fails. To match a
// response to its result, the server puts each tools/call's request id
// into its _meta under "io.bgexec/requestId" as it reads it, overwriting
// any value the client sent.
//
// # Results
//
// Every result has the text for the model as text content, and as
// structured content matching the tool's outputSchema: the same text in
// the field "text" (hosts such as Claude Code and Codex show the model only
// the structured content when there is one), beside the status fields
// (status, sessionId, exitCode …; details.aggregated and details.tail,
// which would repeat the output, are left out). isError is set
// when the call failed (refused, invalid, no such session), not when a
// command exited non-zero. Invalid arguments are tool results with isError
// and a text that explains them; an unknown tool and an invalid log level
// are JSON-RPC errors (-32602). A line on stdin that is not a JSON-RPC
// message gets a JSON-RPC error response and is skipped.
//
// # Roots
//
// When the client offers roots and -workdir is not set, the first file://
// root is the default workdir of exec calls that name none; it is asked
// for at the first exec and again after the client says the list changed.
// Roots are deprecated as of protocol revision 2026-07-28 (see Exit
// notices); -workdir and exec's workdir are the replacement the SDK
// advises, and with -workdir set the roots are not asked for.
//
// # Large messages
//
// One message may be up to -max-message-bytes (default 64 MiB) on either
// transport: a 10 MB command fits even when every character needs a
// six-byte JSON escape.
//
// # Sandbox
//
// -sandbox (or BGEXEC_SANDBOX=1) runs every command in the bubblewrap
// sandbox ([bgexec.Sandbox]): by default no network, the file system
// read-only but the working directory and /tmp; -sandbox-network,
// -sandbox-writable, -sandbox-readonly and -sandbox-hide change that.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// A write to a closed stdout must be an error we can handle, not a
	// SIGPIPE that kills the server before it has killed its children.
	// Notify (unlike Ignore) leaves SIGPIPE at its default in the commands
	// we spawn.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bgexec-mcp:", err)
		os.Exit(1)
	}
}

// run parses the flags and serves until the client leaves or ctx ends.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	st, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	closeAudit, err := attachAuditLog(st)
	if err != nil {
		return err
	}
	defer closeAudit() // after serve: every registry has closed and drained
	if st.addr == "" {
		return serve(ctx, &lineTransport{in: stdin, out: stdout, maxLine: st.maxMessage}, st.opts)
	}
	token, err := os.ReadFile(st.tokenFile)
	if err != nil {
		return fmt.Errorf("read the token: %w", err)
	}
	token = bytes.TrimSpace(token)
	if len(token) < 16 {
		return fmt.Errorf("the token in %s has %d bytes; use at least 16 (e.g. openssl rand -hex 32)", st.tokenFile, len(token))
	}
	ln, err := net.Listen("tcp", st.addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bgexec-mcp: serving MCP at http://%s/mcp\n", ln.Addr())
	return serveHTTP(ctx, ln, st.opts, httpOptions{token: token, idle: st.idle, maxBody: int64(st.maxMessage), maxSessions: st.maxHTTPSessions})
}
