//go:build !linux

package sandbox

import "os"

// Command fails: bubblewrap runs on Linux only (New fails before).
func (p *Plan) Command([]string, string, bool, bool, []*os.File) (string, []string, []*os.File, []*os.File, error) {
	return "", nil, nil, nil, errPlatform
}
