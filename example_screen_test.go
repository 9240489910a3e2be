//go:build linux

package bgexec_test

import (
	"context"
	"fmt"

	"github.com/bgexec/bgexec"
)

// A program that draws with cursor moves is read through screen: the
// terminal as a person would see it, not the stream of output.
func ExampleScope_Process_screen() {
	ctx := context.Background()
	reg, _ := bgexec.NewRegistry(bgexec.Config{})
	defer reg.Close(ctx)
	agent := reg.Scope("agent:main:main")

	res, _ := agent.Exec(ctx, &bgexec.ExecRequest{
		Command:    `printf '\033[2J\033[1;1Hname: demo\033[3;5Hstatus: ok\033[3;1H'; exec sleep 60`,
		PTY:        true,
		Background: true,
	})
	id := res.Details.SessionID
	agent.Process(ctx, &bgexec.ProcessRequest{Action: "wait", SessionID: id, Pattern: "status: ok"})

	res, _ = agent.Process(ctx, &bgexec.ProcessRequest{Action: "screen", SessionID: id})
	fmt.Println(res.Text())
	fmt.Println("cursor at", res.Details.CursorRow, res.Details.CursorCol)

	// The same output through poll: the moves are gone, the text runs on.
	res, _ = agent.Process(ctx, &bgexec.ProcessRequest{Action: "log", SessionID: id})
	fmt.Println(res.Text())
	agent.Process(ctx, &bgexec.ProcessRequest{Action: "remove", SessionID: id})
	// Output:
	// name: demo
	//
	//     status: ok
	// [cursor row 3 col 1; alternate screen off]
	// cursor at 3 1
	// name: demostatus: ok
}
