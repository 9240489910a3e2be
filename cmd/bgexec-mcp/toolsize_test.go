package main

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modelVisibleBudget bounds, in bytes, what a host shows the model of the
// tools/list answer with the default configuration: each tool's name,
// description and input schema (as compact JSON). The README records the
// measurement; raise the budget only with the reason written there.
const modelVisibleBudget = 12288

// toolSizes are the sizes of the tools/list answer with the default
// configuration, in bytes.
type toolSizes struct {
	whole        int // the result as compact JSON
	modelVisible int // names, descriptions and input schemas
	descriptions int // the descriptions alone: the tools' and their parameters'
}

func measureToolsList(t *testing.T) toolSizes {
	t.Helper()
	st, err := parseConfig(nil, io.Discard, noEnv)
	require.NoError(t, err)
	st.opts.logger = discardLogger()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	server, clientT := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- serve(context.Background(), server, st.opts) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil).Connect(ctx, clientT, nil)
	require.NoError(t, err)
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, cs.Close())
	require.NoError(t, <-served)

	var sz toolSizes
	b, err := json.Marshal(list)
	require.NoError(t, err)
	sz.whole = len(b)
	for _, tool := range list.Tools {
		in, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		sz.modelVisible += len(tool.Name) + len(tool.Description) + len(in)
		sz.descriptions += len(tool.Description) + descriptionBytes(tool.InputSchema)
	}
	return sz
}

// descriptionBytes sums the "description" strings anywhere in a schema.
func descriptionBytes(schema any) int {
	b, _ := json.Marshal(schema) // it came from JSON
	var v any
	_ = json.Unmarshal(b, &v) // Best effort: valid JSON.
	n := 0
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "description" {
					n += len(s)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return n
}

// TestToolsListBudget fails when what the model reads of the tools grows
// past modelVisibleBudget.
func TestToolsListBudget(t *testing.T) {
	sz := measureToolsList(t)
	t.Logf("tools/list: %d bytes; model-visible (names, descriptions, input schemas) %d bytes; descriptions alone %d bytes", sz.whole, sz.modelVisible, sz.descriptions)
	assert.LessOrEqual(t, sz.modelVisible, modelVisibleBudget, "the tools grew: write the reason in the README's MCP section and raise modelVisibleBudget")
}
