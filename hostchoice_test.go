package bgexec

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHostChoice is how Config.Host resolves against the optional hosts a
// configuration sets.
func TestHostChoice(t *testing.T) {
	t.Parallel()
	none := configuredHosts{}
	bwrap := configuredHosts{sandbox: true}
	docker := configuredHosts{docker: true}
	pods := configuredHosts{kubernetes: true}
	all := configuredHosts{sandbox: true, docker: true, kubernetes: true}
	cases := []struct {
		host string
		set  configuredHosts
		want string // "" when refused
		err  string
	}{
		{"", none, "gateway", ""},
		{"auto", bwrap, "sandbox", ""},
		{"auto", docker, "docker", ""},
		{"auto", pods, "kubernetes", ""},
		{"auto", configuredHosts{docker: true, kubernetes: true}, "docker", ""},
		{"auto", all, "sandbox", ""},
		{"sandbox", docker, "docker", ""},
		{"sandbox", all, "sandbox", ""},
		{"Docker", docker, "docker", ""},
		{"kubernetes", pods, "kubernetes", ""},
		{"gateway", docker, "gateway", ""},
		{"sandbox", none, "", "needs Config.Sandbox"},
		{"docker", none, "", "needs Config.Docker"},
		{"kubernetes", docker, "", "needs Config.Kubernetes"},
		{"docker", all, "", "contradicts Config.Sandbox"},
		{"kubernetes", configuredHosts{sandbox: true, kubernetes: true}, "", "contradicts Config.Sandbox"},
		{"kubernetes", bwrap, "", "needs Config.Kubernetes"},
		{"podman", none, "", "is not one of auto, sandbox, gateway, node, docker, kubernetes"},
	}
	for _, c := range cases {
		got, err := resolveHost(c.host, c.set)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, "host %q with %+v", c.host, c.set)
			continue
		}
		if assert.NoError(t, err, "host %q with %+v", c.host, c.set) {
			assert.Equal(t, c.want, got, "host %q with %+v", c.host, c.set)
		}
	}
}

// TestDockerConfigRefusedAtNewRegistry: a Docker without an image is a
// configuration error that says what to fix, and nothing is left running.
func TestDockerConfigRefusedAtNewRegistry(t *testing.T) {
	t.Parallel()
	_, err := NewRegistry(Config{Host: "docker", Docker: &Docker{Host: "unix:///nonexistent.sock"}})
	assert.ErrorContains(t, err, "Config.Docker")
	assert.ErrorContains(t, err, "mage")
}
