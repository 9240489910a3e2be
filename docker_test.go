package bgexec

import (
	"testing"

	dockerhost "github.com/bgexec/bgexec/internal/host/docker"
	"github.com/stretchr/testify/assert"
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
