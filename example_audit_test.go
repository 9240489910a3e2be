//go:build linux

package bgexec_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/bgexec/bgexec"
)

// An audit trail: each exec call's decision, its spawn and its end, as
// JSON lines. A real one appends to a file opened with os.O_APPEND
// (closed after the registry).
func ExampleNewAuditLog() {
	var audit bytes.Buffer
	reg, err := bgexec.NewRegistry(bgexec.Config{Observer: bgexec.NewAuditLog(&audit)})
	if err != nil {
		log.Fatal(err)
	}
	sc := reg.Scope("agent:main:main")
	if _, err := sc.Exec(context.Background(), &bgexec.ExecRequest{Command: "echo audited", Env: map[string]string{"API_KEY": "not logged"}}); err != nil {
		log.Fatal(err)
	}
	_ = reg.Close(context.Background()) // delivers every queued event

	lines := bufio.NewScanner(&audit)
	for lines.Scan() {
		var line struct {
			Event, Decision, DecidedBy, Command string
			EnvKeys                             []string
			ExitCode                            *int
		}
		if err := json.Unmarshal(lines.Bytes(), &line); err != nil {
			log.Fatal(err)
		}
		switch line.Event {
		case "decision":
			fmt.Println(line.Event, line.Decision, "by", line.DecidedBy)
		case "spawn":
			fmt.Println(line.Event, line.Command, line.EnvKeys)
		case "end":
			fmt.Println(line.Event, "exit code", *line.ExitCode)
		}
	}
	// Output:
	// decision allowed by policy
	// spawn echo audited [API_KEY]
	// end exit code 0
}
