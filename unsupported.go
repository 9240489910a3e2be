//go:build !linux

package bgexec

// Sessions need Linux: pidfds to wait without a thread per session,
// process groups and cgroups to contain them, a watchdog for host death.
// Elsewhere the package builds, so code that embeds it compiles on a
// developer's Mac, and NewRegistry says at run time what it cannot do.

import (
	"errors"
	"fmt"
	"os"
)

// errPlatform is what NewRegistry returns off Linux.
var errPlatform = fmt.Errorf("bgexec: sessions need Linux (pidfds, process groups, cgroups): %w", errors.ErrUnsupported)

func setWinsize(*os.File, uint16, uint16) error { return errPlatform }
func canonicalMode(string) bool                 { return false }
