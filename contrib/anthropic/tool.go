package anthropic

import (
	"context"
	"encoding/json"

	"github.com/bgexec/bgexec"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// DetailsPrefix starts the text block, or the line of a [ToolError]'s
// message, that carries a result's details as JSON.
const DetailsPrefix = "Details: "

// Tools returns the exec and process tools, in that order, each running its
// calls in sc. It panics on a nil scope. Safe for concurrent use.
func Tools(sc *bgexec.Scope) []sdk.BetaTool {
	if sc == nil {
		panic("anthropic: Tools with nil scope")
	}
	defs := bgexec.ToolDefinitions()
	tools := make([]sdk.BetaTool, 0, len(defs))
	for _, def := range defs {
		var schema sdk.BetaToolInputSchemaParam
		if err := schema.UnmarshalJSON(def.InputSchema); err != nil {
			// The schemas are bgexec's constants: this is a bug in bgexec.
			panic("anthropic: bgexec's " + def.Name + " schema: " + err.Error())
		}
		tools = append(tools, &tool{scope: sc, def: def, schema: schema})
	}
	return tools
}

// tool is one bgexec tool as an sdk.BetaTool.
type tool struct {
	scope  *bgexec.Scope
	def    bgexec.ToolDefinition
	schema sdk.BetaToolInputSchemaParam
}

func (t *tool) Name() string                              { return t.def.Name }
func (t *tool) Description() string                       { return t.def.Description }
func (t *tool) InputSchema() sdk.BetaToolInputSchemaParam { return t.schema }

// Execute runs the call. A result with IsError is a *ToolError; any other
// result is its text block and its details block.
func (t *tool) Execute(ctx context.Context, input json.RawMessage) ([]sdk.BetaToolResultBlockParamContentUnion, error) {
	res, err := t.scope.Call(ctx, t.def.Name, input)
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, &ToolError{Result: res}
	}
	return Content(res), nil
}

// Content returns res as tool_result content: a text block with its text
// (left out when the text is empty, as the API refuses empty text blocks)
// and a text block with [DetailsPrefix] and its details as JSON. Safe for
// concurrent use.
func Content(res *bgexec.Result) []sdk.BetaToolResultBlockParamContentUnion {
	var blocks []sdk.BetaToolResultBlockParamContentUnion
	if text := res.Text(); text != "" {
		blocks = append(blocks, textBlock(text))
	}
	return append(blocks, textBlock(DetailsPrefix+res.DetailsJSON()))
}

func textBlock(text string) sdk.BetaToolResultBlockParamContentUnion {
	return sdk.BetaToolResultBlockParamContentUnion{OfText: &sdk.BetaTextBlockParam{Text: text}}
}

// ToolError is the error Execute returns for a result with IsError, so
// that the tool runner marks its tool_result with is_error.
type ToolError struct {
	// Result is the failure result, with status "failed".
	Result *bgexec.Result
}

// Error returns the result's text, a blank line and [DetailsPrefix] with
// the result's details as JSON: what the model reads after the runner's
// "Error: ".
func (e *ToolError) Error() string {
	return e.Result.Text() + "\n\n" + DetailsPrefix + e.Result.DetailsJSON()
}
