package anthropic_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/bgexec/bgexec"
	"github.com/bgexec/bgexec/contrib/anthropic"
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

// toolResult is a tool_result block as the runner sends it to the API.
type toolResult struct {
	ToolUseID string `json:"tool_use_id"`
	IsError   bool   `json:"is_error"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// fakeAPI stands in for the Messages API: it answers each request with the
// next assistant turn from next, which reads the tool results the runner
// sent. No model is called; the runner, its tool dispatch and its
// tool_result encoding are the SDK's own.
type fakeAPI struct {
	mu      sync.Mutex
	turn    int
	results map[string]toolResult
	next    func(turn int, results map[string]toolResult) string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/v1/messages" {
		http.Error(w, "unexpected request", http.StatusNotImplemented)
		return
	}
	var req struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
		for _, raw := range req.Messages[n-1].Content {
			var tr toolResult
			if json.Unmarshal(raw, &tr) == nil && tr.ToolUseID != "" {
				f.results[tr.ToolUseID] = tr
			}
		}
	}
	f.turn++
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, f.next(f.turn, f.results))
}

func toolUseTurn(id string, uses ...string) string {
	return `{"id":"` + id + `","type":"message","role":"assistant","model":"m","content":[` + strings.Join(uses, ",") +
		`],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
}

func toolUse(id, name, input string) string {
	return `{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}`
}

const endTurn = `{"id":"msg_end","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`

var sessionIDPattern = regexp.MustCompile(`"sessionId":"([^"]+)"`)

// details decodes a result's details from the text after DetailsPrefix.
func details(t *testing.T, text string) map[string]any {
	t.Helper()
	i := strings.LastIndex(text, anthropic.DetailsPrefix)
	require.GreaterOrEqual(t, i, 0, "no details in %q", text)
	var d map[string]any
	require.NoError(t, json.Unmarshal([]byte(text[i+len(anthropic.DetailsPrefix):]), &d), "details in %q", text)
	return d
}

// The SDK's tool runner runs a background exec, a refused exec and then a
// process wait through the adapter's tools, against a scripted API.
func TestToolRunnerRunsExecAndProcess(t *testing.T) {
	sc := newScope(t)
	api := &fakeAPI{results: map[string]toolResult{}}
	api.next = func(turn int, results map[string]toolResult) string {
		switch turn {
		case 1: // two calls in one message: the runner runs them at once
			return toolUseTurn("msg_1",
				toolUse("toolu_bg", "exec", `{"command":"echo started; read line; echo got $line; exit 4","background":true,"stdin":"pipe"}`),
				toolUse("toolu_bad", "exec", `{"command":"echo never","workdir":"/nonexistent/dir"}`))
		case 2:
			m := sessionIDPattern.FindStringSubmatch(lastText(results["toolu_bg"]))
			if m == nil {
				return endTurn
			}
			return toolUseTurn("msg_2", toolUse("toolu_write", "process", `{"action":"write","sessionId":"`+m[1]+`","data":"hello\n"}`))
		case 3:
			m := sessionIDPattern.FindStringSubmatch(lastText(results["toolu_bg"]))
			return toolUseTurn("msg_3", toolUse("toolu_wait", "process", `{"action":"wait","sessionId":"`+m[1]+`","timeout":30000}`))
		}
		return endTurn
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	client := sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: transport}))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runner := client.Beta.Messages.NewToolRunner(anthropic.Tools(sc), sdk.BetaToolRunnerParams{
		BetaMessageNewParams: sdk.BetaMessageNewParams{
			Model:     "m",
			MaxTokens: 1024,
			Messages:  []sdk.BetaMessageParam{sdk.NewBetaUserMessage(sdk.NewBetaTextBlock("run it"))},
		},
		DisableThread: true,
	})
	_, err := runner.RunToCompletion(ctx)
	require.NoError(t, err)
	require.Contains(t, api.results, "toolu_wait", "the runner answered every turn")

	bg := api.results["toolu_bg"]
	assert.False(t, bg.IsError)
	require.Len(t, bg.Content, 2)
	d := details(t, bg.Content[1].Text)
	assert.Equal(t, "running", d["status"])
	id, _ := d["sessionId"].(string)
	require.NotEmpty(t, id)
	assert.Contains(t, bg.Content[0].Text, id, "the text names the session")

	bad := api.results["toolu_bad"]
	assert.True(t, bad.IsError, "a refused exec is an is_error tool_result")
	require.Len(t, bad.Content, 1)
	assert.True(t, strings.HasPrefix(bad.Content[0].Text, "Error: "), "text: %q", bad.Content[0].Text)
	assert.Contains(t, bad.Content[0].Text, "command was not executed")
	assert.Equal(t, "failed", details(t, bad.Content[0].Text)["status"])

	assert.False(t, api.results["toolu_write"].IsError)

	wait := api.results["toolu_wait"]
	assert.False(t, wait.IsError, "a non-zero exit is no tool error")
	require.Len(t, wait.Content, 2)
	assert.Contains(t, wait.Content[0].Text, "got hello")
	d = details(t, wait.Content[1].Text)
	assert.Equal(t, "completed", d["status"])
	assert.Equal(t, id, d["sessionId"])
	assert.EqualValues(t, 4, d["exitCode"])
	assert.NotContains(t, d, "aggregated", "the output is carried once, in the text")
}

func lastText(tr toolResult) string {
	if len(tr.Content) == 0 {
		return ""
	}
	return tr.Content[len(tr.Content)-1].Text
}

// The tools carry bgexec's names, descriptions and schemas unchanged.
func TestToolsCarryTheLibrarySchemas(t *testing.T) {
	tools := anthropic.Tools(newScope(t))
	defs := bgexec.ToolDefinitions()
	require.Len(t, tools, len(defs))
	for i, def := range defs {
		assert.Equal(t, def.Name, tools[i].Name())
		assert.Equal(t, def.Description, tools[i].Description())
		got, err := json.Marshal(tools[i].InputSchema())
		require.NoError(t, err)
		assert.JSONEq(t, string(def.InputSchema), string(got))
	}
}

// Called directly, a foreground exec gives its text and exit code, and an
// unknown session a *ToolError.
func TestExecuteDirectly(t *testing.T) {
	tools := anthropic.Tools(newScope(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	blocks, err := tools[0].Execute(ctx, json.RawMessage(`{"command":"echo out; exit 3"}`))
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	assert.Contains(t, blocks[0].OfText.Text, "out")
	assert.Contains(t, blocks[0].OfText.Text, "exited with code 3")
	d := details(t, blocks[1].OfText.Text)
	assert.Equal(t, "completed", d["status"])
	assert.EqualValues(t, 3, d["exitCode"])

	_, err = tools[1].Execute(ctx, json.RawMessage(`{"action":"poll","sessionId":"nope"}`))
	var te *anthropic.ToolError
	require.ErrorAs(t, err, &te)
	assert.True(t, te.Result.IsError)
	assert.True(t, strings.HasPrefix(err.Error(), "No session found for nope\n\n"+anthropic.DetailsPrefix), "message: %q", err.Error())
	assert.Equal(t, "failed", details(t, err.Error())["status"])
}
