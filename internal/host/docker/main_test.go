package dockerhost

import (
	"os"
	"testing"

	"github.com/bgexec/bgexec/internal/proctest"
	"go.uber.org/goleak"
)

// The tests run against a real Docker daemon: .ci/dockerd starts a
// private one and exports its address and test image.
const (
	daemonEnv = "BGEXEC_TEST_DOCKER_HOST"
	imageEnv  = "BGEXEC_TEST_DOCKER_IMAGE"
)

// TestMain runs the tests under goleak. Each test has containers of its own
// (a host per test, its containers found by the host's label), so they run
// in parallel, two per CPU: they spend their time waiting on the daemon.
func TestMain(m *testing.M) {
	proctest.SetParallelPerCPU(2)
	goleak.VerifyTestMain(m)
}

// testDaemon returns the test daemon's address and image. Without them a
// test fails under CI=true and skips elsewhere.
func testDaemon(t testing.TB) (daemon, image string) {
	t.Helper()
	daemon, image = os.Getenv(daemonEnv), os.Getenv(imageEnv)
	if daemon == "" || image == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s and %s are unset: run .ci/dockerd start (CI must test the Docker host)", daemonEnv, imageEnv)
		}
		t.Skipf("%s and %s are unset: eval \"$(BGEXEC_DOCKERD_OWNER=$$ .ci/dockerd start)\" to test the Docker host", daemonEnv, imageEnv)
	}
	return daemon, image
}
