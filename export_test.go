//go:build linux

package bgexec

import "github.com/bgexec/bgexec/internal/session"

// The engine's read and pipe sizes, so raw baselines do the same work.
const (
	readChunk   = session.ReadChunk
	defaultPipe = session.DefaultPipe
	busyPipe    = session.BusyPipe
)

// The points of a sandboxed spawn where setSandboxHook's function runs:
// after the workdir was checked, and after its directories were opened.
const (
	sandboxStageChecked = "checked"
	sandboxStageOpened  = "opened"
)

// setSandboxHook makes reg's sandboxed spawns call h at each stage, on
// the thread that forks bwrap. Set it before the call it is meant for.
func setSandboxHook(reg *Registry, h func(stage string)) {
	reg.cfg.sandbox.testHook = h
}
