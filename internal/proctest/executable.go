package proctest

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// WriteExecutable writes data to path with the given mode, from a child
// process: a file this process opened for writing could not be run until
// every child forked meanwhile by a parallel test had execed (each holds
// a copy of the descriptor until then), and exec would fail with "text
// file busy" (ETXTBSY). The child's copy is gone when it exits.
func WriteExecutable(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `cat > "$1" && chmod "$2" "$1"`, "sh", path, strconv.FormatUint(uint64(mode.Perm()), 8))
	cmd.Stdin = bytes.NewReader(data)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("write %s: %v: %s", path, err, out)
	}
}
