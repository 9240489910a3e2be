package bgexec

import "context"

// ApprovalStore keeps the rules that allow-always decisions add, so they
// last across restarts (Config.ApprovalStore). Its methods may be called
// concurrently with each other.
type ApprovalStore interface {
	// Load returns the rules saved so far; NewRegistry calls it once and
	// fails when it fails.
	Load(ctx context.Context) ([]string, error)
	// Save records one rule (an allowlist entry such as "git status").
	Save(ctx context.Context, rule string) error
}
