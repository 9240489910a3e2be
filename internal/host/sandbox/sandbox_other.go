//go:build !linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
)

var errPlatform = fmt.Errorf("bgexec: the sandbox needs Linux (bubblewrap): %w", errors.ErrUnsupported)

// New fails: bubblewrap runs on Linux only.
func New(Config, string, func(string) string) (*Plan, error) { return nil, errPlatform }

func openRealPath(string) (*os.File, error) { return nil, errPlatform }
