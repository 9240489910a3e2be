package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec"
	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain runs the tests under goleak and removes the server builds.
//
// Tests that start server processes of their own run in parallel (each
// has its own server, port, session and temporary files, and none counts
// this process's children or descriptors); TestHTTPBodyPeakMemory runs
// alone, since it measures a server's peak memory. They spend their time
// waiting on those servers, so two run per CPU.
func TestMain(m *testing.M) {
	proctest.SetParallelPerCPU(2)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		servers.remove()
		os.Exit(code)
	}))
}

// callTimeout bounds every single MCP call of these tests.
const callTimeout = 30 * time.Second

// buildServer returns this command built into a temporary directory (with
// -race when the test runs with it).
func buildServer(t *testing.T) string {
	t.Helper()
	return buildServerRace(t, raceEnabled)
}

// buildServerRace returns the server built with or without the race
// detector (whose shadow memory would swamp a memory measurement).
func buildServerRace(t *testing.T, race bool) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not in PATH")
	}
	bin, err := servers.get(race)
	require.NoError(t, err)
	return bin
}

// servers is the test process's one build of the server per race setting.
var servers serverBuilds

// serverBuilds builds the server once per race setting for the whole test
// process: the binary is the same for every test, and each build cost
// seconds of linking (a race build 3 to 10 s, once per test). Every test
// still starts server processes of its own from it. The binaries live in
// one temporary directory, which TestMain removes at the end. Safe for
// concurrent use; the zero value is ready.
type serverBuilds struct {
	mu    sync.Mutex
	dir   string               // "" until the first build
	built map[bool]serverBuild // by race setting; a failed build is kept too
}

type serverBuild struct {
	path string
	err  error
}

// get returns the binary for the race setting, building it on first use.
func (s *serverBuilds) get(race bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.built[race]; ok {
		return b.path, b.err
	}
	if s.dir == "" {
		dir, err := os.MkdirTemp("", "bgexec-mcp-test-")
		if err != nil {
			return "", err
		}
		s.dir = dir
	}
	// The same name for both (a directory each), as the tests' servers
	// had before.
	bin := filepath.Join(s.dir, "plain", "bgexec-mcp")
	args := []string{"build", "-o", bin}
	if race {
		bin = filepath.Join(s.dir, "race", "bgexec-mcp")
		args = []string{"build", "-race", "-o", bin}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var b serverBuild
	if out, err := exec.CommandContext(ctx, "go", append(args, ".")...).CombinedOutput(); err != nil {
		b.err = fmt.Errorf("go build: %w: %s", err, out)
	} else {
		b.path = bin
	}
	if s.built == nil {
		s.built = map[bool]serverBuild{}
	}
	s.built[race] = b
	return b.path, b.err
}

// remove deletes the built binaries.
func (s *serverBuilds) remove() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir != "" {
		_ = os.RemoveAll(s.dir) // Best effort: a temporary directory.
	}
}

// syncBuffer collects the server's stderr for failure reports.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// client is one MCP client connected to its own server process.
type client struct {
	mc  *mcp.Client
	cs  *mcp.ClientSession
	cmd *exec.Cmd
	//lint:ignore SA1019 the server keeps the deprecated MCP logging feature (see the README); this tests it.
	logs     chan *mcp.LoggingMessageParams
	progress chan *mcp.ProgressNotificationParams
}

// options returns opts (or new options) with handlers that forward logging
// messages and progress notifications to the client's channels.
func (c *client) options(opts *mcp.ClientOptions) *mcp.ClientOptions {
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	//lint:ignore SA1019 the server keeps the deprecated MCP logging feature (see the README); this tests it.
	opts.LoggingMessageHandler = func(_ context.Context, req *mcp.LoggingMessageRequest) {
		select {
		case c.logs <- req.Params:
		default:
		}
	}
	opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		select {
		case c.progress <- req.Params:
		default:
		}
	}
	return opts
}

func connect(t *testing.T, bin string, args ...string) *client {
	t.Helper()
	return connectWith(t, bin, nil, args...)
}

