package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bgexec/bgexec"
	bgopenai "github.com/bgexec/bgexec/contrib/openai"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newScope(t *testing.T, cfg bgexec.Config) *bgexec.Scope {
	t.Helper()
	reg, err := bgexec.NewRegistry(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, reg.Close(ctx))
	})
	return reg.Scope("agent")
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// details decodes the details after DetailsPrefix at the end of out.
func details(t *testing.T, out string) map[string]any {
	t.Helper()
	i := strings.LastIndex(out, "\n\n"+bgopenai.DetailsPrefix)
	require.GreaterOrEqual(t, i, 0, "no details in %q", out)
	var d map[string]any
	require.NoError(t, json.Unmarshal([]byte(out[i+2+len(bgopenai.DetailsPrefix):]), &d), "details in %q", out)
	return d
}

// wire returns v as the SDK encodes it into a request.
func wire(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// outputItem decodes an output item as the Responses API returns it.
func outputItem(t *testing.T, raw string) responses.ResponseOutputItemUnion {
	t.Helper()
	var item responses.ResponseOutputItemUnion
	require.NoError(t, json.Unmarshal([]byte(raw), &item))
	return item
}

func functionCall(t *testing.T, callID, name, args string) responses.ResponseFunctionToolCall {
	t.Helper()
	a, err := json.Marshal(args)
	require.NoError(t, err)
	return outputItem(t, `{"type":"function_call","id":"fc_`+callID+`","call_id":"`+callID+`","name":"`+name+`","arguments":`+string(a)+`,"status":"completed"}`).AsFunctionCall()
}

// respond runs a Responses function call and returns the function_call_output
// as it goes on the wire.
func respond(t *testing.T, sc *bgexec.Scope, call responses.ResponseFunctionToolCall) (output string) {
	t.Helper()
	item, err := bgopenai.CallResponse(testContext(t), sc, call)
	require.NoError(t, err)
	w := wire(t, item)
	assert.Equal(t, "function_call_output", w["type"])
	assert.Equal(t, call.CallID, w["call_id"])
	output, ok := w["output"].(string)
	require.True(t, ok, "output: %v", w["output"])
	return output
}

// Function calls of the Responses API: a background exec, write, wait, and
// the failures marked as errors.
func TestResponsesFunctionCalls(t *testing.T) {
	sc := newScope(t, bgexec.Config{})

	out := respond(t, sc, functionCall(t, "c1", "exec", `{"command":"echo started; read line; echo got $line; exit 4","background":true,"stdin":"pipe"}`))
	d := details(t, out)
	assert.Equal(t, "running", d["status"])
	id, _ := d["sessionId"].(string)
	require.NotEmpty(t, id)
	assert.False(t, strings.HasPrefix(out, bgopenai.ErrorPrefix))
	assert.Contains(t, out, id, "the text names the session")

	out = respond(t, sc, functionCall(t, "c2", "process", `{"action":"write","sessionId":"`+id+`","data":"hello\n"}`))
	assert.False(t, strings.HasPrefix(out, bgopenai.ErrorPrefix), "write: %q", out)

	out = respond(t, sc, functionCall(t, "c3", "process", `{"action":"wait","sessionId":"`+id+`","timeout":30000}`))
	assert.False(t, strings.HasPrefix(out, bgopenai.ErrorPrefix), "a non-zero exit is no tool error")
	assert.Contains(t, out, "got hello")
	d = details(t, out)
	assert.Equal(t, "completed", d["status"])
	assert.Equal(t, id, d["sessionId"])
	assert.EqualValues(t, 4, d["exitCode"])
	assert.NotContains(t, d, "aggregated", "the output is carried once, in the text")

	out = respond(t, sc, functionCall(t, "c4", "exec", `{"command":"echo never","workdir":"/nonexistent/dir"}`))
	assert.True(t, strings.HasPrefix(out, bgopenai.ErrorPrefix), "out: %q", out)
	assert.Contains(t, out, "command was not executed")
	assert.Equal(t, "failed", details(t, out)["status"])

	out = respond(t, sc, functionCall(t, "c5", "process", `{"action":"poll","sessionId":"nope"}`))
	assert.True(t, strings.HasPrefix(out, bgopenai.ErrorPrefix+"No session found for nope\n\n"), "out: %q", out)

	_, err := bgopenai.CallResponse(testContext(t), sc, functionCall(t, "c6", "weather", `{}`))
	assert.Error(t, err, "a function that is not bgexec's is a Go error")
}

// A Chat Completions tool call is answered by a tool message.
func TestChatFunctionCall(t *testing.T) {
	sc := newScope(t, bgexec.Config{})
	var call sdk.ChatCompletionMessageToolCallUnion
	require.NoError(t, json.Unmarshal([]byte(`{"id":"call_1","type":"function","function":{"name":"exec","arguments":"{\"command\":\"echo out; exit 3\"}"}}`), &call))

	msg, err := bgopenai.CallChat(testContext(t), sc, call)
	require.NoError(t, err)
	w := wire(t, msg)
	assert.Equal(t, "tool", w["role"])
	assert.Equal(t, "call_1", w["tool_call_id"])
	out, _ := w["content"].(string)
	assert.True(t, strings.HasPrefix(out, "out"), "out: %q", out)
	assert.Contains(t, out, "exited with code 3")
	d := details(t, out)
	assert.Equal(t, "completed", d["status"])
	assert.EqualValues(t, 3, d["exitCode"])
}

// The function tools carry bgexec's names, descriptions and schemas.
func TestToolDefinitions(t *testing.T) {
	defs := bgexec.ToolDefinitions()
	chat, resp := bgopenai.ChatTools(), bgopenai.ResponseTools()
	require.Len(t, chat, len(defs))
	require.Len(t, resp, len(defs))
	for i, def := range defs {
		c := wire(t, chat[i])
		assert.Equal(t, "function", c["type"])
		fn := c["function"].(map[string]any)
		assert.Equal(t, def.Name, fn["name"])
		assert.Equal(t, def.Description, fn["description"])
		assert.Equal(t, false, fn["strict"])
		params, err := json.Marshal(fn["parameters"])
		require.NoError(t, err)
		assert.JSONEq(t, string(def.InputSchema), string(params))

		r := wire(t, resp[i])
		assert.Equal(t, "function", r["type"])
		assert.Equal(t, def.Name, r["name"])
		assert.Equal(t, false, r["strict"])
		params, err = json.Marshal(r["parameters"])
		require.NoError(t, err)
		assert.JSONEq(t, string(def.InputSchema), string(params))
	}
}

func shellCall(t *testing.T, callID string, action string) responses.ResponseFunctionShellToolCall {
	t.Helper()
	return outputItem(t, `{"type":"shell_call","id":"sh_`+callID+`","call_id":"`+callID+`","status":"completed","environment":{"type":"local"},"action":`+action+`}`).AsShellCall()
}

type shellEntry struct {
	Stdout  string `json:"stdout"`
	Stderr  string `json:"stderr"`
	Outcome struct {
		Type     string `json:"type"`
		ExitCode *int   `json:"exit_code"`
	} `json:"outcome"`
}

// runShell answers a shell call and returns its output entries as they go
// on the wire.
func runShell(t *testing.T, sc *bgexec.Scope, call responses.ResponseFunctionShellToolCall) (entries []shellEntry, w map[string]any) {
	t.Helper()
	item, err := bgopenai.Shell(testContext(t), sc, call)
	require.NoError(t, err)
	b, err := json.Marshal(item)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &w))
	assert.Equal(t, "shell_call_output", w["type"])
	assert.Equal(t, call.CallID, w["call_id"])
	var body struct {
		Output []shellEntry `json:"output"`
	}
	require.NoError(t, json.Unmarshal(b, &body))
	require.Len(t, body.Output, len(call.Action.Commands), "one entry per command: %s", b)
	return body.Output, w
}

