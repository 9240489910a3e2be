package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bgexec/bgexec"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// options are the server's settings, shared read-only by every connection.
type options struct {
	// cfg is the registry configuration; each connection copies it and sets
	// its own Notifier.
	cfg bgexec.Config
	// progressEvery is the interval of progress notifications while a call
	// that carries a progress token waits; zero disables them.
	progressEvery time.Duration
	// approvalTimeout bounds the wait for the person's answer to an
	// approval form.
	approvalTimeout time.Duration
	// approvalMode is approvalPending or approvalWait (-approval-mode).
	approvalMode string
	logger       *slog.Logger
}

// conn is one MCP session: its registry and scope, the queue of exit
// notifications for the client, and the workdir the client's roots give.
type conn struct {
	opts   *options
	reg    *bgexec.Registry
	sc     *bgexec.Scope
	events *eventQueue
	roots  rootDir
	// approver asks the person; it owns the goroutines of pending forms.
	approver *elicitApprover
	// results holds the results not written yet, when the transport is
	// wrapped by dropCancelled (stdio); nil otherwise.
	results *resultBook
}

// newConn starts the registry of one MCP session.
func newConn(o *options) (*conn, error) {
	c := &conn{opts: o, events: &eventQueue{c: make(chan logEvent, eventQueueSize), logger: o.logger}}
	cfg := o.cfg
	cfg.Notifier = c.events
	// Commands that need approval are put to the person through this
	// session's client; allow-session answers last as long as it.
	c.approver = newElicitApprover(o.approvalTimeout, o.approvalMode, o.logger)
	cfg.Approver = c.approver
	// A pending approval expires when the form's wait does.
	cfg.ApprovalTimeout = o.approvalTimeout
	reg, err := bgexec.NewRegistry(cfg)
	if err != nil {
		return nil, err
	}
	c.reg, c.sc = reg, reg.Scope(scopeKey)
	c.approver.sc = c.sc
	return c, nil
}

// run forwards exit notifications to ss until the session ends or ctx
// ends, then closes the registry, which kills every command of the
// session, and the session. It returns the registry's Close error.
func (c *conn) run(ctx context.Context, ss *mcp.ServerSession) error {
	fwdCtx, stopForwarding := context.WithCancel(context.Background())
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		c.events.forward(fwdCtx, ss)
	}()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_ = ss.Wait() // its error is the transport's; we end either way
	}()

	select {
	case <-ended: // the client disconnected, or the session expired
	case <-ctx.Done(): // SIGTERM or SIGINT
	}
	// Open approval forms first, so that no decision starts a command
	// while the registry closes; then the children, so that none outlives
	// us whatever happens next.
	c.approver.close()
	err := closeRegistry(c.reg)
	stopForwarding()
	_ = ss.Close() // closing an ended session is a no-op
	bound := time.NewTimer(sessionCloseTimeout)
	defer bound.Stop()
	for _, ch := range []chan struct{}{ended, forwarded} {
		select {
		case <-ch:
		case <-bound.C:
			c.opts.logger.Warn("MCP session did not end in time; going on anyway")
			return err
		}
	}
	return err
}

// serve serves one MCP connection over t until the client disconnects or
// ctx ends, then kills every command the connection started. A request
// the client cancels gets no response (see dropCancelled).
func serve(ctx context.Context, t mcp.Transport, o *options) error {
	c, err := newConn(o)
	if err != nil {
		return err
	}
	c.results = &resultBook{sc: c.sc}
	ss, err := c.newServer().Connect(ctx, &dropCancelled{t: t, lost: c.results.lost, done: c.results.delivered}, nil)
	if err != nil {
		return errors.Join(err, closeRegistry(c.reg))
	}
	return c.run(ctx, ss)
}

func closeRegistry(reg *bgexec.Registry) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return reg.Close(ctx)
}

// newServer returns an MCP server whose exec and process tools run in the
// connection's scope. It registers the tools with the low-level AddTool so
// that clients get our input schemas verbatim and arguments reach
// Scope.Call unchanged (but for the workdir the roots give).
func (c *conn) newServer() *mcp.Server {
	var revisions []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v < firstStatelessRevision {
			revisions = append(revisions, v)
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bgexec", Title: "bgexec background shell", Version: "v0.1.0"}, &mcp.ServerOptions{
		Instructions:              instructionsFor(c.opts.cfg.ExitNoticesInResults),
		Logger:                    c.opts.logger,
		SupportedProtocolVersions: revisions,
		//lint:ignore SA1019 roots stay the default workdir without -workdir (see rootDir).
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { c.roots.invalidate() },
	})
	// The definitions depend on the configuration only: over HTTP the
	// server is made before its session's registry starts.
	defs, err := bgexec.ToolDefinitionsFor(c.opts.cfg)
	if err != nil {
		defs = bgexec.ToolDefinitions() // NewRegistry refuses this configuration anyway
	}
	for _, def := range defs {
		meta := toolMeta(def.Name)
		srv.AddTool(&mcp.Tool{
			Name:         def.Name,
			Title:        meta.title,
			Description:  describe(def, c.opts.cfg.ExitNoticesInResults),
			InputSchema:  def.InputSchema,
			OutputSchema: outputSchema(def.Name),
			Annotations:  meta.annotations(),
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return c.callTool(ctx, def.Name, req)
		})
	}
	srv.AddReceivingMiddleware(checkLogLevel)
	return srv
}

