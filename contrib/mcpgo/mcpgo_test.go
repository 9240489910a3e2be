package mcpgo_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bgexec/bgexec"
	"github.com/bgexec/bgexec/contrib/mcpgo"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connect serves the tools from an mcp-go server and returns an
// initialized in-process client of it: every call below goes through
// mcp-go's JSON-RPC handling, as a host's would.
func connect(t *testing.T) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg, err := bgexec.NewRegistry(bgexec.Config{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, reg.Close(ctx))
	})

	srv := server.NewMCPServer("bgexec-test", "0.0.0", server.WithToolCapabilities(false))
	srv.AddTools(mcpgo.Tools(reg.Scope("agent"))...)
	c, err := client.NewInProcessClient(srv)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	require.NoError(t, c.Start(ctx))
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "0.0.0"}
	_, err = c.Initialize(ctx, init)
	require.NoError(t, err)
	return c
}

func call(t *testing.T, c *client.Client, name string, args string) (text string, isError bool, out map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = json.RawMessage(args)
	res, err := c.CallTool(ctx, req)
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(mcp.TextContent)
	require.True(t, ok, "content is %T", res.Content[0])
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &out))
	assert.Equal(t, tc.Text, out["text"], "the structured content repeats the text")
	return tc.Text, res.IsError, out
}

// The tools/list answer, as it goes on the wire, carries bgexec's names,
// descriptions and schemas unchanged. (mcp-go's client drops "$schema"
// when it parses a tool, so the server's own answer is read.)
func TestToolsListCarriesTheLibrarySchemas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg, err := bgexec.NewRegistry(bgexec.Config{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, reg.Close(ctx)) }()
	srv := server.NewMCPServer("bgexec-test", "0.0.0", server.WithToolCapabilities(false))
	srv.AddTools(mcpgo.Tools(reg.Scope("agent"))...)

	reply, err := json.Marshal(srv.HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
	require.NoError(t, err)
	var list struct {
		Result struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(reply, &list), "reply: %s", reply)
	defs := bgexec.ToolDefinitions()
	require.Len(t, list.Result.Tools, len(defs), "reply: %s", reply)
	for i, def := range defs {
		tool := list.Result.Tools[i]
		assert.Equal(t, def.Name, tool.Name)
		assert.Equal(t, def.Description, tool.Description)
		assert.JSONEq(t, string(def.InputSchema), string(tool.InputSchema))
	}
}

func TestBackgroundExecThenWait(t *testing.T) {
	c := connect(t)

	text, isError, out := call(t, c, "exec", `{"command":"echo started; read line; echo got $line; exit 4","background":true,"stdin":"pipe"}`)
	assert.False(t, isError)
	details := out["details"].(map[string]any)
	assert.Equal(t, "running", details["status"])
	id, _ := details["sessionId"].(string)
	require.NotEmpty(t, id)
	assert.Contains(t, text, id, "the text names the session")

	_, isError, out = call(t, c, "process", `{"action":"write","sessionId":"`+id+`","data":"hello\n"}`)
	assert.False(t, isError)
	assert.Equal(t, "running", out["details"].(map[string]any)["status"])

	text, isError, out = call(t, c, "process", `{"action":"wait","sessionId":"`+id+`","timeout":30000}`)
	assert.False(t, isError, "a non-zero exit is no tool error")
	assert.Contains(t, text, "got hello")
	details = out["details"].(map[string]any)
	assert.Equal(t, "completed", details["status"])
	assert.Equal(t, id, details["sessionId"])
	assert.EqualValues(t, 4, details["exitCode"])
	assert.NotContains(t, details, "aggregated", "the output is carried once, in the text")
}

func TestForegroundExecKeepsExitCode(t *testing.T) {
	c := connect(t)
	text, isError, out := call(t, c, "exec", `{"command":"echo out; exit 3"}`)
	assert.False(t, isError)
	assert.True(t, strings.HasPrefix(text, "out"), "text: %q", text)
	assert.Contains(t, text, "exited with code 3")
	details := out["details"].(map[string]any)
	assert.Equal(t, "completed", details["status"])
	assert.EqualValues(t, 3, details["exitCode"])
}

func TestFailuresAreErrorResults(t *testing.T) {
	c := connect(t)

	text, isError, out := call(t, c, "exec", `{"command":"echo never","workdir":"/nonexistent/dir"}`)
	assert.True(t, isError)
	assert.Contains(t, text, "command was not executed")
	assert.Equal(t, "failed", out["details"].(map[string]any)["status"])

	text, isError, out = call(t, c, "process", `{"action":"poll","sessionId":"nope"}`)
	assert.True(t, isError)
	assert.Equal(t, "No session found for nope", text)
	assert.Equal(t, "failed", out["details"].(map[string]any)["status"])

	text, isError, _ = call(t, c, "exec", `{"command":"echo x","yieldMs":"soon"}`)
	assert.True(t, isError, "a schema violation is a result the model can read")
	assert.Contains(t, text, "yieldMs")
}
