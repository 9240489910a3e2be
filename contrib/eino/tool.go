package eino

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bgexec/bgexec"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"
)

// ErrorPrefix starts the string of a result with IsError.
const ErrorPrefix = "Error: "

// DetailsPrefix starts the last line of every result string, which carries
// the result's details as JSON.
const DetailsPrefix = "Details: "

// Tools returns the exec and process tools, in that order, each running its
// calls in sc, for compose.ToolsNodeConfig.Tools. Each is a *[Tool]. It
// panics on a nil scope. Safe for concurrent use.
func Tools(sc *bgexec.Scope) []tool.BaseTool {
	if sc == nil {
		panic("eino: Tools with nil scope")
	}
	defs := bgexec.ToolDefinitions()
	tools := make([]tool.BaseTool, 0, len(defs))
	for _, def := range defs {
		tools = append(tools, &Tool{scope: sc, def: def})
	}
	return tools
}

// Tool is one bgexec tool as an eino [tool.InvokableTool]. Make it with
// [Tools]. Safe for concurrent use.
type Tool struct {
	scope *bgexec.Scope
	def   bgexec.ToolDefinition
}

var _ tool.InvokableTool = (*Tool)(nil)

// Info returns the tool's name, description and parameters.
func (t *Tool) Info(context.Context) (*schema.ToolInfo, error) {
	var params jsonschema.Schema
	if err := json.Unmarshal(t.def.InputSchema, &params); err != nil {
		return nil, fmt.Errorf("eino: bgexec's %s schema: %w", t.def.Name, err)
	}
	return &schema.ToolInfo{
		Name:        t.def.Name,
		Desc:        t.def.Description,
		ParamsOneOf: schema.NewParamsOneOfByJSONSchema(&params),
	}, nil
}

// InvokableRun runs the call and returns what the model reads: see the
// package documentation's "Results". opts are ignored.
func (t *Tool) InvokableRun(ctx context.Context, argumentsInJSON string, _ ...tool.Option) (string, error) {
	res, err := t.scope.Call(ctx, t.def.Name, json.RawMessage(argumentsInJSON))
	if err != nil {
		return "", err
	}
	return Text(res), nil
}

// Text returns res as the string an eino tool returns: [ErrorPrefix] when
// res.IsError, the result's text, a blank line, and [DetailsPrefix] with
// its details as JSON. Safe for concurrent use.
func Text(res *bgexec.Result) string { return res.PlainText() }
