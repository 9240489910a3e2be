//go:build !linux

package local

import (
	"errors"
	"fmt"
	"os"
)

// errPlatform is what a start returns off Linux (New fails before: the
// watchdog needs Linux too).
var errPlatform = fmt.Errorf("local: commands need Linux (pidfds, process groups, cgroups): %w", errors.ErrUnsupported)

type spawner struct{ reqs chan spawnCall }

type spawnCall struct{}

func (s *spawner) run(stop <-chan struct{}) { <-stop }

func spawnerThreads() int { return 1 }

func (h *Host) spawn(*spawnSpec) (*spawned, error) { return nil, errPlatform }

func stateMemfd() (*os.File, error) { return nil, errPlatform }

func readState(*os.File) ([]byte, bool) { return nil, false }
