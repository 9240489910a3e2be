//go:build linux

package bgexec

import "github.com/bgexec/bgexec/internal/session"

// The engine's read and pipe sizes, so raw baselines do the same work.
const (
	readChunk   = session.ReadChunk
	defaultPipe = session.DefaultPipe
	busyPipe    = session.BusyPipe
)
