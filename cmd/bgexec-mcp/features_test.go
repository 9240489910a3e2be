package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// transportCase starts a server of one transport and connects a client.
type transportCase struct {
	name    string
	connect func(t *testing.T, opts *mcp.ClientOptions, args ...string) *client
}

func transports(t *testing.T) []transportCase {
	return transportsOf(buildServer(t))
}

// transportsOf is transports for the server binary bin.
func transportsOf(bin string) []transportCase {
	return []transportCase{
		{"stdio", func(t *testing.T, opts *mcp.ClientOptions, args ...string) *client {
			return connectWith(t, bin, opts, args...)
		}},
		{"http", func(t *testing.T, opts *mcp.ClientOptions, args ...string) *client {
			hs := startHTTP(t, bin, args...)
			return hs.connect(t, opts)
		}},
	}
}

// httpServer is a server process serving HTTP on a free port.
type httpServer struct {
	endpoint string
	token    string
	cmd      *exec.Cmd
}

func startHTTP(t *testing.T, bin string, args ...string) *httpServer {
	t.Helper()
	token := "test-token-0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	cmd := exec.Command(bin, append([]string{"-http", "127.0.0.1:0", "-token-file", tokenFile}, args...)...)
	cmd.Env = append(os.Environ(), "PI_BASH_YIELD_MS=10000")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	rest := &syncBuffer{}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(callTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", rest.String())
		}
	})
	addr := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`serving MCP at (\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
			_, _ = rest.Write(append(sc.Bytes(), '\n'))
		}
		_ = cmd.Wait()
	}()
	select {
	case a := <-addr:
		return &httpServer{endpoint: a, token: token, cmd: cmd}
	case <-exited:
		t.Fatalf("the server exited: %s", rest.String())
	case <-time.After(callTimeout):
		t.Fatal("the server did not say where it listens")
	}
	return nil
}

// bearer adds the token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func (h *httpServer) connect(t *testing.T, opts *mcp.ClientOptions) *client {
	t.Helper()
	//lint:ignore SA1019 the server keeps the deprecated MCP logging feature (see the README); this tests it.
	c := &client{logs: make(chan *mcp.LoggingMessageParams, 16), progress: make(chan *mcp.ProgressNotificationParams, 64)}
	mc := mcp.NewClient(&mcp.Implementation{Name: "bgexec-test", Version: "v0"}, c.options(opts))
	c.mc = mc
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	hc := &http.Client{Transport: bearer{h.token, http.DefaultTransport}}
	cs, err := mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.endpoint, HTTPClient: hc}, nil)
	require.NoError(t, err)
	c.cs = cs
	t.Cleanup(func() { _ = cs.Close() })
	return c
}

// structured returns a result's structured content as JSON.
func structured(t *testing.T, res *mcp.CallToolResult) []byte {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	return b
}

// noticesOf returns the notice lines a result's text starts with.
func noticesOf(t *testing.T, res *mcp.CallToolResult) []string {
	var out []string
	for _, l := range strings.Split(textOf(t, res), "\n") {
		if !strings.HasPrefix(l, bgexec.NoticePrefix) {
			break
		}
		out = append(out, l)
	}
	return out
}

// awaitNotice makes list calls until one carries a notice, and returns
// every notice line seen. A background command's end is recorded a moment
// after its process exits; list never reports an end itself, so it only
// carries notices.
func awaitNotice(t *testing.T, c *client) []string {
	t.Helper()
	deadline := time.Now().Add(callTimeout)
	for time.Now().Before(deadline) {
		if n := noticesOf(t, c.call(t, "process", map[string]any{"action": "list"})); len(n) > 0 {
			return n
		}
	}
	t.Fatal("no exit notice in any result")
	return nil
}

func TestExitNoticeInNextResult(t *testing.T) {
	t.Parallel()
	for _, tc := range transports(t) {
		for _, setLevel := range []bool{false, true} {
			name := tc.name + " without setLevel"
			if setLevel {
				name = tc.name + " with setLevel"
			}
			t.Run(name, func(t *testing.T) {
				c := tc.connect(t, nil)
				if setLevel {
					ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
					defer cancel()
					//lint:ignore SA1019 the server keeps the deprecated MCP logging feature (see the README); this tests it.
					require.NoError(t, c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
				}
				res := c.call(t, "exec", map[string]any{"command": "echo build done", "background": true})
				id := detailsOf(t, res).SessionID
				want := bgexec.NoticePrefix + "Exec completed (" + id + ", code 0) :: build done"
				assert.Equal(t, []string{want}, awaitNotice(t, c))

				// Never again, in any later result.
				res = c.call(t, "exec", map[string]any{"command": "echo next"})
				assert.Equal(t, "next", textOf(t, res))
				res = c.call(t, "process", map[string]any{"action": "poll", "sessionId": id})
				assert.Empty(t, noticesOf(t, res))

				// An exit a wait reported is never a notice.
				res = c.call(t, "exec", map[string]any{"command": "sleep 0.5; echo waited", "background": true})
				waited := detailsOf(t, res).SessionID
				res = c.call(t, "process", map[string]any{"action": "wait", "sessionId": waited, "timeout": 20000})
				require.Equal(t, "exit", detailsOf(t, res).Condition, textOf(t, res))
				res = c.call(t, "process", map[string]any{"action": "list"})
				assert.Empty(t, noticesOf(t, res))

				if setLevel {
					// The logging message is still sent, beside the notice.
					timeout := time.After(callTimeout)
					for {
						select {
						case m := <-c.logs:
							if b, _ := json.Marshal(m.Data); strings.Contains(string(b), `"Exec completed (`+id) {
								return
							}
						case <-timeout:
							t.Fatal("no logging message for the exit")
						}
					}
				}
			})
		}
	}
}

