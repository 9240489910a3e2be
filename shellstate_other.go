//go:build !linux

package bgexec

import (
	"errors"
	"os"
)

func stateMemfd() (*os.File, error) {
	return nil, errors.New("shell state needs Linux")
}

func readState(*os.File) ([]byte, bool) { return nil, false }
