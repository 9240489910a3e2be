package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/bgexec/bgexec"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// scopeKey names the one agent a connection serves. Each connection has a
	// registry of its own, so the key needs to be unique only within it.
	scopeKey = "mcp"
	// closeTimeout bounds the registry's shutdown; after it the remaining
	// process groups are SIGKILLed (and still waited for).
	closeTimeout = 10 * time.Second
	// sessionCloseTimeout bounds how long we wait for the MCP session to end
	// after closing it: a blocking read on stdin cannot be interrupted, and
	// the process exits anyway.
	sessionCloseTimeout = 2 * time.Second
	// eventQueueSize bounds the exit notifications waiting to be written.
	eventQueueSize = 64
	// firstStatelessRevision is the first MCP revision (SEP-2575) where a
	// server can send log messages only within a request, so exit
	// notifications would be lost.
	firstStatelessRevision = "2026-07-28"
	// loggerName is the "logger" of our logging messages.
	loggerName = "bgexec"
)

const instructions = `Tools for running shell commands that may outlive a single call. Start long work once with exec (background: true or a short yieldMs); when it ends this server sends a logging message with the exit summary. Use process wait to block for a log line, a port or the exit, and process poll or log to look at output on demand. Do not poll in a loop.`

// serve serves one MCP connection over t until the client disconnects or
// ctx ends, then kills every command the connection started. cfg.Notifier
// is replaced by one that forwards exit notifications to the client.
func serve(ctx context.Context, t mcp.Transport, cfg bgexec.Config, logger *slog.Logger) error {
	events := &eventQueue{c: make(chan *mcp.LoggingMessageParams, eventQueueSize), logger: logger}
	cfg.Notifier = events
	reg, err := bgexec.NewRegistry(cfg)
	if err != nil {
		return err
	}
	srv := newServer(reg.Scope(scopeKey), reg.ToolDefinitions(), logger)
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return errors.Join(err, closeRegistry(reg))
	}

	fwdCtx, stopForwarding := context.WithCancel(context.Background())
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		events.forward(fwdCtx, ss)
	}()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_ = ss.Wait()
	}()

	select {
	case <-ended: // the client disconnected
	case <-ctx.Done(): // SIGTERM or SIGINT
	}
	// Children first, so that none outlives us whatever happens next.
	err = closeRegistry(reg)
	stopForwarding()
	_ = ss.Close()
	bound := time.NewTimer(sessionCloseTimeout)
	defer bound.Stop()
	for _, c := range []chan struct{}{ended, forwarded} {
		select {
		case <-c:
		case <-bound.C:
			logger.Warn("MCP session did not end in time; exiting anyway")
			return err
		}
	}
	return err
}

func closeRegistry(reg *bgexec.Registry) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return reg.Close(ctx)
}

// newServer returns an MCP server whose exec and process tools run in sc.
// It registers the tools with the low-level AddTool so that clients get our
// schemas verbatim and arguments reach Scope.Call unchanged.
func newServer(sc *bgexec.Scope, defs []bgexec.ToolDefinition, logger *slog.Logger) *mcp.Server {
	var revisions []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v < firstStatelessRevision {
			revisions = append(revisions, v)
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bgexec", Title: "bgexec background shell", Version: "v0.1.0"}, &mcp.ServerOptions{
		Instructions:              instructions,
		Logger:                    logger,
		SupportedProtocolVersions: revisions,
	})
	names := make([]string, 0, len(defs))
	for _, def := range defs {
		names = append(names, def.Name)
		srv.AddTool(&mcp.Tool{
			Name:        def.Name,
			Description: def.Description,
			InputSchema: def.InputSchema,
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return callTool(ctx, sc, def.Name, req), nil
		})
	}
	srv.AddReceivingMiddleware(unknownToolAsToolError(names))
	return srv
}

// callTool runs one tool call and converts the outcome to an MCP result.
func callTool(ctx context.Context, sc *bgexec.Scope, name string, req *mcp.CallToolRequest) *mcp.CallToolResult {
	var args []byte
	if req.Params != nil {
		args = req.Params.Arguments
	}
	res, err := sc.Call(ctx, name, args)
	if err != nil {
		return toolError(fmt.Sprintf("The %s call could not be made: %v. Check the arguments against the tool's schema and retry.", name, err))
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: res.Text()}},
		StructuredContent: res.Details,
		// The call failed (refused, invalid, no such session, not
		// started); a command that ran and ended badly is a successful call.
		IsError: res.IsError,
	}
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// unknownToolAsToolError answers a call of an unknown tool with a tool error
// the model can read, instead of the SDK's protocol error.
func unknownToolAsToolError(names []string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if call, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && call.Params != nil && !slices.Contains(names, call.Params.Name) {
				return toolError(fmt.Sprintf("Unknown tool %q. This server offers exec and process.", call.Params.Name)), nil
			}
			return next(ctx, method, req)
		}
	}
}

// eventQueue is the registry's Notifier. It queues exit notifications as
// logging messages without blocking the registry; forward writes them to
// the client. When the queue is full, new notifications are dropped.
type eventQueue struct {
	c      chan *mcp.LoggingMessageParams
	logger *slog.Logger
}

type exitEvent struct {
	Event string `json:"event"`
	Text  string `json:"text"`
}

type wakeEvent struct {
	Event  string `json:"event"`
	Reason string `json:"reason"`
}

// SystemEvent implements bgexec.Notifier.
func (q *eventQueue) SystemEvent(_, text string) {
	q.put(&mcp.LoggingMessageParams{Level: "notice", Logger: loggerName, Data: exitEvent{Event: "exit", Text: text}})
}

// Heartbeat implements bgexec.Notifier.
func (q *eventQueue) Heartbeat(_, reason string) {
	q.put(&mcp.LoggingMessageParams{Level: "info", Logger: loggerName, Data: wakeEvent{Event: "wake", Reason: reason}})
}

func (q *eventQueue) put(m *mcp.LoggingMessageParams) {
	select {
	case q.c <- m:
	default:
		q.logger.Warn("exit notification dropped: client is not reading", "data", m.Data)
	}
}

// forward writes queued notifications to the client until ctx ends.
func (q *eventQueue) forward(ctx context.Context, ss *mcp.ServerSession) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-q.c:
			// Log is deprecated as of revision 2026-07-28, which we do not offer.
			if err := ss.Log(ctx, m); err != nil { //nolint:staticcheck
				q.logger.Warn("exit notification not sent", "err", err)
			}
		}
	}
}