// connectWith connects a client with the given options (its logging and
// progress handlers are set here) to a new server process run with args.
func connectWith(t *testing.T, bin string, opts *mcp.ClientOptions, args ...string) *client {
	t.Helper()
	//lint:ignore SA1019 the server keeps the deprecated MCP logging feature (see the README); this tests it.
	c := &client{logs: make(chan *mcp.LoggingMessageParams, 16), progress: make(chan *mcp.ProgressNotificationParams, 64)}
	stderr := &syncBuffer{}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Stderr = stderr
	c.cmd.Env = append(os.Environ(), "PI_BASH_YIELD_MS=10000")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	mc := mcp.NewClient(&mcp.Implementation{Name: "bgexec-test", Version: "v0"}, c.options(opts))
	c.mc = mc
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cs, err := mc.Connect(ctx, &mcp.CommandTransport{Command: c.cmd}, nil)
	require.NoError(t, err)
	c.cs = cs
	t.Cleanup(func() { _ = cs.Close() })
	return c
}

func (c *client) call(t *testing.T, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, "%s %v", tool, args)
	return res
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is text: %T", res.Content[0])
	return tc.Text
}

func detailsOf(t *testing.T, res *mcp.CallToolResult) bgexec.Details {
	t.Helper()
	require.NotNil(t, res.StructuredContent, "the result carries the details")
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var d bgexec.Details
	require.NoError(t, json.Unmarshal(b, &d))
	return d
}

// groupAlive reports whether a process of group pgid is alive (zombies,
// which wait only to be reaped, do not count).
func groupAlive(t *testing.T, pgid int) bool {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // it ended meanwhile
		}
		// pid (comm) state ppid pgrp …; comm may contain spaces and parens.
		rest := string(stat[bytes.LastIndexByte(stat, ')')+2:])
		f := strings.Fields(rest)
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// requireGroupGone waits, up to a deadline, until no process of group pgid
// is alive. Nothing signals the end of a process that is not our child, so
// this checks at short intervals.
func requireGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for groupAlive(t, pgid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			t.Fatalf("process group %d outlived the server", pgid)
		}
		<-tick.C
	}
}

// startSleeper starts a background command whose process group outlives
// its shell's first child, and returns the group id.
func startSleeper(t *testing.T, c *client) int {
	t.Helper()
	res := c.call(t, "exec", map[string]any{"command": "sleep 300; echo never", "background": true})
	d := detailsOf(t, res)
	require.Equal(t, bgexec.StatusRunning, d.Status, textOf(t, res))
	require.NotZero(t, d.Pid)
	require.True(t, groupAlive(t, d.Pid))
	t.Cleanup(func() { _ = syscall.Kill(-d.Pid, syscall.SIGKILL) })
	return d.Pid
}

