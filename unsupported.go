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
	"time"
)

// errPlatform is what NewRegistry returns off Linux.
var errPlatform = fmt.Errorf("bgexec: sessions need Linux (pidfds, process groups, cgroups): %w", errors.ErrUnsupported)

type spawner struct{ reqs chan spawnCall }

type spawnCall struct{}

func (s *spawner) run(stop <-chan struct{}) { <-stop }

type watchdog struct{}

func startWatchdog(string) (*watchdog, error) { return nil, errPlatform }
func (*watchdog) keepAlive()                  {}
func (*watchdog) close()                      {}

type cgroupRoot struct{ dir string }

func newCgroupRoot() (*cgroupRoot, error)               { return nil, errPlatform }
func (*cgroupRoot) remove() error                       { return nil }
func (*cgroupRoot) retryDirty(time.Duration) int        { return 0 }
func (*cgroupRoot) newSession() (*sessionCgroup, error) { return nil, errPlatform }

type sessionCgroup struct{}

func (*sessionCgroup) remove(time.Duration) error { return nil }
func (*sessionCgroup) closeFD()                   {}

func (r *Registry) spawnChild(*spawnSpec) (*spawned, error) { return nil, errPlatform }

type procRef struct{}

func setWinsize(*os.File, uint16, uint16) error { return errPlatform }
func canonicalMode(string) bool                 { return false }

type limitRoot struct {
	report ContainmentReport
	kick   func()
}

type sessionLimits struct{}

func newLimitRoot(*cgroupRoot, error, Limits, bool) *limitRoot { return &limitRoot{} }
func (*limitRoot) warnings(bool) (all, explicit []string)      { return nil, nil }
func (*limitRoot) attach(*sessionCgroup) error                 { return errPlatform }
func (*limitRoot) remove()                                     {}
func (*limitRoot) retryDirty()                                 {}

func descriptorRefusal() string { return "" }
