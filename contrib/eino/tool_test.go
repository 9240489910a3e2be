package eino_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bgexec/bgexec"
	bgeino "github.com/bgexec/bgexec/contrib/eino"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newScope(t *testing.T) *bgexec.Scope {
	t.Helper()
	reg, err := bgexec.NewRegistry(bgexec.Config{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, reg.Close(ctx))
	})
	return reg.Scope("agent")
}

func call(id, name, args string) schema.ToolCall {
	return schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: name, Arguments: args}}
}

// details decodes the details after DetailsPrefix at the end of text.
func details(t *testing.T, text string) map[string]any {
	t.Helper()
	i := strings.LastIndex(text, "\n\n"+bgeino.DetailsPrefix)
	require.GreaterOrEqual(t, i, 0, "no details in %q", text)
	var d map[string]any
	require.NoError(t, json.Unmarshal([]byte(text[i+2+len(bgeino.DetailsPrefix):]), &d), "details in %q", text)
	return d
}

// byCallID runs msg's tool calls through node and returns the tool
// messages by call id.
func byCallID(t *testing.T, node *compose.ToolsNode, msg *schema.Message) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := node.Invoke(ctx, msg)
	require.NoError(t, err, "a failed tool call must not end the run")
	got := map[string]string{}
	for _, m := range out {
		assert.Equal(t, schema.Tool, m.Role)
		got[m.ToolCallID] = m.Content
	}
	return got
}

// eino's ToolsNode runs a background exec and a refused exec of one
// message (at once, its default), then process write and wait.
func TestToolsNodeRunsExecAndProcess(t *testing.T) {
	ctx := context.Background()
	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: bgeino.Tools(newScope(t))})
	require.NoError(t, err)

	got := byCallID(t, node, schema.AssistantMessage("", []schema.ToolCall{
		call("bg", "exec", `{"command":"echo started; read line; echo got $line; exit 4","background":true,"stdin":"pipe"}`),
		call("bad", "exec", `{"command":"echo never","workdir":"/nonexistent/dir"}`),
	}))
	d := details(t, got["bg"])
	assert.Equal(t, "running", d["status"])
	id, _ := d["sessionId"].(string)
	require.NotEmpty(t, id)
	assert.False(t, strings.HasPrefix(got["bg"], bgeino.ErrorPrefix))
	assert.Contains(t, got["bg"], id, "the text names the session")

	assert.True(t, strings.HasPrefix(got["bad"], bgeino.ErrorPrefix), "a refused exec is marked: %q", got["bad"])
	assert.Contains(t, got["bad"], "command was not executed")
	assert.Equal(t, "failed", details(t, got["bad"])["status"])

	got = byCallID(t, node, schema.AssistantMessage("", []schema.ToolCall{
		call("write", "process", `{"action":"write","sessionId":"`+id+`","data":"hello\n"}`),
	}))
	assert.False(t, strings.HasPrefix(got["write"], bgeino.ErrorPrefix), "write: %q", got["write"])

	got = byCallID(t, node, schema.AssistantMessage("", []schema.ToolCall{
		call("wait", "process", `{"action":"wait","sessionId":"`+id+`","timeout":30000}`),
		call("gone", "process", `{"action":"poll","sessionId":"nope"}`),
	}))
	assert.False(t, strings.HasPrefix(got["wait"], bgeino.ErrorPrefix), "a non-zero exit is no tool error")
	assert.Contains(t, got["wait"], "got hello")
	d = details(t, got["wait"])
	assert.Equal(t, "completed", d["status"])
	assert.Equal(t, id, d["sessionId"])
	assert.EqualValues(t, 4, d["exitCode"])
	assert.NotContains(t, d, "aggregated", "the output is carried once, in the text")

	assert.True(t, strings.HasPrefix(got["gone"], bgeino.ErrorPrefix+"No session found for nope\n\n"), "gone: %q", got["gone"])
}

// A foreground exec's text and exit code, called on the tool directly.
func TestInvokableRunForeground(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	exec := bgeino.Tools(newScope(t))[0].(tool.InvokableTool)
	out, err := exec.InvokableRun(ctx, `{"command":"echo out; exit 3"}`)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "out"), "out: %q", out)
	assert.Regexp(t, regexp.MustCompile(`exited with code 3`), out)
	d := details(t, out)
	assert.Equal(t, "completed", d["status"])
	assert.EqualValues(t, 3, d["exitCode"])

	_, err = exec.InvokableRun(ctx, `{"command":`)
	assert.Error(t, err, "arguments that are not JSON are a Go error")
}

// The tools carry bgexec's names, descriptions and schemas unchanged.
func TestInfoCarriesTheLibrarySchemas(t *testing.T) {
	tools := bgeino.Tools(newScope(t))
	defs := bgexec.ToolDefinitions()
	require.Len(t, tools, len(defs))
	for i, def := range defs {
		info, err := tools[i].Info(context.Background())
		require.NoError(t, err)
		assert.Equal(t, def.Name, info.Name)
		assert.Equal(t, def.Description, info.Desc)
		js, err := info.ToJSONSchema()
		require.NoError(t, err)
		got, err := json.Marshal(js)
		require.NoError(t, err)
		assert.JSONEq(t, string(def.InputSchema), string(got))
	}
}
