package bgexec

import (
	"fmt"
	"strings"
)

// headChars is the largest head of a head-and-tail text, in characters.
const headChars = 2000

// shellOpts are the resolved agent-shell options of a Config.
type shellOpts struct {
	defaultEnv []string // NonInteractiveEnv() with NonInteractive; else nil
	headChars  int      // head-tail: the head buffer's size; 0 with "tail"
	keepState  bool     // KeepShellState, on hosts that support it
	spill      spillOpts
}

func resolveShellOpts(c *Config) (shellOpts, error) {
	var o shellOpts
	switch strings.ToLower(strings.TrimSpace(c.Truncation)) {
	case "", "tail":
	case "head-tail":
		max := DefaultMaxOutputChars
		if c.MaxOutputChars != 0 {
			max = clamp(c.MaxOutputChars, MinOutputChars, MaxOutputChars)
		}
		o.headChars = min(headChars, max/10)
	default:
		return o, fmt.Errorf("bgexec: Config.Truncation %q: use \"tail\" or \"head-tail\"", c.Truncation)
	}
	o.keepState = c.KeepShellState
	var err error
	if o.spill, err = resolveSpill(c); err != nil {
		return o, err
	}
	if c.NonInteractive {
		o.defaultEnv = NonInteractiveEnv()
	}
	return o, nil
}
