package eino_test

import (
	"context"
	"fmt"
	"log"

	"github.com/bgexec/bgexec"
	bgeino "github.com/bgexec/bgexec/contrib/eino"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// A ToolsNode runs a model message's exec and process calls through
// bgexec, one after the other.
func ExampleTools() {
	ctx := context.Background()
	reg, err := bgexec.NewRegistry(bgexec.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(ctx)

	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools:               bgeino.Tools(reg.Scope("agent")),
		ExecuteSequentially: true, // a list sees the sessions an earlier exec of the message started
	})
	if err != nil {
		log.Fatal(err)
	}
	// The message a chat model would return.
	msg := schema.AssistantMessage("", []schema.ToolCall{{
		ID:       "call_1",
		Function: schema.FunctionCall{Name: "exec", Arguments: `{"command":"echo hello; exit 3"}`},
	}})
	out, err := node.Invoke(ctx, msg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out[0].Content[:len("hello\n\n(Command exited with code 3)")])
	// Output:
	// hello
	//
	// (Command exited with code 3)
}
