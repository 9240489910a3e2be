//go:build linux

package bgexec_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/bgexec/bgexec"
)

// laterApprover defers every decision, as a runtime that asks a human in
// another window does.
type laterApprover struct{}

func (laterApprover) Approve(context.Context, *bgexec.ApprovalRequest) (bool, string, error) {
	return false, "", bgexec.ErrApprovalDeferred
}

// An approval that waits: exec returns approval-pending at once, and the
// decision comes later through Decide; the agent hears the outcome as an
// event.
func ExampleScope_Decide() {
	ctx := context.Background()
	events := bgexec.NewQueue()
	reg, _ := bgexec.NewRegistry(bgexec.Config{
		Security: "allowlist", Ask: "on-miss", Allowlist: []string{"echo"},
		Approver: laterApprover{}, Notifier: events,
	})
	defer reg.Close(ctx)
	agent := reg.Scope("agent:main:main")

	check, _ := agent.Check(ctx, &bgexec.ExecRequest{Command: "rm -f build.log"})
	fmt.Println(check.Decision)

	res, _ := agent.Exec(ctx, &bgexec.ExecRequest{Command: "rm -f build.log"})
	fmt.Println(res.Details.Status, res.Details.AllowedDecisions)

	_ = agent.Decide(ctx, res.Details.ApprovalID, bgexec.DecisionDeny)
	for _, e := range events.Drain("agent:main:main") {
		fmt.Println(e == "Exec denied (approval "+res.Details.ApprovalID+"): not approved; nothing ran: rm -f build.log")
	}
	// Output:
	// approval
	// approval-pending [allow-once allow-always deny]
	// true
}

// A poll result that never reached the model is given back, and the next
// poll returns its output again.
func ExampleScope_Undelivered() {
	ctx := context.Background()
	reg, _ := bgexec.NewRegistry(bgexec.Config{})
	defer reg.Close(ctx)
	agent := reg.Scope("agent:main:main")

	res, _ := agent.Exec(ctx, &bgexec.ExecRequest{Command: "echo built", Background: true})
	id := res.Details.SessionID
	first, _ := agent.Process(ctx, &bgexec.ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(bgexec.Number(10000))})
	_ = agent.Undelivered(ctx, first) // say its MCP request was cancelled
	again, _ := agent.Process(ctx, &bgexec.ProcessRequest{Action: "poll", SessionID: id})
	fmt.Println(strings.HasPrefix(first.Text(), "built\n"), strings.HasPrefix(again.Text(), "built\n"))
	// Output:
	// true true
}
