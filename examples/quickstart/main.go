// Command quickstart is a real demo of bgexec: a foreground exec, a run
// that outlives its yield window, poll, wait, log paging and kill.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/bgexec/bgexec"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	queue := bgexec.NewQueue()
	reg, err := bgexec.NewRegistry(bgexec.Config{Notifier: queue})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := reg.Close(ctx); err != nil {
			log.Print(err)
		}
	}()
	agent := reg.Scope("agent:main:main")
	build(ctx, agent)
	server(ctx, agent)
	notify(ctx, agent, queue)
}

// build runs a command in the foreground, then one that outlives its
// yield window, and follows it with poll, wait and log.
func build(ctx context.Context, agent *bgexec.Scope) {
	step("1. exec in the foreground: the output comes back directly")
	show(agent.Call(ctx, "exec", json.RawMessage(`{"command":"echo hello from $OPENCLAW_SHELL; uname -s"}`)))

	step("2. exec that outlives its 300 ms yield window moves to the background")
	res, err := agent.Exec(ctx, &bgexec.ExecRequest{
		Command: `for i in 1 2 3 4 5; do echo "build step $i"; sleep 0.2; done; echo "build done"`,
		YieldMs: ptr(300.0),
	})
	show(res, err)
	id := res.Details.SessionID

	step("3. poll drains new output (waiting up to 2 s for some)")
	show(agent.Process(ctx, &bgexec.ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(bgexec.Number(2000))}))

	step("4. wait blocks until the run ends, without a polling loop")
	show(agent.Process(ctx, &bgexec.ProcessRequest{Action: "wait", SessionID: id, Timeout: ptr(bgexec.Number(10000))}))

	step("5. log pages the retained output by lines")
	show(agent.Process(ctx, &bgexec.ProcessRequest{Action: "log", SessionID: id, Offset: ptr(1), Limit: ptr(2)}))

}

// server starts a server in the background, waits until it is ready,
// lists the sessions and kills it.
func server(ctx context.Context, agent *bgexec.Scope) {
	step("6. a server started in the background, waited for until it is ready")
	res, err := agent.Exec(ctx, &bgexec.ExecRequest{
		Command:    `echo "starting"; sleep 0.3; echo "listening on :8080"; while :; do sleep 1; done`,
		Background: true,
	})
	show(res, err)
	id := res.Details.SessionID
	show(agent.Process(ctx, &bgexec.ProcessRequest{Action: "wait", SessionID: id, Pattern: "listening on", Timeout: ptr(bgexec.Number(10000))}))

	step("7. list shows the agent's sessions")
	show(agent.Process(ctx, &bgexec.ProcessRequest{Action: "list"}))

	step("8. kill ends the server's whole process group")
	show(agent.Process(ctx, &bgexec.ProcessRequest{Action: "kill", SessionID: id}))

}

// notify leaves a job to run and shows the heartbeat and event its end
// raises.
func notify(ctx context.Context, agent *bgexec.Scope, queue *bgexec.Queue) {
	step("9. a job nobody waits for wakes the agent when it ends")
	// The build's exit was reported by wait, and the server's by the kill's
	// own result, so neither raises an event. A job left to run does.
	show(agent.Exec(ctx, &bgexec.ExecRequest{Command: "sleep 0.5; echo tests passed", Background: true}))
	select {
	case hb := <-queue.Heartbeats():
		fmt.Printf("heartbeat for %s: %s\n", hb.ScopeKey, hb.Reason)
	case <-time.After(10 * time.Second):
		fmt.Println("no heartbeat within 10s")
	}
	for _, ev := range queue.Drain("agent:main:main") {
		fmt.Println("event:", ev)
	}
}

func step(title string) { fmt.Printf("\n== %s\n", title) }

func show(res *bgexec.Result, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	fmt.Println(res.Text())
	fmt.Printf("   details: status=%s sessionId=%q exitReason=%q\n", res.Details.Status, res.Details.SessionID, res.Details.ExitReason)
}

func ptr[T any](v T) *T { return &v }
