package bgexec_test

import (
	"os"
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
	for _, name := range []string{"gateway", "sandbox", "node", "docker"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			contracttest.Run(t, contracttest.Host{Name: name, New: bgexec.ContractHost(t, name), Workdir: wd})
		})
	}
}
