// Command toolloop shows how a Go agent runtime wires bgexec into a
// function-calling loop: it offers [bgexec.ToolDefinitions] to the model,
// runs each tool call with [bgexec.Scope.Call], hands the result text back,
// and wakes the agent for another turn when a background command ends.
//
// The model here is scripted (no network): it plays the part a real model
// would, following the pattern the tool descriptions teach: start the
// build once in the background, end the turn, and read the log when the
// completion wake arrives, instead of polling.
//
//	go run ./examples/toolloop
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bgexec/bgexec"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "toolloop:", err)
		os.Exit(1)
	}
}

// run plays one conversation and prints its transcript to w.
func run(ctx context.Context, w io.Writer) error {
	// The Queue collects exit events per agent and sends wake requests.
	wakes := bgexec.NewQueue()
	reg, err := bgexec.NewRegistry(bgexec.Config{Notifier: wakes})
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = reg.Close(closeCtx)
	}()

	const agent = "agent:main:main"
	rt := &runtime{
		scope: reg.Scope(agent),
		model: &scriptedModel{},
		tools: functionTools(bgexec.ToolDefinitions()),
		out:   &transcript{w: w},
	}
	if err := rt.turn(ctx, message{Role: "user", Content: "Check that the shell works, then build the project and tell me how it went."}); err != nil {
		return err
	}
	// The agent is idle now. The runtime sleeps until the registry asks to
	// wake this agent, then starts a turn with the queued system events.
	events, reason, err := awaitWake(ctx, wakes, agent)
	if err != nil {
		return err
	}
	rt.out.printf("[woken: %s]\n", reason)
	return rt.turn(ctx, message{Role: "system", Content: strings.Join(events, "\n")})
}

// message is one entry of the conversation.
type message struct {
	Role       string     `json:"role"` // user, assistant, tool or system
	Content    string     `json:"content,omitempty"`
	ToolCalls  []toolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
}

// toolCall is a function call the model asked for; Arguments is its JSON
// object, passed to Scope.Call untouched.
type toolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// functionTool is a tool in the shape most function-calling APIs take.
type functionTool struct {
	Type     string `json:"type"` // "function"
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// functionTools converts bgexec's definitions; the schema goes in verbatim.
func functionTools(defs []bgexec.ToolDefinition) []functionTool {
	out := make([]functionTool, len(defs))
	for i, d := range defs {
		out[i].Type = "function"
		out[i].Function.Name = d.Name
		out[i].Function.Description = d.Description
		out[i].Function.Parameters = d.InputSchema
	}
	return out
}

// model is the language model behind the agent.
type model interface {
	// Next returns the assistant's next message for the conversation so far.
	Next(ctx context.Context, history []message, tools []functionTool) (message, error)
}

// runtime is the agent loop: model turn, tool calls, results, repeat.
type runtime struct {
	scope   *bgexec.Scope
	model   model
	tools   []functionTool
	history []message
	out     *transcript
}

// maxSteps bounds the model calls of one turn.
const maxSteps = 8

// turn adds in to the conversation and runs the model until it answers
// without tool calls.
func (rt *runtime) turn(ctx context.Context, in message) error {
	rt.history = append(rt.history, in)
	rt.out.printf("%s: %s\n", in.Role, in.Content)
	for range maxSteps {
		reply, err := rt.model.Next(ctx, rt.history, rt.tools)
		if err != nil {
			return err
		}
		rt.history = append(rt.history, reply)
		if len(reply.ToolCalls) == 0 {
			rt.out.printf("assistant: %s\n", reply.Content)
			return nil
		}
		for _, call := range reply.ToolCalls {
			rt.out.printf("assistant -> %s %s\n", call.Name, call.Arguments)
			text, err := rt.call(ctx, call)
			if err != nil {
				return err
			}
			rt.history = append(rt.history, message{Role: "tool", ToolCallID: call.ID, Content: text})
			rt.out.printf("tool: %s\n", text)
		}
	}
	return fmt.Errorf("the model made more than %d steps in one turn", maxSteps)
}

// call runs one tool call. Whatever the model sent, it gets an answer it
// can read: a Result's text, or, when the call could not be made at all
// (malformed JSON, unknown tool), the error. Only a closed registry or an
// ended context stop the loop.
func (rt *runtime) call(ctx context.Context, call toolCall) (string, error) {
	res, err := rt.scope.Call(ctx, call.Name, call.Arguments)
	switch {
	case errors.Is(err, bgexec.ErrClosed) || ctx.Err() != nil:
		return "", errors.Join(err, ctx.Err())
	case err != nil:
		return "Error: " + err.Error(), nil
	}
	rt.out.learn(res.Details)
	return res.Text(), nil
}

// awaitWake blocks until the registry asks to wake agent, and returns the
// wake reason with the system events queued for the agent's next turn.
func awaitWake(ctx context.Context, q *bgexec.Queue, agent string) (events []string, reason string, err error) {
	for {
		select {
		case hb := <-q.Heartbeats():
			if hb.ScopeKey == agent {
				// The registry queues the event before it asks for the wake.
				return q.Drain(agent), hb.Reason, nil
			}
		case <-ctx.Done():
			return nil, "", fmt.Errorf("waiting for a wake-up: %w", ctx.Err())
		}
	}
}

// transcript prints the conversation with session ids and pids replaced
// by placeholders, so that runs can be compared.
type transcript struct {
	w    io.Writer
	ids  []string
	pids []int
}

// learn records the session id and pid a result revealed.
func (t *transcript) learn(d bgexec.Details) {
	if d.SessionID != "" {
		t.ids = append(t.ids, d.SessionID)
	}
	if d.Pid != 0 {
		t.pids = append(t.pids, d.Pid)
	}
}

func (t *transcript) printf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	for _, id := range t.ids {
		s = strings.ReplaceAll(s, id, "<id>")
	}
	for _, pid := range t.pids {
		s = strings.ReplaceAll(s, "pid "+strconv.Itoa(pid), "pid <pid>")
	}
	fmt.Fprint(t.w, s)
}

