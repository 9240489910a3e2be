package local

import (
	"errors"
	"fmt"

	"github.com/bgexec/bgexec/internal/contain"
)

// startContainment sets up what contains the commands on this machine:
// the registry's cgroup (nil without one), the limits and the watchdogs.
// On error it leaves nothing.
func startContainment(opts *Options) (*contain.Root, *contain.Limiter, *contain.Watchdog, error) {
	var cg *contain.Root
	var cgErr error
	if opts.Containment != ContainmentOff {
		cg, cgErr = contain.NewRoot()
		if cgErr != nil && opts.Containment == ContainmentRequired {
			return nil, nil, nil, fmt.Errorf("containment required: %w", cgErr)
		}
	} else {
		cgErr = errors.New("containment turned off by Config.Containment")
	}
	lim := contain.NewLimiter(cg, cgErr, opts.Limits)
	release := func() {
		if cg != nil {
			_ = cg.Remove() // Best effort: nothing ran in it.
		}
		lim.Remove()
	}
	if opts.Check != nil {
		if err := opts.Check(lim.Report()); err != nil {
			release()
			return nil, nil, nil, err
		}
	}
	cgDir := ""
	if cg != nil {
		cgDir = cg.Dir()
	}
	wd, err := contain.StartWatchdog(cgDir)
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	return cg, lim, wd, nil
}
