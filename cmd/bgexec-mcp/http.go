package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
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

	mu      sync.Mutex // guards closing, open and the wg.Go calls
	closing bool
	// open counts the sessions whose registry is open; at most max.
	open, max int
}

// full reports whether no session can start now.
func (h *httpSessions) full() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open >= h.max
}

// tooManySessions is the refusal of a session beyond the cap.
func (h *httpSessions) tooManySessions() string {
	return fmt.Sprintf("too many MCP sessions: %d are open (-max-http-sessions); end one (DELETE) or wait until one is idle for -session-idle", h.max)
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
	if h.open >= h.max {
		// Two initializations raced past the HTTP check. The SDK's
		// session stays until it is idle for -session-idle, without a
		// registry.
		hc.err = errors.New("bgexec-mcp: " + h.tooManySessions())
		return hc.err
	}
	opened, err := newConn(h.opts)
	if err != nil {
		hc.err = fmt.Errorf("bgexec-mcp: %w", err)
		_ = ss.Close() // nothing can be served without a registry
		return hc.err
	}
	c.reg, c.sc, c.events, c.approver = opened.reg, opened.sc, opened.events, opened.approver
	hc.c = c
	h.open++
	h.wg.Go(func() {
		if err := c.run(h.ctx, ss); err != nil {
			h.opts.logger.Warn("closing a session's registry", "err", err)
		}
		h.mu.Lock()
		h.open--
		h.mu.Unlock()
	})
	return nil
}

// serveHTTP serves MCP over Streamable HTTP at /mcp on ln until ctx ends,
// then closes every session (killing their commands) and returns once all
// of them are closed.
func serveHTTP(ctx context.Context, ln net.Listener, o *options, ho httpOptions) error {
	h := &httpSessions{opts: o, ctx: ctx, max: ho.maxSessions}
	if h.max <= 0 {
		h.max = defaultMaxHTTPSessions
	}
	handler := mcp.NewStreamableHTTPHandler(h.newServer, &mcp.StreamableHTTPOptions{
		Logger:              o.logger,
		SessionTimeout:      ho.idle,
		MaxRequestBodyBytes: ho.maxBody,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", requireLocalOrigin(requireToken(ho.token, boundBody(ho.maxBody, h.capSessions(handler)))))
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

// requireLocalOrigin refuses with 403 a request whose Origin header names
// anything but a loopback host (localhost, 127.0.0.0/8, [::1]) over http
// or https, "null" included: MCP servers must validate Origin, so that a
// web page the user visits cannot drive the server from the browser. A
// request without Origin (not from a browser) passes.
func requireLocalOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin, ok := r.Header["Origin"]; ok && !(len(origin) == 1 && localOrigin(origin[0])) {
			http.Error(w, "403 Forbidden: requests from web pages of other origins are refused (Origin "+strconv.Quote(strings.Join(origin, ", "))+")", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func localOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// capSessions answers a request that would open a session (a POST without
// Mcp-Session-Id) with 503 while -max-http-sessions are open, before the
// SDK makes a session for it.
func (h *httpSessions) capSessions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && h.full() {
			w.Header().Set("Retry-After", "10")
			http.Error(w, "503 Service Unavailable: "+h.tooManySessions(), http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bodyChunk is the unit in which boundBody reads a body.
const bodyChunk = 1 << 20

// boundBody refuses a body over limit bytes with 413: at once when its
// Content-Length says so, without reading it, and otherwise as soon as
// limit+1 bytes arrived. A body within the limit is read first, in chunks
// that the handler's reads release one by one, so that no body costs
// more than about its own size before the handler copies it.
func boundBody(limit int64, next http.Handler) http.Handler {
	tooLarge := func(w http.ResponseWriter) {
		w.Header().Set("Connection", "close") // the rest of the body is not read
		http.Error(w, fmt.Sprintf("413 Request Entity Too Large: a message may have at most %d bytes (-max-message-bytes)", limit), http.StatusRequestEntityTooLarge)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			tooLarge(w)
			return
		}
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		var chunks [][]byte
		var n int64
		for n <= limit {
			size := min(int64(bodyChunk), limit+1-n)
			if r.ContentLength >= 0 {
				size = min(size, r.ContentLength-n+1) // one byte more sees a lying length
			}
			buf := make([]byte, size)
			m, err := io.ReadFull(r.Body, buf)
			if m > 0 {
				chunks = append(chunks, buf[:m])
				n += int64(m)
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				break
			}
			if err != nil {
				http.Error(w, "400 Bad Request: reading the body: "+err.Error(), http.StatusBadRequest)
				return
			}
		}
		if n > limit {
			chunks = nil
			tooLarge(w)
			return
		}
		r.Body = &chunkReader{chunks: chunks}
		r.ContentLength = n
		next.ServeHTTP(w, r)
	})
}

// chunkReader reads chunks in order and drops each once it is read.
type chunkReader struct {
	chunks [][]byte
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.chunks) > 0 && len(c.chunks[0]) == 0 {
		c.chunks[0] = nil
		c.chunks = c.chunks[1:]
	}
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	return n, nil
}

func (*chunkReader) Close() error { return nil }