func noSessionsLeft(t *testing.T, sc *bgexec.Scope) {
	t.Helper()
	res, err := sc.Process(testContext(t), &bgexec.ProcessRequest{Action: "list"})
	require.NoError(t, err)
	assert.Empty(t, res.Details.Sessions, "the shell handler leaves no session behind")
}

// A shell call's commands run in order, each with its own stdout, stderr
// and outcome: an exit code, a signal as 128+N, and a command that did not
// run.
func TestShellCallExitsAndSignals(t *testing.T) {
	sc := newScope(t, bgexec.Config{})
	entries, w := runShell(t, sc, shellCall(t, "s1", `{"commands":[
		"echo to-out; echo to-err >&2; exit 3",
		"echo before; kill -TERM $$",
		"   "
	],"timeout_ms":0,"max_output_length":0}`))
	assert.NotContains(t, w, "max_output_length")

	assert.Equal(t, "to-out", strings.TrimSpace(entries[0].Stdout))
	assert.Equal(t, "to-err", strings.TrimSpace(entries[0].Stderr))
	assert.Equal(t, "exit", entries[0].Outcome.Type)
	require.NotNil(t, entries[0].Outcome.ExitCode)
	assert.Equal(t, 3, *entries[0].Outcome.ExitCode)

	assert.Equal(t, "before", strings.TrimSpace(entries[1].Stdout))
	assert.Equal(t, "exit", entries[1].Outcome.Type)
	require.NotNil(t, entries[1].Outcome.ExitCode)
	assert.Equal(t, 128+15, *entries[1].Outcome.ExitCode, "SIGTERM is 128+15")

	assert.Empty(t, entries[2].Stdout)
	assert.NotEmpty(t, entries[2].Stderr, "bgexec's text says why it did not run")
	require.NotNil(t, entries[2].Outcome.ExitCode)
	assert.Equal(t, bgopenai.NotRunExitCode, *entries[2].Outcome.ExitCode)
	noSessionsLeft(t, sc)
}

