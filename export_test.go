//go:build linux

package bgexec

import (
	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/host/sandbox"
	"github.com/bgexec/bgexec/internal/session"
)

// The engine's read and pipe sizes, so raw baselines do the same work.
const (
	readChunk   = session.ReadChunk
	defaultPipe = session.DefaultPipe
	busyPipe    = session.BusyPipe
)

// setSandboxHook makes reg's sandboxed spawns call h at each stage
// (sandboxStageChecked, sandboxStageOpened), on the thread that forks
// bwrap. Set it before the call it is meant for.
func setSandboxHook(reg *Registry, h func(stage string)) {
	reg.cfg.sandbox.SetTestHook(h)
}

// The stages setSandboxHook's hook runs at.
const (
	sandboxStageChecked = sandbox.StageChecked
	sandboxStageOpened  = sandbox.StageOpened
)

// setHost makes h run every command of reg: the gateway's, and the
// sandbox's when reg has one. Set it before the first exec.
func setHost(reg *Registry, h host.Host) {
	reg.hosts.gateway = h
	if reg.hosts.sandbox != nil {
		reg.hosts.sandbox = h
	}
}
