//go:build !linux

package sandbox

import (
	"os"
	"time"
)

// Warm is a sandbox started ahead of time; bubblewrap runs on Linux only.
type Warm struct{}

// NewWarm fails: bubblewrap runs on Linux only.
func (p *Plan) NewWarm() (*Warm, error) { return nil, errPlatform }

// Dir is "" here.
func (w *Warm) Dir() string { return "" }

// ReadOnly is false here.
func (w *Warm) ReadOnly() bool { return false }

// Command fails: bubblewrap runs on Linux only.
func (w *Warm) Command([]string, string, bool, bool, []*os.File) (string, []string, []*os.File, []*os.File, error) {
	return "", nil, nil, nil, errPlatform
}

// AwaitReady fails: bubblewrap runs on Linux only.
func (w *Warm) AwaitReady(*os.File, time.Duration) error { return errPlatform }

// Fits keeps: nothing runs here.
func (w *Warm) Fits(string, bool) Verdict { return Keep }

// Passable is false here.
func Passable(_, _ []string) bool { return false }

// Exec fails: bubblewrap runs on Linux only.
func (w *Warm) Exec(_, _ []string, _, _ bool) error { return errPlatform }

// Close does nothing here.
func (w *Warm) Close() {}