func TestCallsFitTheHost(t *testing.T) {
	t.Parallel()
	// Scaled: a 12 s job, a 15 s client timeout, calls capped at 2 s (the
	// defaults are a 90 s job, 60 s, 50 s). The client's timeout is a
	// margin over the cap that holds on a loaded machine: a call capped at
	// 2 s took over 5 s there beside the rest of the suite.
	const clientTimeout = 15 * time.Second
	for _, tc := range transports(t) {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.connect(t, nil, "-max-call-ms", "2000", "-progress-ms", "200")
			callWithin := func(tool string, args map[string]any) *mcp.CallToolResult {
				ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
				defer cancel()
				params := &mcp.CallToolParams{Name: tool, Arguments: args}
				params.SetProgressToken("tok-" + tool)
				res, err := c.cs.CallTool(ctx, params)
				require.NoError(t, err, "the call returned before the client's timeout")
				return res
			}
			res := callWithin("exec", map[string]any{"command": "sleep 12; echo late", "yieldMs": 120000})
			d := detailsOf(t, res)
			require.Equal(t, bgexec.StatusRunning, d.Status, textOf(t, res))
			assert.Contains(t, textOf(t, res), "This call returned at the server's limit of 2000 ms per call (yieldMs asked for 120000 ms)")
			select {
			case p := <-c.progress:
				assert.Equal(t, "tok-exec", p.ProgressToken)
				assert.Positive(t, p.Progress)
			case <-time.After(callTimeout):
				t.Error("no progress notification while the exec waited")
			}

			var ended *mcp.CallToolResult
			var seen strings.Builder // every wait's new output: "late" may come in the wait before the exit
			for range 15 {
				res = callWithin("process", map[string]any{"action": "wait", "sessionId": d.SessionID, "timeout": 600000})
				seen.WriteString(textOf(t, res))
				if detailsOf(t, res).Condition == "exit" {
					ended = res
					break
				}
				assert.Contains(t, textOf(t, res), "call wait again to keep waiting")
			}
			require.NotNil(t, ended, "the job ended within fifteen capped waits")
			assert.Contains(t, seen.String(), "late", "the job's output reached the client")
		})
	}
}

func TestCancelledCallIsNotAnsweredAndEndsItsRun(t *testing.T) {
	t.Parallel()
	for _, tc := range transports(t) {
		t.Run(tc.name+": the foreground run is killed", func(t *testing.T) {
			c := tc.connect(t, nil)
			pidFile := filepath.Join(t.TempDir(), "pid")
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{
					"command": "echo $$ > " + pidFile + "; exec sleep 300", "yieldMs": 60000,
				}})
				errc <- err
			}()
			pid := awaitPidFile(t, pidFile)
			cancel()
			require.ErrorIs(t, <-errc, context.Canceled)
			requireGroupGone(t, pid)
			// The server serves on.
			assert.Equal(t, "alive", textOf(t, c.call(t, "exec", map[string]any{"command": "echo alive"})))
		})
	}

	t.Run("stdio: no response is written for the cancelled request", func(t *testing.T) {
		raw := startRaw(t, buildServer(t))
		pidFile := filepath.Join(t.TempDir(), "pid")
		raw.send(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"exec","arguments":{"command":"echo $$ > `+pidFile+`; exec sleep 300","yieldMs":60000}}}`)
		pid := awaitPidFile(t, pidFile)
		raw.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"user pressed stop"}}`)
		requireGroupGone(t, pid)
		raw.send(t, `{"jsonrpc":"2.0","id":6,"method":"ping"}`)
		r := raw.next(t)
		require.NotNil(t, r.ID)
		assert.Equal(t, int64(6), *r.ID, "the next response answers the ping; request 5 got none")
	})
}