// timeout_ms ends a command, and the outcome says "timeout"; the
// output limit keeps each stream's end and is echoed.
func TestShellCallTimeoutAndLimit(t *testing.T) {
	sc := newScope(t, bgexec.Config{})
	entries, w := runShell(t, sc, shellCall(t, "s2", `{"commands":[
		"echo waiting; sleep 30",
		"printf 0123456789; printf abcdefgh >&2"
	],"timeout_ms":1500,"max_output_length":4}`))
	assert.EqualValues(t, 4, w["max_output_length"])

	assert.Equal(t, "timeout", entries[0].Outcome.Type)
	assert.Nil(t, entries[0].Outcome.ExitCode)
	assert.Len(t, entries[0].Stdout, 4, "the limit keeps 4 characters")
	assert.True(t, strings.HasSuffix("waiting\n", entries[0].Stdout), "the output before the timeout is kept, its end: %q", entries[0].Stdout)

	assert.Equal(t, "6789", entries[1].Stdout)
	assert.Equal(t, "efgh", entries[1].Stderr)
	assert.Equal(t, "exit", entries[1].Outcome.Type)
	noSessionsLeft(t, sc)
}

// A command that outlasts exec's yield window is waited for to its end
// (here the window is cut to 100 ms by MaxCallWaitMs, so the command moves
// to the background and the handler's wait loop runs).
func TestShellCallWaitsForBackgroundedCommand(t *testing.T) {
	sc := newScope(t, bgexec.Config{MaxCallWaitMs: 100})
	entries, _ := runShell(t, sc, shellCall(t, "s3", `{"commands":[
		"echo early; sleep 1; echo late >&2; exit 7"
	],"timeout_ms":0,"max_output_length":0}`))
	assert.Equal(t, "early", strings.TrimSpace(entries[0].Stdout))
	assert.Equal(t, "late", strings.TrimSpace(entries[0].Stderr))
	require.NotNil(t, entries[0].Outcome.ExitCode)
	assert.Equal(t, 7, *entries[0].Outcome.ExitCode)
	noSessionsLeft(t, sc)
}
