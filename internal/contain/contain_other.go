//go:build !linux

package contain

// Containment needs Linux (cgroups, /proc, pidfds). Elsewhere the package
// builds so that package bgexec does, and every constructor says at run
// time that it cannot contain anything.

import (
	"errors"
	"time"
)

// errPlatform is what the constructors return off Linux.
var errPlatform = errors.ErrUnsupported

// Root is a registry's cgroup; off Linux there is none.
type Root struct{}

// NewRoot reports that there are no cgroups off Linux.
func NewRoot() (*Root, error) { return nil, errPlatform }

// Dir is "" off Linux.
func (*Root) Dir() string { return "" }

// Remove does nothing off Linux.
func (*Root) Remove() error { return nil }

// RetryDirty does nothing off Linux.
func (*Root) RetryDirty(time.Duration) int { return 0 }

// ShedPrepared has nothing to shed off Linux.
func (*Root) ShedPrepared() int { return 0 }

// NewSession reports that there are no cgroups off Linux.
func (*Root) NewSession() (*Cgroup, error) { return nil, errPlatform }

// Cgroup is a session's cgroup; off Linux there is none.
type Cgroup struct{}

// Remove does nothing off Linux.
func (*Cgroup) Remove(time.Duration) error { return nil }

// CloseFD does nothing off Linux.
func (*Cgroup) CloseFD() {}

// Limiter applies limits; off Linux it applies none.
type Limiter struct{ report Report }

// NewLimiter returns a Limiter that applies nothing off Linux.
func NewLimiter(*Root, error, Limits) *Limiter { return &Limiter{} }

// Report is empty off Linux.
func (l *Limiter) Report() Report { return Report{} }

// SetKick does nothing off Linux.
func (*Limiter) SetKick(func()) {}

// Attach reports that there are no cgroups off Linux.
func (*Limiter) Attach(*Cgroup) error { return errPlatform }

// Remove does nothing off Linux.
func (*Limiter) Remove() {}

// RetryDirty does nothing off Linux.
func (*Limiter) RetryDirty() {}

// ShedPrepared has nothing to shed off Linux.
func (*Limiter) ShedPrepared() int { return 0 }

// DescriptorRefusal never refuses off Linux.
func DescriptorRefusal() string { return "" }

// Watchdog kills sessions when the host dies; off Linux there is none.
type Watchdog struct{}

// StartWatchdog reports that there is no watchdog off Linux.
func StartWatchdog(string) (*Watchdog, error) { return nil, errPlatform }

// KeepAlive does nothing off Linux.
func (*Watchdog) KeepAlive() {}

// Close does nothing off Linux.
func (*Watchdog) Close() {}