// awaitPidFile waits until a command wrote its pid to path.
func awaitPidFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(callTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			var pid int
			require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(string(b))), &pid))
			return pid
		}
		<-tick.C
	}
	t.Fatal("the command did not start")
	return 0
}

func TestToolsDescribeThemselves(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	c := connect(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	list, err := c.cs.ListTools(ctx, nil)
	require.NoError(t, err)
	schemas := map[string]*jsonschema.Schema{}
	for _, tool := range list.Tools {
		require.NotNil(t, tool.Annotations, tool.Name)
		assert.NotEmpty(t, tool.Title, tool.Name)
		a := tool.Annotations
		assert.False(t, a.ReadOnlyHint, "%s has actions that change state", tool.Name)
		require.NotNil(t, a.DestructiveHint)
		assert.True(t, *a.DestructiveHint, "%s can kill or run anything", tool.Name)
		assert.False(t, a.IdempotentHint, tool.Name)
		require.NotNil(t, a.OpenWorldHint)
		assert.Equal(t, tool.Name == "exec", *a.OpenWorldHint, tool.Name)
		assert.NotContains(t, tool.Description, "system message", "MCP hosts show no system message")

		b, err := json.Marshal(tool.OutputSchema)
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		require.NoError(t, err)
		comp := jsonschema.NewCompiler()
		require.NoError(t, comp.AddResource(tool.Name+".json", doc))
		schemas[tool.Name], err = comp.Compile(tool.Name + ".json")
		require.NoError(t, err, tool.Name)
	}
	require.Len(t, schemas, 2)
	validate := func(tool string, res *mcp.CallToolResult) {
		t.Helper()
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(structured(t, res))))
		require.NoError(t, err)
		assert.NoError(t, schemas[tool].Validate(v), "%s: %s", tool, structured(t, res))
	}
	validate("exec", c.call(t, "exec", map[string]any{"command": "echo hi"}))
	validate("exec", c.call(t, "exec", map[string]any{"command": "exit 3"}))
	validate("exec", c.call(t, "exec", map[string]any{"command": "kill -9 $$"}))
	validate("exec", c.call(t, "exec", map[string]any{"command": 5}))
	validate("exec", c.call(t, "exec", map[string]any{"command": "true", "env": map[string]any{"PATH": "/x"}}))
	bg := c.call(t, "exec", map[string]any{"command": "echo ready; exec sleep 300", "background": true, "stdin": "pipe"})
	validate("exec", bg)
	id := detailsOf(t, bg).SessionID
	for _, args := range []map[string]any{
		{"action": "wait", "sessionId": id, "pattern": "^ready$", "timeout": 20000},
		{"action": "poll", "sessionId": id},
		{"action": "log", "sessionId": id},
		{"action": "write", "sessionId": id, "data": "x\n"},
		{"action": "list"},
		{"action": "poll", "sessionId": "no-such"},
		{"action": "bogus", "sessionId": id},
		{"action": "kill", "sessionId": id},
		{"action": "clear", "sessionId": id},
	} {
		validate("process", c.call(t, "process", args))
	}

	t.Run("every detail is mapped or deliberately dropped", func(t *testing.T) {
		mapped := map[string]bool{}
		var props struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		// Either tool's schema maps it (the approval fields are exec's).
		for _, tool := range []string{"exec", "process"} {
			require.NoError(t, json.Unmarshal(outputSchema(tool), &props))
			for k := range props.Properties {
				mapped[k] = true
			}
		}
		for _, f := range detailFields() {
			if !mapped[f] {
				assert.Contains(t, droppedDetails(), f, "bgexec.Details has %q: map it into toolOutput and the output schema, or drop it on purpose", f)
			}
		}
	})
}

// statusPart is a result's structured content without its text field.
func statusPart(t *testing.T, res *mcp.CallToolResult) []byte {
	t.Helper()
	var sc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(structured(t, res), &sc))
	require.Contains(t, sc, "text")
	delete(sc, "text")
	b, err := json.Marshal(sc)
	require.NoError(t, err)
	return b
}

