package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpOptions configure the Streamable HTTP transport.
type httpOptions struct {
	// token is the bearer token every request must carry.
	token []byte
	// idle closes an MCP session that got no request for this long
	// (killing its commands); zero never does.
	idle time.Duration
	// maxBody bounds one request body in bytes.
	maxBody int64
	// maxSessions bounds the MCP sessions open at once.
	maxSessions int
}

// shutdownTimeout bounds how long the HTTP server waits for requests in
// progress when it stops.
const shutdownTimeout = 5 * time.Second

// httpSessions gives every MCP session of the HTTP transport a registry of
// its own, and closes it (killing its commands) when the session ends:
// by DELETE, by idle expiry, or when the server stops.
type httpSessions struct {
	opts *options
	ctx  context.Context // ends when the server stops
	wg   sync.WaitGroup  // one per running session

	mu      sync.Mutex // guards closing and the wg.Go calls
	closing bool
}

// httpConn is the connection state of one HTTP MCP session, whose
// registry starts at the session's first request.
type httpConn struct {
	mu      sync.Mutex
	c       *conn
	started bool
	err     error
}

// newServer is the SDK handler's getServer: it is called once for every
// new MCP session.
func (h *httpSessions) newServer(*http.Request) *mcp.Server {
	hc := &httpConn{}
	// The server's tools reach the connection only once it exists, that
	// is after the session's first request started it.
	c := &conn{opts: h.opts}
	srv := c.newServer()
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if err := h.start(hc, c, req); err != nil {
				return nil, err
			}
			return next(ctx, method, req)
		}
	})
	return srv
}

// start opens the session's registry at its first request and hands the
// session to a goroutine that closes the registry when the session ends.
// Until the first request nothing was started, so a session the SDK
// drops before (a failed initialization) leaves nothing behind.
func (h *httpSessions) start(hc *httpConn, c *conn, req mcp.Request) error {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.started {
		return hc.err
	}
	hc.started = true
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		hc.err = errors.New("bgexec-mcp: the server is shutting down")
		return hc.err
	}
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok {
		hc.err = errors.New("bgexec-mcp: request without a server session")
		return hc.err
	}
	opened, err := newConn(h.opts)
	if err != nil {
		hc.err = fmt.Errorf("bgexec-mcp: %w", err)
		_ = ss.Close() // nothing can be served without a registry
		return hc.err
	}
	c.reg, c.sc, c.events = opened.reg, opened.sc, opened.events
	hc.c = c
	h.wg.Go(func() {
		if err := c.run(h.ctx, ss); err != nil {
			h.opts.logger.Warn("closing a session's registry", "err", err)
		}
	})
	return nil
}

// serveHTTP serves MCP over Streamable HTTP at /mcp on ln until ctx ends,
// then closes every session (killing their commands) and returns once all
// of them are closed.
func serveHTTP(ctx context.Context, ln net.Listener, o *options, ho httpOptions) error {
	h := &httpSessions{opts: o, ctx: ctx}
	handler := mcp.NewStreamableHTTPHandler(h.newServer, &mcp.StreamableHTTPOptions{
		Logger:              o.logger,
		SessionTimeout:      ho.idle,
		MaxRequestBodyBytes: ho.maxBody,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", requireToken(ho.token, handler))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	var err error
	select {
	case <-ctx.Done():
	case err = <-served: // the listener failed
	}
	// Sessions first: their goroutines see ctx end, kill the commands and
	// close the sessions, which also ends their open streams. No session
	// starts after closing is set.
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	h.wg.Wait()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		_ = srv.Close() // streams that did not end: cut them
	}
	if err == nil {
		err = <-served
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// requireToken lets a request through only with the header
// "Authorization: Bearer <token>"; anything else gets 401. Both sides are
// hashed first, so the comparison takes the same time whatever the
// length or content of the guess.
func requireToken(token []byte, next http.Handler) http.Handler {
	want := sha256.Sum256(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="bgexec"`)
			http.Error(w, "401 Unauthorized: send the server's token as \"Authorization: Bearer <token>\"", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
