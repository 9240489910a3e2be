package mcpgo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bgexec/bgexec"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// StructuredResult is the structured content of every tool result: the
// text the model reads, whole, and bgexec's details. Details carries no
// Aggregated and no Tail (the output is in Text already).
type StructuredResult struct {
	// Text is the result's text content, verbatim.
	Text string `json:"text"`
	// Details are bgexec's status fields: status, sessionId, exitCode …
	Details bgexec.Details `json:"details"`
}

// Tools returns the exec and process tools, in that order, running every
// call in sc. Safe for concurrent use.
func Tools(sc *bgexec.Scope) []server.ServerTool {
	if sc == nil {
		panic("mcpgo: Tools with nil scope")
	}
	return ToolsFor(func(context.Context) *bgexec.Scope { return sc })
}

// ToolsFor returns the exec and process tools, in that order, running each
// call in the scope scopeOf returns for the call's context. scopeOf must
// not return nil. Safe for concurrent use when scopeOf is.
func ToolsFor(scopeOf func(context.Context) *bgexec.Scope) []server.ServerTool {
	if scopeOf == nil {
		panic("mcpgo: ToolsFor with nil scopeOf")
	}
	defs := bgexec.ToolDefinitions()
	tools := make([]server.ServerTool, 0, len(defs))
	for _, def := range defs {
		tools = append(tools, server.ServerTool{
			Tool:    mcp.NewToolWithRawSchema(def.Name, def.Description, def.InputSchema),
			Handler: handler(def.Name, scopeOf),
		})
	}
	return tools
}

func handler(name string, scopeOf func(context.Context) *bgexec.Scope) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := rawArguments(req)
		if err != nil {
			return errorResult(fmt.Sprintf("The arguments of %s are not a JSON object: %v. Nothing ran.", name, err)), nil
		}
		res, err := scopeOf(ctx).Call(ctx, name, args)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return errorResult(fmt.Sprintf("The %s call could not be made: %v. Nothing ran.", name, err)), nil
		}
		return Convert(res), nil
	}
}

// rawArguments returns the call's arguments as JSON, as the client sent
// them when mcp-go kept them.
func rawArguments(req mcp.CallToolRequest) (json.RawMessage, error) {
	switch a := req.GetRawArguments().(type) {
	case json.RawMessage:
		return a, nil
	case nil:
		return json.RawMessage(`{}`), nil
	default:
		return json.Marshal(a)
	}
}

// Convert returns res as an MCP tool result: its text as the one text
// content item, its IsError as isError, and a [StructuredResult] as the
// structured content. Safe for concurrent use.
func Convert(res *bgexec.Result) *mcp.CallToolResult {
	d := res.Details
	d.Aggregated, d.Tail = "", ""
	text := res.Text()
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(text)},
		StructuredContent: StructuredResult{Text: text, Details: d},
		IsError:           res.IsError,
	}
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(text)},
		StructuredContent: StructuredResult{Text: text, Details: bgexec.Details{Status: bgexec.StatusFailed, Error: text}},
		IsError:           true,
	}
}
