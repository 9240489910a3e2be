package bgexec

import (
	"testing"

	dockerhost "github.com/bgexec/bgexec/internal/host/docker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDockerHostConfig(t *testing.T) {
	t.Run("no mounts means the workspace read-write and nothing else", func(t *testing.T) {
		d := Docker{Image: "img", MemoryBytes: 64 << 20, Pids: 100, CPUs: 1.5}
		c := d.hostConfig("/srv/ws")
		assert.Equal(t, []dockerhost.Mount{{Source: "/srv/ws", Target: "/srv/ws"}}, c.Mounts)
		assert.Equal(t, "img", c.Image)
		assert.Equal(t, int64(64<<20), c.MemoryBytes)
		assert.Equal(t, int64(100), c.Pids)
		assert.Equal(t, 1.5, c.CPUs)
		assert.False(t, c.Network)
	})
	t.Run("named mounts replace the workspace and are copied", func(t *testing.T) {
		d := Docker{Image: "img", Mounts: []DockerMount{{Source: "/a", Target: "/b", ReadOnly: true}}}
		c := d.hostConfig("/srv/ws")
		assert.Equal(t, []dockerhost.Mount{{Source: "/a", Target: "/b", ReadOnly: true}}, c.Mounts)
		d.Mounts[0].Source = "/changed"
		assert.Equal(t, "/a", c.Mounts[0].Source)
	})
	t.Run("an empty list mounts nothing", func(t *testing.T) {
		d := Docker{Image: "img", Mounts: []DockerMount{}}
		assert.Empty(t, d.hostConfig("/srv/ws").Mounts)
	})
}

// With PerScope, an agent's commands share its container, and another
// agent's do not see it.
func TestDockerPerScopeThroughTheTools(t *testing.T) {
	t.Parallel()
	reg := ContractHost(t, "docker-scope")(t)
	a, b := reg.Scope("agent:a"), reg.Scope("agent:b")
	res := mustExec(t, a, &ExecRequest{Command: "echo mine >/tmp/note"})
	require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
	assert.Equal(t, "mine", mustExec(t, a, &ExecRequest{Command: "cat /tmp/note"}).Text(), "the agent's next command sees its file")
	assert.Equal(t, "none", mustExec(t, b, &ExecRequest{Command: "cat /tmp/note 2>/dev/null || echo none"}).Text(), "another agent's container does not have it")
}
