//go:build linux

package testhelper

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// BinEnv is the environment variable through which a test process tells
// its helpers' callers, and the test binaries it re-executes, where the
// built helper binary is.
const BinEnv = "BGEXEC_TEST_HELPER_BIN"

// Build builds the helper binary (without the race detector) into dir and
// returns its path. It runs the go tool from the working directory, which
// must be inside the bgexec module (a package's tests run in its own
// directory); the build cache makes every build after the first one a
// link of a small program.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "bgexec-test-helper")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/bgexec/bgexec/internal/testhelper/cmd/bgexec-test-helper")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build of the test helper: %w: %s", err, out)
	}
	return bin, nil
}
