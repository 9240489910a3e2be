//go:build linux

package bgexec

import (
	"os"
	"testing"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/host/local"
	"github.com/bgexec/bgexec/internal/host/sandbox"
	"github.com/bgexec/bgexec/internal/session"
)

// The engine's read and pipe sizes, so raw baselines do the same work.
const (
	readChunk   = session.ReadChunk
	defaultPipe = session.DefaultPipe
	busyPipe    = session.BusyPipe
)

// setSandboxHook makes reg's sandboxed spawns call h at each stage
// (sandboxStageChecked, sandboxStageOpened), on the thread that forks
// bwrap. Set it before the call it is meant for.
func setSandboxHook(reg *Registry, h func(stage string)) {
	reg.cfg.sandbox.SetTestHook(h)
}

// The stages setSandboxHook's hook runs at.
const (
	sandboxStageChecked = sandbox.StageChecked
	sandboxStageOpened  = sandbox.StageOpened
)

// setHost makes h run every command of reg: the gateway's, and the
// sandbox's when reg has one. Set it before the first exec.
func setHost(reg *Registry, h host.Host) {
	reg.hosts.gateway = h
	if reg.hosts.sandbox != nil {
		reg.hosts.sandbox = h
	}
}

// The gateway host's command-line limit, and its shell-state prologue
// and bound.
const (
	maxArgCommand = local.MaxArgCommand
	statePrologue = local.StatePrologue
	stateMaxBytes = local.StateMaxBytes
)

// cgroupRoot is reg's cgroup, nil without cgroup containment.
func cgroupRoot(reg *Registry) *contain.Root { return reg.hosts.machine.Cgroups() }

// limiterOf is what applies reg's limits.
func limiterOf(reg *Registry) *contain.Limiter { return reg.hosts.machine.Limiter() }

// watchdogOf is reg's watchdog.
func watchdogOf(reg *Registry) *contain.Watchdog { return reg.hosts.machine.Watchdog() }

// cgroupOf is the cgroup of a gateway or sandbox session, nil without one.
func cgroupOf(s *session.Session) *contain.Cgroup {
	c, ok := s.Process().(interface{ Cgroup() *contain.Cgroup })
	if !ok {
		return nil
	}
	return c.Cgroup()
}

// pidfdOf is the pidfd a gateway or sandbox session waits on, nil
// without one.
func pidfdOf(s *session.Session) *os.File {
	c, ok := s.Process().(interface{ PidFD() *os.File })
	if !ok {
		return nil
	}
	return c.PidFD()
}

// ContractHost returns how contract_hosts_test.go builds a registry on
// host name ("gateway", "sandbox", "node", "docker" or "docker-scope", the
// Docker host with a container per scope); a node's sshd is started once,
// for t.
func ContractHost(t *testing.T, name string) func(*testing.T) *Registry {
	switch name {
	case "gateway":
		return func(t *testing.T) *Registry { return newGatewayRegistry(t, Config{}) }
	case "sandbox":
		requireBwrap(t)
		return func(t *testing.T) *Registry { return newSandboxRegistry(t, Config{}, Sandbox{}) }
	case "node":
		d := startSSHD(t)
		return func(t *testing.T) *Registry { return nodeRegistry(t, d, Config{}, nil) }
	case "docker", "docker-scope":
		// .ci/dockerd starts a private daemon and exports these.
		daemon, image := os.Getenv("BGEXEC_TEST_DOCKER_HOST"), os.Getenv("BGEXEC_TEST_DOCKER_IMAGE")
		if daemon == "" || image == "" {
			if os.Getenv("CI") == "true" {
				t.Fatal("BGEXEC_TEST_DOCKER_HOST and BGEXEC_TEST_DOCKER_IMAGE are unset: run .ci/dockerd start (CI must test the Docker host)")
			}
			t.Skip("no test Docker daemon: eval \"$(BGEXEC_DOCKERD_OWNER=$$ .ci/dockerd start)\" to test the Docker host")
		}
		return func(t *testing.T) *Registry {
			return newTestRegistry(t, Config{Host: "docker", Docker: &Docker{Host: daemon, Image: image, PerScope: name == "docker-scope"}})
		}
	}
	t.Fatalf("no contract host %q", name)
	return nil
}
