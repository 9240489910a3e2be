package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/bgexec/bgexec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The runtime offers the tools, runs the calls, and sleeps until the
// background build's completion wake instead of polling it.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// user: Check that the shell works, then build the project and tell me how it went.
	// assistant -> exec {"command":"echo shell ok"}
	// tool: shell ok
	// assistant -> exec {"command":"sleep 0.2; echo compiling; sleep 0.3; echo build ok","background":true}
	// tool: Command still running (session <id>, pid <pid>). Use process (list/poll/log/kill/clear/remove) for follow-up.
	// assistant: The build is running in the background; I will report when it finishes.
	// [woken: exec:<id>:exit]
	// system: Exec completed (<id>, code 0) :: compiling build ok
	// assistant -> process {"action":"log","sessionId":"<id>"}
	// tool: compiling
	// build ok
	// assistant: The build finished: build ok.
}

// badModel sends calls a runtime must survive, then stops.
type badModel struct{ calls []toolCall }

func (m *badModel) Next(context.Context, []message, []functionTool) (message, error) {
	if len(m.calls) == 0 {
		return message{Role: "assistant", Content: "done"}, nil
	}
	c := m.calls[0]
	m.calls = m.calls[1:]
	return message{Role: "assistant", ToolCalls: []toolCall{c}}, nil
}

func TestToolLoopAnswersBadCalls(t *testing.T) {
	reg, err := bgexec.NewRegistry(bgexec.Config{})
	require.NoError(t, err)
	defer func() { require.NoError(t, reg.Close(context.Background())) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	rt := &runtime{
		scope: reg.Scope("agent:test"),
		model: &badModel{calls: []toolCall{
			{ID: "1", Name: "exec", Arguments: json.RawMessage(`{"command":`)},
			{ID: "2", Name: "shell", Arguments: json.RawMessage(`{"command":"ls"}`)},
			{ID: "3", Name: "exec", Arguments: json.RawMessage(`{"command":5}`)},
			{ID: "4", Name: "process", Arguments: json.RawMessage(`{"action":"poll","sessionId":"nope"}`)},
		}},
		tools: functionTools(bgexec.ToolDefinitions()),
		out:   &transcript{w: io.Discard},
	}
	require.NoError(t, rt.turn(ctx, message{Role: "user", Content: "go"}))

	var answers []string
	for _, m := range rt.history {
		if m.Role == "tool" {
			answers = append(answers, m.Content)
		}
	}
	require.Len(t, answers, 4, "every call got an answer")
	assert.Contains(t, answers[0], "Error: ")
	assert.Contains(t, answers[1], `unknown tool "shell"`)
	assert.Contains(t, answers[2], "command")
	assert.Equal(t, "No session found for nope", answers[3])
	assert.Equal(t, "done", rt.history[len(rt.history)-1].Content)
}

func TestToolLoopConvertsDefinitions(t *testing.T) {
	tools := functionTools(bgexec.ToolDefinitions())
	b, err := json.Marshal(tools)
	require.NoError(t, err)
	var got []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		} `json:"function"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	require.Len(t, got, 2)
	assert.Equal(t, "function", got[0].Type)
	assert.Equal(t, "exec", got[0].Function.Name)
	assert.Equal(t, "object", got[0].Function.Parameters["type"])
	assert.Equal(t, "process", got[1].Function.Name)
}
