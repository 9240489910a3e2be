package bgexec_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bgexec/bgexec"
	"github.com/bgexec/bgexec/internal/contracttest"
)

// TestContractOnEveryHost runs the one contract (internal/contracttest)
// on every host this machine can run: the gateway, the sandbox, an SSH
// node and a Docker daemon (.ci/dockerd's). The Kubernetes module runs it
// for its pods.
func TestContractOnEveryHost(t *testing.T) {
	t.Parallel()
	// The package directory: the sandbox's default workdir, and a
	// directory of this machine for the others.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gateway", "sandbox", "node", "docker", "docker-scope"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			contracttest.Run(t, contracttest.Host{Name: name, New: bgexec.ContractHost(t, name), Workdir: wd, Listen: contractListener(t, name)})
		})
	}
}

// contractListener is a command of host name that listens on a TCP port:
// busybox's nc in the Docker test image, the system's python3 elsewhere
// (one under /usr, which the sandbox shows, rather than one under a
// home directory, which it hides).
func contractListener(t *testing.T, name string) func(port int) string {
	if strings.HasPrefix(name, "docker") {
		return func(port int) string { return fmt.Sprintf("echo listening; exec nc -l -p %d", port) }
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is needed for the listening-port test: %v", err)
		}
		return nil // the test skips
	}
	return func(port int) string {
		return fmt.Sprintf(`%s -c 'import socket, time; s = socket.socket(); s.bind(("127.0.0.1", %d)); s.listen(); print("listening", flush=True); time.sleep(600)'`, py, port)
	}
}