// scriptedModel answers like a model that follows the tool descriptions.
type scriptedModel struct {
	step int
}

var sessionInText = regexp.MustCompile(`session ([a-z0-9-]+)`)

func (m *scriptedModel) Next(_ context.Context, history []message, tools []functionTool) (message, error) {
	if len(tools) != 2 || tools[0].Function.Name != bgexec.ToolExec || tools[1].Function.Name != bgexec.ToolProcess {
		return message{}, errors.New("scripted model: expected the exec and process tools")
	}
	last := history[len(history)-1]
	m.step++
	switch m.step {
	case 1:
		// A quick command: it finishes within the yield window, so the
		// output comes back directly.
		return m.callTool("exec", `{"command":"echo shell ok"}`), nil
	case 2:
		// A long job: start it once, in the background.
		return m.callTool("exec", `{"command":"sleep 0.2; echo compiling; sleep 0.3; echo build ok","background":true}`), nil
	case 3:
		return message{Role: "assistant", Content: "The build is running in the background; I will report when it finishes."}, nil
	case 4:
		// Woken by the completion event: read the whole log once.
		id := sessionInText.FindStringSubmatch(findToolResult(history, "call-2"))
		if id == nil || last.Role != "system" {
			return message{}, errors.New("scripted model: no session to follow up")
		}
		return m.callTool("process", `{"action":"log","sessionId":"`+id[1]+`"}`), nil
	case 5:
		return message{Role: "assistant", Content: "The build finished: " + lastLine(last.Content) + "."}, nil
	}
	return message{}, errors.New("scripted model: out of script")
}

func (m *scriptedModel) callTool(name, args string) message {
	return message{Role: "assistant", ToolCalls: []toolCall{{ID: "call-" + strconv.Itoa(m.step), Name: name, Arguments: json.RawMessage(args)}}}
}

func findToolResult(history []message, callID string) string {
	for _, msg := range history {
		if msg.Role == "tool" && msg.ToolCallID == callID {
			return msg.Content
		}
	}
	return ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