func TestResultsStaySmall(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	c := connect(t, bin)
	res := c.call(t, "exec", map[string]any{"command": "seq 1 30000"})
	assert.True(t, strings.HasSuffix(textOf(t, res), "\n30000"))
	assert.Less(t, len(statusPart(t, res)), 1024, "the foreground output is carried once, as the text: %s", statusPart(t, res))

	res = c.call(t, "exec", map[string]any{"command": "seq 1 30000; echo done; exec sleep 300", "background": true})
	id := detailsOf(t, res).SessionID
	assert.Less(t, len(statusPart(t, res)), 1024, "no tail in a running result")
	c.call(t, "process", map[string]any{"action": "wait", "sessionId": id, "pattern": "^done$", "timeout": 20000})
	c.call(t, "process", map[string]any{"action": "poll", "sessionId": id})
	res = c.call(t, "process", map[string]any{"action": "poll", "sessionId": id})
	require.Contains(t, textOf(t, res), "(no new output)")
	assert.LessOrEqual(t, len(structured(t, res)), 2048+len(textOf(t, res)), "an empty poll: %s", structured(t, res))
	assert.LessOrEqual(t, len(textOf(t, res)), 2048)
	c.call(t, "process", map[string]any{"action": "kill", "sessionId": id})
}

func TestProtocolErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range transports(t) {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.connect(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": "ls"}})
			var we *jsonrpc.Error
			require.True(t, errors.As(err, &we), "an unknown tool is a JSON-RPC error: %v", err)
			assert.Equal(t, int64(jsonrpc.CodeInvalidParams), we.Code)

			//lint:ignore SA1019 the server keeps the deprecated MCP logging feature (see the README); this tests it.
			err = c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "loud"})
			require.True(t, errors.As(err, &we), "an invalid level is a JSON-RPC error: %v", err)
			assert.Equal(t, int64(jsonrpc.CodeInvalidParams), we.Code)
			assert.Contains(t, we.Message, "notice")
			//lint:ignore SA1019 the server keeps the deprecated MCP logging feature (see the README); this tests it.
			require.NoError(t, c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}))
		})
	}
}

func TestRootsAreTheDefaultWorkdir(t *testing.T) {
	t.Parallel()
	for _, tc := range transports(t) {
		t.Run(tc.name, func(t *testing.T) {
			first, second, explicit := t.TempDir(), t.TempDir(), t.TempDir()
			c := tc.connect(t, nil)
			pwd := func(args map[string]any) string {
				args["command"] = "pwd"
				return textOf(t, c.call(t, "exec", args))
			}
			//lint:ignore SA1019 the server keeps the deprecated MCP roots feature (see the README); this tests it.
			c.mc.AddRoots(&mcp.Root{URI: "file://" + first, Name: "project"})
			// The change reaches the server as a notification; the exec
			// that follows may overtake it over HTTP, so look again.
			deadline := time.Now().Add(callTimeout)
			for pwd(map[string]any{}) != first {
				require.True(t, time.Now().Before(deadline), "the first root never became the workdir")
			}
			assert.Equal(t, explicit, pwd(map[string]any{"workdir": explicit}), "an explicit workdir wins")

			//lint:ignore SA1019 the server keeps the deprecated MCP roots feature (see the README); this tests it.
			c.mc.RemoveRoots("file://" + first)
			//lint:ignore SA1019 the server keeps the deprecated MCP roots feature (see the README); this tests it.
			c.mc.AddRoots(&mcp.Root{URI: "file://" + second})
			for pwd(map[string]any{}) != second {
				require.True(t, time.Now().Before(deadline), "a changed root list is asked for again")
			}
		})
	}
}

func TestHTTPNeedsTheToken(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	hs := startHTTP(t, bin)
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	post := func(auth string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, hs.endpoint, strings.NewReader(initBody))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	for _, auth := range []string{"", "Bearer ", "Bearer wrong-token-0123456789", "Basic " + hs.token, hs.token, "Bearer " + hs.token + "x"} {
		resp := post(auth)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "Authorization %q", auth)
		assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
	}
	resp := post("Bearer " + hs.token)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestHTTPSessionsOwnTheirProcesses(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	hs := startHTTP(t, bin)
	a, b := hs.connect(t, nil), hs.connect(t, nil)
	pa, pb := startSleeper(t, a), startSleeper(t, b)
	res := b.call(t, "process", map[string]any{"action": "list"})
	require.Len(t, detailsOf(t, res).Sessions, 1, "each session sees its own")

	// Close sends DELETE: the session's registry is closed, its commands killed.
	require.NoError(t, a.cs.Close())
	requireGroupGone(t, pa)
	assert.True(t, groupAlive(t, pb), "the other session's command runs on")

	// SIGTERM closes every session's registry before the server exits.
	require.NoError(t, hs.cmd.Process.Signal(syscall.SIGTERM))
	requireGroupGone(t, pb)

	t.Run("an idle session expires and kills its commands", func(t *testing.T) {
		idle := startHTTP(t, bin, "-session-idle", "1s")
		c := idle.connect(t, nil)
		pid := startSleeper(t, c)
		requireGroupGone(t, pid) // no request for 1 s
	})
}

