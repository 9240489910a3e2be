// Command mcpserver serves the bgexec exec and process tools to one MCP
// client over stdio (newline-delimited JSON-RPC on stdin and stdout).
//
// Start it with
//
//	go run ./examples/mcpserver
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
// # Sessions and lifetime
//
// Every client connection gets its own [bgexec.Registry] and scope, so a
// client sees only the sessions it started. Over stdio a process serves one
// connection. When the client disconnects (stdin reaches EOF) or the server
// gets SIGTERM or SIGINT, it closes the registry, which kills every running
// command's process group, and exits. Nothing is written to disk.
//
// # Exit notifications
//
// When a background command ends, the server sends the client an MCP
// logging message (notifications/message) with level "notice", logger
// "bgexec" and data {"event":"exit","text":…} carrying the exit summary,
// then one with level "info" and data
// {"event":"wake","reason":"exec:<sessionId>:exit"}. The client must set a
// log level (logging/setLevel): "notice" for the exit summaries, "info" or
// lower for the wake requests too. Protocol revision 2026-07-28 has no
// channel for messages outside a request, so the server offers the earlier
// revisions only.
//
// # Errors
//
// Invalid arguments, an unknown tool and failures that are not about a
// session are tool results with isError set and a text that explains them;
// the server answers none of them with a protocol error, and no bad input
// stops it. A line on stdin that is not a JSON-RPC message gets a JSON-RPC
// error response and is skipped. Every result carries the text for the
// model as text content and bgexec's details as structured content.
//
// The configuration comes from the environment variables of
// [bgexec.ConfigFromEnv]. BGEXEC_SANDBOX=1 runs every command in the
// bubblewrap sandbox with its defaults ([bgexec.Sandbox]): no network, the
// file system read-only but the working directory and /tmp.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/bgexec/bgexec"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	// A write to a closed stdout must be an error we can handle, not a
	// SIGPIPE that kills the server before it has killed its children.
	// Notify (unlike Ignore) leaves SIGPIPE at its default in the commands
	// we spawn.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	stdio := &lineTransport{in: os.Stdin, out: os.Stdout, maxLine: mcp.DefaultMaxLineLength}
	cfg := bgexec.ConfigFromEnv(nil)
	if os.Getenv("BGEXEC_SANDBOX") == "1" {
		cfg.Sandbox = &bgexec.Sandbox{}
	}
	if err := serve(ctx, stdio, cfg, logger); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}