func TestServerOverStdio(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	c := connect(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	//lint:ignore SA1019 the server keeps the deprecated MCP logging feature (see the README); this tests it.
	require.NoError(t, c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))

	t.Run("lists exec and process with our schemas verbatim", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		res, err := c.cs.ListTools(ctx, nil)
		require.NoError(t, err)
		require.Len(t, res.Tools, 2)
		for i, def := range bgexec.ToolDefinitions() {
			got := res.Tools[i]
			assert.Equal(t, def.Name, got.Name)
			assert.Equal(t, describe(def, true), got.Description)
			schema, err := json.Marshal(got.InputSchema)
			require.NoError(t, err)
			assert.JSONEq(t, string(def.InputSchema), string(schema))
		}
	})

	t.Run("a foreground command returns its output and details", func(t *testing.T) {
		res := c.call(t, "exec", map[string]any{"command": "echo hello; echo oops >&2"})
		assert.False(t, res.IsError)
		// stdout and stderr are separate pipes: their order is up to the reads.
		assert.ElementsMatch(t, []string{"hello", "oops"}, strings.Split(textOf(t, res), "\n"))
		d := detailsOf(t, res)
		assert.Equal(t, bgexec.StatusCompleted, d.Status)
		require.NotNil(t, d.ExitCode)
		assert.Equal(t, 0, *d.ExitCode)
	})

	t.Run("the contract's refinements hold over MCP", func(t *testing.T) {
		res := c.call(t, "exec", map[string]any{"command": "exit 3"})
		assert.False(t, res.IsError, "a non-zero exit is a completed call")
		assert.Equal(t, "(no output)\n\n(Command exited with code 3)", textOf(t, res))
		assert.Equal(t, bgexec.StatusCompleted, detailsOf(t, res).Status)

		res = c.call(t, "exec", map[string]any{"command": "kill -9 $$"})
		assert.False(t, res.IsError, "the command ran: not a failed call")
		sc, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		assert.Contains(t, string(sc), `"exitCode":null`, "a failed exec always carries exitCode")

		res = c.call(t, "process", map[string]any{"action": "POLL", "sessionId": "x"})
		assert.True(t, res.IsError)
		assert.True(t, strings.HasPrefix(textOf(t, res), "Unknown action POLL. Expected one of: list, poll, log"), textOf(t, res))
		res = c.call(t, "process", map[string]any{"action": "clear", "sessionId": "no-such"})
		assert.Equal(t, "No finished session found for no-such", textOf(t, res))

		res = c.call(t, "exec", map[string]any{"command": "cat >/dev/null", "background": true, "stdin": "pipe"})
		id := detailsOf(t, res).SessionID
		res = c.call(t, "process", map[string]any{"action": "write", "sessionId": id, "data": "hi", "eof": true})
		assert.Equal(t, "Wrote 2 bytes to session "+id+" (stdin closed).", textOf(t, res))
		res = c.call(t, "process", map[string]any{"action": "log", "sessionId": id, "offset": -5, "limit": 1.7})
		assert.False(t, res.IsError, "log never refuses a number: %s", textOf(t, res))

		res = c.call(t, "exec", map[string]any{"command": "sleep 300 &"})
		require.Equal(t, bgexec.StatusRunning, detailsOf(t, res).Status, textOf(t, res))
		kept := detailsOf(t, res).SessionID
		assert.True(t, strings.HasPrefix(textOf(t, res), "The shell exited with code 0; 1 process it started is still running (pid "), textOf(t, res))
		res = c.call(t, "process", map[string]any{"action": "kill", "sessionId": kept})
		assert.Equal(t, "Killed session "+kept+".", textOf(t, res))
		for _, done := range []string{id, kept} {
			c.call(t, "process", map[string]any{"action": "wait", "sessionId": done, "timeout": 20000})
			res = c.call(t, "process", map[string]any{"action": "clear", "sessionId": done})
			require.Equal(t, "Cleared session "+done+".", textOf(t, res))
		}
	})

	t.Run("a background command is polled, paged, killed and listed", func(t *testing.T) {
		res := c.call(t, "exec", map[string]any{
			"command":    "for i in 1 2 3 4 5; do echo line$i; done; echo ready; read answer; echo got $answer; exec sleep 300",
			"background": true,
			"stdin":      "pipe",
		})
		d := detailsOf(t, res)
		require.Equal(t, bgexec.StatusRunning, d.Status, textOf(t, res))
		id, pid := d.SessionID, d.Pid
		require.NotEmpty(t, id)
		assert.Contains(t, textOf(t, res), "Command still running (session "+id)
		t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })

		res = c.call(t, "process", map[string]any{"action": "wait", "sessionId": id, "pattern": "^ready$", "timeout": 20000})
		require.False(t, res.IsError, textOf(t, res))
		require.Equal(t, "pattern", detailsOf(t, res).Condition, textOf(t, res))
		assert.Contains(t, textOf(t, res), "line5\nready")

		res = c.call(t, "process", map[string]any{"action": "poll", "sessionId": id})
		assert.Equal(t, "(no new output)\n\nProcess still running.", textOf(t, res), "wait consumed the output so far")

		res = c.call(t, "process", map[string]any{"action": "write", "sessionId": id, "data": "yes\n"})
		require.False(t, res.IsError, textOf(t, res))
		res = c.call(t, "process", map[string]any{"action": "poll", "sessionId": id, "timeout": "20000"})
		assert.False(t, res.IsError)
		assert.Equal(t, "got yes\n\nProcess still running.", textOf(t, res))
		assert.Equal(t, bgexec.StatusRunning, detailsOf(t, res).Status)

		res = c.call(t, "process", map[string]any{"action": "log", "sessionId": id, "offset": 1, "limit": 2})
		assert.Equal(t, "line2\nline3", textOf(t, res))
		d = detailsOf(t, res)
		require.NotNil(t, d.TotalLines)
		assert.Equal(t, 7, *d.TotalLines)

		res = c.call(t, "process", map[string]any{"action": "log", "sessionId": id, "offset": "4"})
		assert.True(t, res.IsError, "offset must be an integer: %s", textOf(t, res))
		assert.Contains(t, textOf(t, res), "offset")

		res = c.call(t, "process", map[string]any{"action": "kill", "sessionId": id})
		assert.False(t, res.IsError, "killing succeeded even though the session failed")
		assert.Equal(t, "Killed session "+id+".", textOf(t, res))
		assert.Equal(t, bgexec.ExitReasonKilled, detailsOf(t, res).ExitReason)
		requireGroupGone(t, pid)

		res = c.call(t, "process", map[string]any{"action": "list"})
		d = detailsOf(t, res)
		require.Len(t, d.Sessions, 1)
		assert.Equal(t, id, d.Sessions[0].SessionID)
		assert.Equal(t, bgexec.StatusFailed, d.Sessions[0].Status)
	})

	t.Run("a background exit arrives as logging messages", func(t *testing.T) {
		res := c.call(t, "exec", map[string]any{"command": "echo build-finished", "background": true})
		id := detailsOf(t, res).SessionID
		require.NotEmpty(t, id)

		// Earlier sessions send their own notifications (not the killed one:
		// an agent's own kill sends none); pick out this session's.
		wantExit := "Exec completed (" + id + ", code 0) :: build-finished"
		var gotExit, gotWake bool
		timeout := time.NewTimer(callTimeout)
		defer timeout.Stop()
		for !gotExit || !gotWake {
			select {
			case m := <-c.logs:
				assert.Equal(t, "bgexec", m.Logger)
				data, err := json.Marshal(m.Data)
				require.NoError(t, err)
				var ev struct{ Event, Text, Reason string }
				require.NoError(t, json.Unmarshal(data, &ev))
				switch {
				case ev.Event == "exit" && ev.Text == wantExit:
					gotExit = true
					//lint:ignore SA1019 the server keeps the deprecated MCP logging feature (see the README); this tests it.
					assert.Equal(t, mcp.LoggingLevel("notice"), m.Level)
				case ev.Event == "wake" && ev.Reason == "exec:"+id+":exit":
					gotWake = true
					//lint:ignore SA1019 the server keeps the deprecated MCP logging feature (see the README); this tests it.
					assert.Equal(t, mcp.LoggingLevel("info"), m.Level)
					assert.True(t, gotExit, "the exit summary comes before the wake request")
				case ev.Event != "exit" && ev.Event != "wake":
					t.Errorf("unexpected log message %s", data)
				}
			case <-timeout.C:
				t.Fatalf("no exit notification within %s (exit %v, wake %v)", callTimeout, gotExit, gotWake)
			}
		}
	})

	t.Run("bad arguments are tool errors that explain themselves", func(t *testing.T) {
		res := c.call(t, "exec", map[string]any{"command": 5})
		assert.True(t, res.IsError)
		assert.Contains(t, textOf(t, res), "command")

		res = c.call(t, "exec", map[string]any{"yieldMs": 100})
		assert.True(t, res.IsError)
		assert.Contains(t, textOf(t, res), "command")

		res = c.call(t, "exec", map[string]any{"command": "true", "yieldMs": "soon"})
		assert.True(t, res.IsError)
		assert.Contains(t, textOf(t, res), "yieldMs")

		res = c.call(t, "process", map[string]any{"action": "restart", "sessionId": "x"})
		assert.True(t, res.IsError)
		assert.Contains(t, textOf(t, res), "restart")

		res = c.call(t, "process", map[string]any{"action": "poll", "sessionId": "no-such-session"})
		assert.True(t, res.IsError)
		assert.Equal(t, "No session found for no-such-session", textOf(t, res))

		// The server is still serving.
		res = c.call(t, "exec", map[string]any{"command": "echo alive"})
		assert.Equal(t, "alive", textOf(t, res))
	})
}