// callTool runs one tool call and converts the outcome to an MCP result.
// A call whose request was cancelled returns the context's error: the
// client no longer waits for it, and over stdio no response is sent.
func (c *conn) callTool(ctx context.Context, name string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args []byte
	if req.Params != nil {
		args = req.Params.Arguments
	}
	if name == bgexec.ToolExec && c.opts.cfg.Workdir == "" {
		args = withWorkdir(args, c.roots.get(ctx, req.Session))
	}
	stop := c.startProgress(ctx, name, req)
	// The approver, called on this goroutine, asks through the session
	// the call came in on, or defers and leaves the request in slot.
	slot := &deferSlot{}
	res, err := c.sc.Call(withDeferSlot(withSession(ctx, req.Session), slot), name, args)
	stop()
	if err == nil && res.Details.Status == bgexec.StatusApprovalPending && slot.req != nil {
		c.approver.ask(req.Session, res.Details.ApprovalID, slot.req)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, bgexec.ErrClosed) {
			return toolError("The server is shutting down; no command was started."), nil
		}
		// The arguments were not a JSON object of the tool's fields.
		return toolError(fmt.Sprintf("The %s call could not be made: %v. Pass the arguments as a JSON object matching the tool's input schema.", name, err)), nil
	}
	if c.results != nil && req.Params != nil {
		// Given back if its response is not written (see dropCancelled).
		if id, ok := requestOf(req.Params.Meta); ok {
			c.results.put(id, res)
		}
	}
	text := res.Text()
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: outputOf(text, &res.Details),
		// The call failed (refused, invalid, no such session, not
		// started); a command that ran and ended badly is a successful call.
		IsError: res.IsError,
	}, nil
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: toolOutput{Text: text, Status: bgexec.StatusFailed},
		IsError:           true,
	}
}

// startProgress sends notifications/progress every progressEvery while a
// call whose request carries a progress token runs, so that a client that
// resets its timeout on progress keeps waiting. The returned stop ends the
// goroutine and waits for it.
func (c *conn) startProgress(ctx context.Context, name string, req *mcp.CallToolRequest) (stop func()) {
	var token any
	if req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	if token == nil || c.opts.progressEvery <= 0 || req.Session == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		start := time.Now()
		tick := time.NewTicker(c.opts.progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-tick.C:
				waited := now.Sub(start)
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token,
					Progress:      waited.Seconds(),
					Message:       fmt.Sprintf("%s: still waiting after %s", name, waited.Round(time.Second)),
				})
				if err != nil {
					c.opts.logger.Warn("progress notification not sent", "err", err)
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// logLevels are the levels logging/setLevel accepts (RFC 5424 names).
func logLevels() []string {
	return []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
}

// checkLogLevel answers logging/setLevel with an invalid level with the
// JSON-RPC error -32602 instead of accepting it.
func checkLogLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		//lint:ignore SA1019 logging/setLevel is the deprecated logging feature this server keeps for exit wake-ups (see eventQueue.forward).
		if r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok && method == "logging/setLevel" {
			if r.Params == nil || !slices.Contains(logLevels(), string(r.Params.Level)) {
				level := ""
				if r.Params != nil {
					level = string(r.Params.Level)
				}
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid log level %q: use one of %s", level, strings.Join(logLevels(), ", "))}
			}
		}
		return next(ctx, method, req)
	}
}

// eventQueue is the registry's Notifier. It queues exit notifications as
// logging messages without blocking the registry; forward writes them to
// the client. When the queue is full, new notifications are dropped.
type eventQueue struct {
	c      chan logEvent
	logger *slog.Logger
}

// logEvent is one logging message to send.
type logEvent struct {
	level string
	data  any
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
	q.put(logEvent{level: "notice", data: exitEvent{Event: "exit", Text: text}})
}

// Heartbeat implements bgexec.Notifier.
func (q *eventQueue) Heartbeat(_, reason string) {
	q.put(logEvent{level: "info", data: wakeEvent{Event: "wake", Reason: reason}})
}

func (q *eventQueue) put(m logEvent) {
	select {
	case q.c <- m:
	default:
		q.logger.Warn("exit notification dropped: client is not reading", "data", m.data)
	}
}

// forward writes queued notifications to the client until ctx ends.
func (q *eventQueue) forward(ctx context.Context, ss *mcp.ServerSession) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-q.c:
			// MCP deprecates logging as of revision 2026-07-28 (which this
			// server does not offer) without a replacement that reaches a
			// host's user interface: its advice, stderr or OpenTelemetry,
			// reaches the operator, not the person at the host. So exit
			// wake-ups stay logging messages.
			//lint:ignore SA1019 no current API sends a server-initiated message to the host; see above.
			err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(m.level), Logger: loggerName, Data: m.data})
			if err != nil {
				q.logger.Warn("exit notification not sent", "err", err)
			}
		}
	}
}
