package openai

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bgexec/bgexec"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// ErrorPrefix starts the output of a result with IsError.
const ErrorPrefix = "Error: "

// DetailsPrefix starts the last line of every output, which carries the
// result's details as JSON.
const DetailsPrefix = "Details: "

// parameters returns def's schema as the SDK's parameters map.
func parameters(def bgexec.ToolDefinition) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(def.InputSchema, &m); err != nil {
		// The schemas are bgexec's constants: this is a bug in bgexec.
		panic("openai: bgexec's " + def.Name + " schema: " + err.Error())
	}
	return m
}

// ChatTools returns the exec and process tools, in that order, as Chat
// Completions function tools (strict off). Each call returns fresh values.
func ChatTools() []sdk.ChatCompletionToolUnionParam {
	defs := bgexec.ToolDefinitions()
	tools := make([]sdk.ChatCompletionToolUnionParam, 0, len(defs))
	for _, def := range defs {
		tools = append(tools, sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        def.Name,
			Description: sdk.String(def.Description),
			Parameters:  shared.FunctionParameters(parameters(def)),
			Strict:      sdk.Bool(false),
		}))
	}
	return tools
}

// ResponseTools returns the exec and process tools, in that order, as
// Responses API function tools (strict off). Each call returns fresh
// values.
func ResponseTools() []responses.ToolUnionParam {
	defs := bgexec.ToolDefinitions()
	tools := make([]responses.ToolUnionParam, 0, len(defs))
	for _, def := range defs {
		tools = append(tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name:        def.Name,
			Description: sdk.String(def.Description),
			Parameters:  parameters(def),
			Strict:      sdk.Bool(false),
		}})
	}
	return tools
}

// Handles reports whether a function call of this name is one of bgexec's
// tools ("exec" or "process").
func Handles(name string) bool {
	return name == bgexec.ToolExec || name == bgexec.ToolProcess
}

// CallChat runs a Chat Completions function call in sc and returns the tool
// message that answers it, with [Output] as its content. A call that is not
// a function call of bgexec's tools, or that could not be made, is a Go
// error.
func CallChat(ctx context.Context, sc *bgexec.Scope, call sdk.ChatCompletionMessageToolCallUnion) (sdk.ChatCompletionMessageParamUnion, error) {
	if call.Type != "function" || !Handles(call.Function.Name) {
		return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("openai: %s call %q is not a bgexec tool", call.Type, call.Function.Name)
	}
	out, err := run(ctx, sc, call.Function.Name, call.Function.Arguments)
	if err != nil {
		return sdk.ChatCompletionMessageParamUnion{}, err
	}
	return sdk.ToolMessage(out, call.ID), nil
}

// CallResponse runs a Responses API function call in sc and returns the
// function_call_output input item that answers it, with [Output] as its
// output. A call of a function that is not bgexec's, or that could not be
// made, is a Go error.
func CallResponse(ctx context.Context, sc *bgexec.Scope, call responses.ResponseFunctionToolCall) (responses.ResponseInputItemUnionParam, error) {
	if !Handles(call.Name) {
		return responses.ResponseInputItemUnionParam{}, fmt.Errorf("openai: function call %q is not a bgexec tool", call.Name)
	}
	out, err := run(ctx, sc, call.Name, call.Arguments)
	if err != nil {
		return responses.ResponseInputItemUnionParam{}, err
	}
	item := responses.ResponseInputItemParamOfFunctionCallOutput(out)
	item.OfFunctionCallOutput.CallID = sdk.String(call.CallID)
	return item, nil
}

func run(ctx context.Context, sc *bgexec.Scope, name, args string) (string, error) {
	if sc == nil {
		panic("openai: call with nil scope")
	}
	res, err := sc.Call(ctx, name, json.RawMessage(args))
	if err != nil {
		return "", err
	}
	return Output(res), nil
}

// Output returns res as a function call's output: [ErrorPrefix] when
// res.IsError, the result's text, a blank line, and [DetailsPrefix] with
// its details as JSON.
func Output(res *bgexec.Result) string { return res.PlainText() }
