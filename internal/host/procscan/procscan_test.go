package procscan

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// shells are the shells the script must work in: this machine's sh
// (dash on Debian) and busybox's, which alpine images and the Docker test
// image run (its grep -F stops at a NUL byte).
func shells(t *testing.T) map[string][]string {
	out := map[string][]string{"sh": {"/bin/sh"}}
	if bb, err := exec.LookPath("busybox"); err == nil {
		out["busybox"] = []string{bb, "sh"}
	} else if os.Getenv("CI") == "true" {
		t.Fatal("busybox is needed under CI (.ci/dockerd installs busybox-static)")
	}
	return out
}

// A process carrying the tag is counted, whichever shell runs the script,
// though the tag is not the first entry of its environment.
func TestScriptFindsTaggedProcesses(t *testing.T) {
	const key, tag, group = "PROCSCAN_TEST_TAG", "0123abcdef", 1 << 30
	cmd := exec.Command("sleep", "300")
	cmd.Env = append(os.Environ(), key+"="+tag, "AFTER=1")
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill() // ends it; Wait reaps it
		_ = cmd.Wait()
	}()
	for name, sh := range shells(t) {
		t.Run(name, func(t *testing.T) {
			args := append(sh[1:], "-c", Script("/proc", key, []int{group}, []string{tag}))
			out, err := exec.Command(sh[0], args...).Output()
			require.NoError(t, err)
			views, ok := Parse(strings.Split(string(out), "\n"), []int{group})
			require.True(t, ok, "output %q", out)
			v := views[group]
			require.NotNil(t, v)
			assert.Equal(t, 1, v.Tasks, "the tagged sleep only: %q", out)
			assert.Positive(t, v.MemoryBytes)
			assert.Empty(t, v.Ports)
		})
	}
}

// Nothing is counted for a tag no process carries.
func TestScriptWithoutTaggedProcesses(t *testing.T) {
	const group = 1 << 30
	out, err := exec.Command("/bin/sh", "-c", Script("/proc", "PROCSCAN_TEST_TAG", []int{group}, []string{"ffffffff00"})).Output()
	require.NoError(t, err)
	views, ok := Parse(strings.Split(string(out), "\n"), []int{group})
	require.True(t, ok)
	assert.Equal(t, 0, views[group].Tasks)
}
