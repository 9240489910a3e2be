package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// postInit sends an initialize request with the token and the given
// Origin header ("" for none) and returns the status code.
func (h *httpServer) postInit(t *testing.T, origin string) int {
	t.Helper()
	code, _ := h.postInitBody(t, origin)
	return code
}

// postInitBody is postInit, also returning the response body.
func (h *httpServer) postInitBody(t *testing.T, origin string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req := h.request(ctx, t, "", strings.NewReader(initBody))
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode, string(b)
}

// initialize opens an MCP session on the server by hand, as a client
// that does not use the SDK would, and returns its Mcp-Session-Id.
func (h *httpServer) initialize(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp := h.post(ctx, t, "", strings.NewReader(initBody))
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	session := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session, "initialize answered without a session id")
	require.Nil(t, readRawResponse(t, resp).Error)
	note := h.post(ctx, t, session, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	_, _ = io.Copy(io.Discard, note.Body)
	_ = note.Body.Close()
	require.Equal(t, http.StatusAccepted, note.StatusCode)
	return session
}

// call posts one request of session (a *os.File body is sent with its
// length) and returns the server's response to it.
func (h *httpServer) call(ctx context.Context, t *testing.T, session string, body io.Reader) rawResponse {
	t.Helper()
	resp := h.post(ctx, t, session, body)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return readRawResponse(t, resp)
}

// post sends body to the endpoint (see request).
func (h *httpServer) post(ctx context.Context, t *testing.T, session string, body io.Reader) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(h.request(ctx, t, session, body))
	require.NoError(t, err)
	return resp
}

// request is a POST of body to the endpoint with the token, the headers
// a client sends, and session's id when it is not "". A *os.File body is
// sent with its length.
func (h *httpServer) request(ctx context.Context, t *testing.T, session string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.endpoint, body)
	require.NoError(t, err)
	if f, ok := body.(*os.File); ok {
		st, err := f.Stat()
		require.NoError(t, err)
		req.ContentLength = st.Size()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+h.token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	return req
}

// readRawResponse reads the JSON-RPC response from an HTTP response's
// body, plain JSON or a stream of server-sent events (whose notifications
// are skipped).
func readRawResponse(t *testing.T, resp *http.Response) rawResponse {
	t.Helper()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	events := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	for sc.Scan() {
		line := sc.Text()
		if events {
			var ok bool
			if line, ok = strings.CutPrefix(line, "data:"); !ok {
				continue
			}
		}
		var r rawResponse
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		if r.ID != nil || r.Error != nil {
			return r
		}
	}
	require.NoError(t, sc.Err())
	t.Fatal("the response has no JSON-RPC answer")
	return rawResponse{}
}

// TestHTTPRefusesForeignOrigins attacks the server as a web page would
// (DNS rebinding aside, which the SDK's Host check covers): a request with
// the right token but another site's Origin is refused.
func TestHTTPRefusesForeignOrigins(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, buildServer(t))
	for _, origin := range []string{"http://evil.example", "null", "https://localhost.evil.example", "http://127.0.0.1.nip.io:8080", "file://", "chrome-extension://abc"} {
		assert.Equal(t, http.StatusForbidden, hs.postInit(t, origin), "Origin %q", origin)
	}
	for _, origin := range []string{"", "http://localhost", "http://localhost:3000", "http://127.0.0.1:8080", "https://127.0.0.1", "http://[::1]:6274"} {
		assert.Equal(t, http.StatusOK, hs.postInit(t, origin), "Origin %q", origin)
	}
}

// TestHTTPSessionCap opens sessions past -max-http-sessions: the one
// beyond is refused with a text that says why, and a session closed with
// DELETE frees its slot.
func TestHTTPSessionCap(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, buildServer(t), "-max-http-sessions", "2")
	a := hs.connect(t, nil)
	hs.connect(t, nil)

	mc := mcp.NewClient(&mcp.Implementation{Name: "third", Version: "v0"}, nil)
	connect := func() (*mcp.ClientSession, error) {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		hc := &http.Client{Transport: bearer{hs.token, http.DefaultTransport}}
		return mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.endpoint, HTTPClient: hc}, nil)
	}
	_, err := connect()
	require.Error(t, err, "a third session is refused")
	code, body := hs.postInitBody(t, "")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "too many MCP sessions: 2 are open (-max-http-sessions)")

	require.NoError(t, a.cs.Close()) // DELETE
	// The slot is free once the session's registry is closed, a moment
	// after the DELETE is answered.
	deadline := time.Now().Add(callTimeout)
	for {
		cs, err := connect()
		if err == nil {
			require.NoError(t, cs.Close())
			break
		}
		require.True(t, time.Now().Before(deadline), "the DELETEd session's slot was never freed")
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHTTPBodyOverTheLimit sends the headers of a request whose
// Content-Length is over -max-message-bytes and no body: the 413 must
// come without the server waiting for (or reading) the body.
func TestHTTPBodyOverTheLimit(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, buildServer(t), "-max-message-bytes", "1048576")
	u, err := url.Parse(hs.endpoint)
	require.NoError(t, err)
	conn, err := net.DialTimeout("tcp", u.Host, callTimeout)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	require.NoError(t, conn.SetDeadline(time.Now().Add(callTimeout)))
	_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", u.Host, hs.token, 1048577)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "a response before any byte of the body")
	defer func() { _ = resp.Body.Close() }()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	b, _ := io.ReadAll(resp.Body)
	assert.Contains(t, string(b), "1048576")
}

// memStatus reads a field (in kB) of /proc/<pid>/status.
func memStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestHTTPBodyPeakMemory streams bodies past the limit, without a
// Content-Length, to a server built without the race detector, and
// compares its peak RSS (VmHWM) with its RSS before: the growth stays
// under twice the limit. It runs alone (no t.Parallel), before the
// parallel tests, so nothing else competes with the measured server.
func TestHTTPBodyPeakMemory(t *testing.T) {
	const limit = 32 << 20
	hs := startHTTP(t, buildServerRace(t, false), "-max-message-bytes", strconv.Itoa(limit))
	pid := hs.cmd.Process.Pid
	require.Equal(t, http.StatusOK, hs.postInit(t, ""), "warm up")
	before := memStatus(t, pid, "VmRSS")
	for _, size := range []int64{100 << 20, limit + 1} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		pr, pw := io.Pipe()
		go func() {
			// A JSON-RPC request whose command is size bytes long.
			head := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"`
			_, err := io.WriteString(pw, head)
			chunk := strings.Repeat("a", 64<<10)
			for n := int64(len(head)); err == nil && n < size; n += int64(len(chunk)) {
				_, err = io.WriteString(pw, chunk)
			}
			if err == nil {
				_, err = io.WriteString(pw, `"}}`)
			}
			pw.CloseWithError(err)
		}()
		req := hs.request(ctx, t, "", pr)
		req.ContentLength = -1 // chunked: the server cannot know the size
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "a %d-byte body", size)
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		} // else the server closed the connection after its 413, mid-upload
		_ = pr.CloseWithError(io.ErrClosedPipe)
		cancel()
	}
	peak := memStatus(t, pid, "VmHWM")
	growth := peak - before
	t.Logf("RSS before %d MiB, peak %d MiB: growth %.2f× the %d MiB limit", before>>20, peak>>20, float64(growth)/limit, limit>>20)
	assert.Less(t, growth, int64(2*limit), "peak RSS growth under twice the limit")
}
