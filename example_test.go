//go:build linux

package bgexec_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bgexec/bgexec"
)

func ptr[T any](v T) *T { return &v }

// A foreground run returns its output directly.
func ExampleScope_Exec() {
	ctx := context.Background()
	reg, _ := bgexec.NewRegistry(bgexec.Config{})
	defer reg.Close(ctx)

	res, _ := reg.Scope("agent:main:main").Exec(ctx, &bgexec.ExecRequest{Command: "echo hello; exit 3"})
	fmt.Println(res.Text())
	fmt.Println(res.Details.Status, *res.Details.ExitCode)
	// Output:
	// hello
	//
	// (Command exited with code 3)
	// completed 3
}

// A run started in the background is followed up with the process tool.
func ExampleScope_Process() {
	ctx := context.Background()
	reg, _ := bgexec.NewRegistry(bgexec.Config{})
	defer reg.Close(ctx)
	agent := reg.Scope("agent:main:main")

	res, _ := agent.Exec(ctx, &bgexec.ExecRequest{Command: "echo step 1; echo step 2", Background: true})
	fmt.Println(res.Details.Status)
	id := res.Details.SessionID

	// wait returns when the command ends, with the output seen meanwhile.
	res, _ = agent.Process(ctx, &bgexec.ProcessRequest{Action: "wait", SessionID: id})
	fmt.Println(res.Text())

	res, _ = agent.Process(ctx, &bgexec.ProcessRequest{Action: "log", SessionID: id, Limit: ptr(1)})
	fmt.Println(res.Text())
	// Output:
	// running
	// The process ended.
	//
	// step 1
	// step 2
	//
	// Process exited with code 0.
	// step 2
}

// Call takes raw JSON arguments, as tool frameworks hand them over.
func ExampleScope_Call() {
	ctx := context.Background()
	reg, _ := bgexec.NewRegistry(bgexec.Config{})
	defer reg.Close(ctx)

	res, _ := reg.Scope("a").Call(ctx, "process", json.RawMessage(`{"action":"poll","sessionId":"nope"}`))
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	// Output:
	// {"content":[{"type":"text","text":"No session found for nope"}],"details":{"status":"failed","error":"No session found for nope"},"isError":true}
}