func TestServerClientsAreIsolated(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	first, second := connect(t, bin), connect(t, bin)

	pgid := startSleeper(t, first)
	res := first.call(t, "process", map[string]any{"action": "list"})
	sessions := detailsOf(t, res).Sessions
	require.Len(t, sessions, 1)
	id := sessions[0].SessionID

	res = second.call(t, "process", map[string]any{"action": "list"})
	assert.Equal(t, "No running or recent sessions.", textOf(t, res))
	for _, action := range []string{"poll", "log"} {
		res = second.call(t, "process", map[string]any{"action": action, "sessionId": id})
		assert.Equal(t, "No session found for "+id, textOf(t, res), action)
	}
	res = second.call(t, "process", map[string]any{"action": "kill", "sessionId": id})
	assert.Equal(t, "No active session found for "+id, textOf(t, res))
	assert.True(t, groupAlive(t, pgid), "the second client could not touch it")
}

func TestServerKillsChildrenWhenTheClientDisconnects(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	c := connect(t, bin)
	pgid := startSleeper(t, c)

	// Close closes the server's stdin and waits for it to exit (escalating
	// to signals only after 5s); the server must have killed the group.
	require.NoError(t, c.cs.Close())
	require.True(t, c.cmd.ProcessState.Success(), "the server exits cleanly: %v", c.cmd.ProcessState)
	requireGroupGone(t, pgid)
}