func TestTenMegabyteCommand(t *testing.T) {
	t.Parallel()
	// The request is written to a file once and sent as raw bytes, as any
	// client's would be: every quote of the command is a two-byte JSON
	// escape, so the line is 20 MB, above the SDK's 16 MiB default line
	// limit. Neither the request nor the server goes through the race
	// detector: this test is about the sizes the wire takes, and 20 MB of
	// JSON costs half a minute of CPU under it. Every other test runs the
	// race-built server.
	const quotes = 10 << 20
	request := filepath.Join(t.TempDir(), "call.json")
	f, err := os.Create(request)
	require.NoError(t, err)
	_, err = io.WriteString(f, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"command":": '`)
	require.NoError(t, err)
	chunk := strings.Repeat(`\"`, 32<<10)
	for range quotes / (32 << 10) {
		_, err = io.WriteString(f, chunk)
		require.NoError(t, err)
	}
	_, err = io.WriteString(f, `'; echo ok"}}}`+"\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	bin := buildServerRace(t, false)

	t.Run("stdio", func(t *testing.T) {
		raw := startRaw(t, bin)
		f, err := os.Open(request)
		require.NoError(t, err)
		defer func() { _ = f.Close() }()
		_, err = io.Copy(raw.stdin, f)
		require.NoError(t, err)
		// 20 MB of JSON is slow to decode on a busy machine: this one
		// call gets minutes, not callTimeout.
		assertTenMegabyteResult(t, raw.nextWithin(t, 4*time.Minute))
	})
	t.Run("http", func(t *testing.T) {
		hs := startHTTP(t, bin)
		session := hs.initialize(t)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		f, err := os.Open(request)
		require.NoError(t, err)
		defer func() { _ = f.Close() }()
		assertTenMegabyteResult(t, hs.call(ctx, t, session, f))
	})
}

// assertTenMegabyteResult checks TestTenMegabyteCommand's answer: the
// command ran and said ok.
func assertTenMegabyteResult(t *testing.T, resp rawResponse) {
	t.Helper()
	require.Nil(t, resp.Error, "exec of a %d-byte command", 10<<20+len(": ''; echo ok"))
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	require.NoError(t, json.Unmarshal(resp.Result, &res), string(resp.Result))
	require.Len(t, res.Content, 1, string(resp.Result))
	assert.Equal(t, "ok", res.Content[0].Text)
	assert.False(t, res.IsError)
}

// detailFields are the JSON names of bgexec.Details' fields.
func detailFields() []string {
	var out []string
	rt := reflect.TypeFor[bgexec.Details]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// rawServer is a server process spoken to in raw JSON-RPC lines.
type rawServer struct {
	stdin io.WriteCloser
	lines chan string
}

type rawResponse struct {
	ID     *int64          `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// startRaw starts the server and initializes a session by hand.
func startRaw(t *testing.T, bin string) *rawServer {
	t.Helper()
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	r := &rawServer{stdin: stdin, lines: make(chan string, 64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(r.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-done:
		case <-time.After(callTimeout):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	require.Nil(t, r.next(t).Error)
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawServer) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(r.stdin, line+"\n")
	require.NoError(t, err)
}

// next returns the next response (notifications are skipped).
func (r *rawServer) next(t *testing.T) rawResponse {
	t.Helper()
	return r.nextWithin(t, callTimeout)
}

// nextWithin is next with its own deadline.
func (r *rawServer) nextWithin(t *testing.T, d time.Duration) rawResponse {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case l, ok := <-r.lines:
			require.True(t, ok, "the server closed stdout")
			var resp rawResponse
			require.NoError(t, json.Unmarshal([]byte(l), &resp), l)
			if resp.ID == nil && resp.Error == nil {
				continue // a notification
			}
			return resp
		case <-timeout:
			t.Fatal("no response from the server")
		}
	}
}
