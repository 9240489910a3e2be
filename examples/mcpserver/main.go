// Command mcpserver serves the bgexec exec and process tools to MCP
// clients, over stdio (newline-delimited JSON-RPC on stdin and stdout, one
// client) or over the Streamable HTTP transport (-http, any number of
// clients).
//
// Start it with
//
//	go run ./examples/mcpserver
//	go run ./examples/mcpserver -http 127.0.0.1:8080 -token-file ~/.bgexec-token
//
// or build it and register the binary with an MCP client, for example:
//
//	{
//	  "mcpServers": {
//	    "bgexec": {
//	      "command": "/path/to/mcpserver",
//	      "env": { "PI_BASH_YIELD_MS": "10000" }
//	    }
//	  }
//	}
//
// Over HTTP the endpoint is http://<addr>/mcp, and every request must carry
// "Authorization: Bearer <token>", the token being the content of
// -token-file (surrounding whitespace trimmed); a request without it gets
// 401. Other requests are the SDK's Streamable HTTP transport, including
// its DNS-rebinding protection for loopback addresses.
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
// not count as telling the model. Protocol revision 2026-07-28 has no
// channel for messages outside a request, so the server offers the earlier
// revisions only.
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
// request the client gave up.
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
// When the client offers roots, the first file:// root is the default
// workdir of exec calls that name none; it is asked for at the first exec
// and again after the client says the list changed.
//
// # Large messages
//
// One message may be up to -max-message-bytes (default 64 MiB) on either
// transport: a 10 MB command fits even when every character needs a
// six-byte JSON escape.
//
// The configuration of the registries comes from the environment
// variables of [bgexec.ConfigFromEnv]. BGEXEC_SANDBOX=1 runs every command
// in the bubblewrap sandbox with its defaults ([bgexec.Sandbox]): no
// network, the file system read-only but the working directory and /tmp.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bgexec/bgexec"
)

// Flag defaults.
const (
	defaultMaxCallMs       = 50000
	defaultProgressMs      = 5000
	defaultMaxMessageBytes = 64 << 20
	defaultSessionIdle     = time.Hour
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
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}

// settings are the parsed flags.
type settings struct {
	opts       *options
	addr       string
	tokenFile  string
	maxMessage int
	idle       time.Duration
}

// parseFlags reads the command line; the registries' configuration starts
// from the environment ([bgexec.ConfigFromEnv]).
func parseFlags(args []string, stderr io.Writer) (*settings, error) {
	fs := flag.NewFlagSet("mcpserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("http", "", "serve Streamable HTTP at `addr` (host:port) under /mcp instead of stdio")
	tokenFile := fs.String("token-file", "", "`file` holding the bearer token HTTP requests must carry (required with -http)")
	maxCallMs := fs.Int("max-call-ms", defaultMaxCallMs, "longest wait of one tool call in `ms` (yield window, poll and wait timeouts); 0 means no cap")
	progressMs := fs.Int("progress-ms", defaultProgressMs, "interval of progress notifications in `ms` while a call with a progress token waits; 0 disables them")
	notices := fs.Bool("exit-notices", true, "put exit notices of background commands into the next tool result")
	maxMessage := fs.Int("max-message-bytes", defaultMaxMessageBytes, "largest JSON-RPC message (stdio line or HTTP body) in `bytes`")
	idle := fs.Duration("session-idle", defaultSessionIdle, "close an HTTP session (killing its commands) after this long without a request; 0 never does")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *maxCallMs < 0 || *progressMs < 0 || *maxMessage < 1024 || *idle < 0 {
		return nil, errors.New("-max-call-ms, -progress-ms and -session-idle must not be negative, and -max-message-bytes must be at least 1024")
	}
	switch {
	case *addr == "" && *tokenFile != "":
		return nil, errors.New("-token-file needs -http")
	case *addr != "" && *tokenFile == "":
		return nil, errors.New("-http needs -token-file: the HTTP transport requires a bearer token")
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := bgexec.ConfigFromEnv(nil)
	if os.Getenv("BGEXEC_SANDBOX") == "1" {
		cfg.Sandbox = &bgexec.Sandbox{}
	}
	cfg.ExitNoticesInResults = *notices
	cfg.MaxCallWaitMs = *maxCallMs
	return &settings{
		opts:      &options{cfg: cfg, progressEvery: time.Duration(*progressMs) * time.Millisecond, logger: logger},
		addr:      *addr,
		tokenFile: *tokenFile, maxMessage: *maxMessage, idle: *idle,
	}, nil
}

// run parses the flags and serves until the client leaves or ctx ends.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	st, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
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
	fmt.Fprintf(stderr, "mcpserver: serving MCP at http://%s/mcp\n", ln.Addr())
	return serveHTTP(ctx, ln, st.opts, httpOptions{token: token, idle: st.idle, maxBody: int64(st.maxMessage)})
}