func TestServerKillsChildrenOnSIGTERM(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	c := connect(t, bin)
	pgid := startSleeper(t, c)

	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	waited := make(chan error, 1)
	go func() { waited <- c.cs.Wait() }()
	select {
	case <-waited:
	case <-time.After(callTimeout):
		t.Fatal("the session did not end after SIGTERM")
	}
	requireGroupGone(t, pgid)
	_ = c.cs.Close()
	require.NotNil(t, c.cmd.ProcessState)
	assert.True(t, c.cmd.ProcessState.Success(), "the server exits cleanly: %v", c.cmd.ProcessState)
}

// TestServerSurvivesGarbageLines speaks raw JSON-RPC to the binary.
func TestServerSurvivesGarbageLines(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	var waitErr error
	go func() {
		defer close(exited)
		waitErr = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(callTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})

	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	send := func(s string) {
		_, err := io.WriteString(stdin, s+"\n")
		require.NoError(t, err)
	}
	type response struct {
		ID     *int64          `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	next := func() response {
		t.Helper()
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the server closed stdout")
			var r response
			require.NoError(t, json.Unmarshal([]byte(l), &r), l)
			return r
		case <-time.After(callTimeout):
			t.Fatal("no response from the server")
		}
		return response{}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	r := next()
	require.Nil(t, r.Error)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	for _, garbage := range []string{`this is not json`, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec"`, `42`, `{}`, `[]`} {
		send(garbage)
		r = next()
		require.NotNil(t, r.Error, garbage)
		assert.Nil(t, r.ID)
		assert.Contains(t, []int64{-32700, -32600}, r.Error.Code)
	}
	send(``)

	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec","arguments":"echo hi"}}`)
	r = next()
	require.Nil(t, r.Error)
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &res))
	assert.True(t, res.IsError, "arguments that are not an object are a tool error")
	require.Len(t, res.Content, 1)
	assert.NotEmpty(t, res.Content[0].Text)

	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"exec","arguments":{"command":"echo still alive"}}}`)
	r = next()
	require.Nil(t, r.Error)
	res.IsError, res.Content = false, nil
	require.NoError(t, json.Unmarshal(r.Result, &res))
	assert.False(t, res.IsError)
	require.Len(t, res.Content, 1)
	assert.Equal(t, "still alive", res.Content[0].Text)
	require.NotNil(t, r.ID)
	assert.Equal(t, int64(4), *r.ID)

	require.NoError(t, stdin.Close())
	select {
	case <-exited:
		assert.NoError(t, waitErr, "the server exits cleanly at EOF")
	case <-time.After(callTimeout):
		t.Fatal("the server did not exit at EOF")
	}
	for range lines {
	}
}

// TestServeInProcess runs two connections of serve in this process over
// in-memory transports: separate registries, and serve returns with no
// goroutine left (checked by goleak) once the client leaves.
func TestServeInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	type conn struct {
		cs     *mcp.ClientSession
		served chan error
	}
	open := func() conn {
		st, ct := mcp.NewInMemoryTransports()
		served := make(chan error, 1)
		go func() { served <- serve(context.Background(), st, &options{logger: discardLogger()}) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil).Connect(ctx, ct, nil)
		require.NoError(t, err)
		return conn{cs, served}
	}
	a, b := open(), open()

	res, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "exec sleep 300", "background": true}})
	require.NoError(t, err)
	d := detailsOf(t, res)
	require.Equal(t, bgexec.StatusRunning, d.Status)
	t.Cleanup(func() { _ = syscall.Kill(-d.Pid, syscall.SIGKILL) })

	res, err = b.cs.CallTool(ctx, &mcp.CallToolParams{Name: "process", Arguments: map[string]any{"action": "poll", "sessionId": d.SessionID}})
	require.NoError(t, err)
	assert.Equal(t, "No session found for "+d.SessionID, textOf(t, res))

	for _, c := range []conn{a, b} {
		require.NoError(t, c.cs.Close())
		select {
		case err := <-c.served:
			assert.NoError(t, err)
		case <-ctx.Done():
			t.Fatal("serve did not return after the client left")
		}
	}
	requireGroupGone(t, d.Pid)
}

// TestServeSandboxed serves a sandboxed registry: the exec description
// says so, and a command cannot see this process.
func TestServeSandboxed(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bwrap is missing (apt-get install bubblewrap)")
		}
		t.Skip("bwrap not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() {
		served <- serve(context.Background(), st, &options{cfg: bgexec.Config{Sandbox: &bgexec.Sandbox{}}, logger: discardLogger()})
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(tools.Tools[0].Description, "Run a shell command in a sandbox"), tools.Tools[0].Description)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "test -d /proc/" + strconv.Itoa(os.Getpid()) + " && echo host || echo sandboxed"}})
	require.NoError(t, err)
	assert.Equal(t, "sandboxed", textOf(t, res))
	require.NoError(t, cs.Close())
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("serve did not return after the client left")
	}
}

func TestFilterLines(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		``,
		`nope`,
		`  {"jsonrpc":"2.0","method":"notifications/initialized"}  `,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`{"jsonrpc":"1.0","id":3,"method":"ping"}`,
		strings.Repeat("x", 200),
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}, "\r\n")
	var msgs, replies bytes.Buffer
	require.NoError(t, filterLines(strings.NewReader(in), &msgs, &replies, 100))
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}
{"jsonrpc":"2.0","method":"notifications/initialized"}
[{"jsonrpc":"2.0","id":2,"method":"ping"}]
{"jsonrpc":"2.0","id":4,"method":"ping"}
`, msgs.String())
	got := strings.Split(strings.TrimSuffix(replies.String(), "\n"), "\n")
	require.Len(t, got, 3)
	assert.Contains(t, got[0], `"code":-32700`)
	assert.Contains(t, got[1], `"code":-32600`)
	assert.Contains(t, got[2], "longer than 100 bytes")

	t.Run("a write error ends it", func(t *testing.T) {
		pr, pw := io.Pipe()
		_ = pr.CloseWithError(errors.New("gone"))
		err := filterLines(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"), pw, io.Discard, 100)
		assert.ErrorContains(t, err, "gone")
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
