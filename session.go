package bgexec

import (
	"strings"

	"github.com/bgexec/bgexec/internal/session"
)

// ExitReason says how a session ended. It is never invented: a killed run is
// "killed", not "exit" with code 0.
//
// A ExitReason is an immutable value, safe for concurrent use.
type ExitReason string

// Exit reasons reported in Details.ExitReason.
const (
	ExitReasonExit       ExitReason = "exit"        // the command exited on its own
	ExitReasonSignal     ExitReason = "signal"      // a signal not sent by bgexec ended it
	ExitReasonTimeout    ExitReason = "timeout"     // the exec timeout ended it
	ExitReasonKilled     ExitReason = "killed"      // kill, remove or Close ended it
	ExitReasonSpawnError ExitReason = "spawn-error" // it never started
	ExitReasonOOM        ExitReason = "oom"         // the memory limit (Limits.MemoryBytes) killed it
	ExitReasonLost       ExitReason = "lost"        // the connection to its node dropped
)

// Status is a session or result status. A command that exits with a
// non-zero code is "completed" (the code is in Details.ExitCode); "failed"
// is a command that could not run, was not found (126, 127), was ended by
// a signal, a timeout or a kill, or a tool call that was refused.
//
// A Status is an immutable value, safe for concurrent use.
type Status string

// Statuses used in Details.Status.
const (
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
)

// The engine's names are the same strings.
func statusOf(s session.Status) Status     { return Status(s) }
func reasonOf(r session.Reason) ExitReason { return ExitReason(r) }

// exitDetails fills the exit fields of d from an ended session's exit.
// A failed end also sets Error to the reason, and every end marks d so that
// its JSON carries exitSignal, as null when no signal ended it.
func exitDetails(d *Details, e *session.Exit) {
	d.ExitCode, d.ExitSignal, d.ExitReason = e.Code, e.Signal, reasonOf(e.Reason)
	d.ended = true
	if e.Status() == session.Failed && d.Error == "" {
		d.Error, _, _ = strings.Cut(endLine(e), "\n\n")
	}
}
