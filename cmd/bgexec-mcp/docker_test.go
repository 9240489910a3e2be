package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bgexec/bgexec"
	cerrdefs "github.com/containerd/errdefs"
	dockerclient "github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigDocker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeConfig(t, `{
  "workdir": "`+dir+`",
  "docker": {
    "host": "unix:///run/other.sock",
    "image": "busybox:1.36",
    "shell": "/bin/ash",
    "network": true,
    "user": "1000:1000",
    "memoryBytes": 268435456,
    "pids": 128,
    "cpus": 1.5,
    "noSpare": true,
    "perScope": true,
    "mounts": [{"source": "`+dir+`"}, {"source": "/srv/cache", "target": "/cache", "readOnly": true}]
  }
}`)
	st, err := parseConfig([]string{"-config", file}, io.Discard, noEnv)
	require.NoError(t, err)
	want := &bgexec.Docker{
		Host: "unix:///run/other.sock", Image: "busybox:1.36", Shell: "/bin/ash", Network: true, User: "1000:1000",
		MemoryBytes: 256 << 20, Pids: 128, CPUs: 1.5, NoSpare: true, PerScope: true,
		Mounts: []bgexec.DockerMount{{Source: dir}, {Source: "/srv/cache", Target: "/cache", ReadOnly: true}},
	}
	assert.Equal(t, want, st.opts.cfg.Docker)
	assert.Equal(t, dir, st.opts.cfg.Workdir)

	t.Run("flags override the file's docker keys", func(t *testing.T) {
		st, err := parseConfig([]string{"-config", file, "-docker-host", "tcp://10.0.0.7:2375", "-docker-image", "alpine:3", "-docker-network=false",
			"-docker-user", "nobody", "-docker-memory-bytes", "0", "-docker-pids", "64", "-docker-cpus", "0.5", "-host", "docker"}, io.Discard, noEnv)
		require.NoError(t, err)
		d := st.opts.cfg.Docker
		require.NotNil(t, d)
		assert.Equal(t, "tcp://10.0.0.7:2375", d.Host)
		assert.Equal(t, "alpine:3", d.Image)
		assert.False(t, d.Network)
		assert.Equal(t, "nobody", d.User)
		assert.Zero(t, d.MemoryBytes)
		assert.Equal(t, int64(64), d.Pids)
		assert.InDelta(t, 0.5, d.CPUs, 0)
		assert.Equal(t, "/bin/ash", d.Shell, "a key without its flag keeps the file's value")
		assert.Equal(t, "docker", st.opts.cfg.Host)
	})

	t.Run("no docker keys, no Docker host", func(t *testing.T) {
		st, err := parseConfig(nil, io.Discard, noEnv)
		require.NoError(t, err)
		assert.Nil(t, st.opts.cfg.Docker)
		assert.Empty(t, st.opts.cfg.Workdir, "the gateway keeps the client's root as the default workdir")
	})

	t.Run("without workdir the server's directory is the workdir, mounted", func(t *testing.T) {
		wd, err := os.Getwd()
		require.NoError(t, err)
		st, err := parseConfig([]string{"-docker-image", "busybox"}, io.Discard, noEnv)
		require.NoError(t, err)
		require.NotNil(t, st.opts.cfg.Docker)
		assert.Equal(t, wd, st.opts.cfg.Workdir, "the container's mount is fixed before a client names its roots")
		assert.Nil(t, st.opts.cfg.Docker.Mounts, "nil mounts: bgexec mounts the workdir read-write")
		assert.Empty(t, st.opts.cfg.Docker.Host, "bgexec's default daemon")
	})
}

func TestConfigDockerErrorsSayWhatToFix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file string
		args       []string
		want       string
	}{
		{name: "host docker without an image", args: []string{"-host", "docker"}, want: "key docker.image (flag -docker-image): host docker needs an image"},
		{name: "docker keys without an image", args: []string{"-docker-network"}, want: "key docker.image (flag -docker-image): the Docker host's keys are set but no image is"},
		{name: "mounts without an image", file: `{"docker": {"mounts": [{"source": "/srv"}]}}`, want: "key docker.image (flag -docker-image)"},
		{name: "an address not in DOCKER_HOST form", args: []string{"-docker-image", "busybox", "-docker-host", "/run/docker.sock"}, want: `key docker.host (flag -docker-host): "/run/docker.sock" is not a daemon address such as unix:///var/run/docker.sock`},
		{name: "an unknown scheme", args: []string{"-docker-image", "busybox", "-docker-host", "ftp://host"}, want: "key docker.host (flag -docker-host)"},
		{name: "a memory cap below Docker's minimum", args: []string{"-docker-image", "busybox", "-docker-memory-bytes", "1048576"}, want: "key docker.memoryBytes (flag -docker-memory-bytes): must be 0 (no cap) or at least 6291456"},
		{name: "a negative memory cap", file: `{"docker": {"image": "busybox", "memoryBytes": -1}}`, want: "key docker.memoryBytes (flag -docker-memory-bytes): must not be negative"},
		{name: "a negative process cap", args: []string{"-docker-image", "busybox", "-docker-pids", "-1"}, want: "key docker.pids (flag -docker-pids): must not be negative"},
		{name: "a negative CPU cap", args: []string{"-docker-image", "busybox", "-docker-cpus", "-2"}, want: "key docker.cpus (flag -docker-cpus): must not be negative"},
		{name: "a relative mount source", file: `{"docker": {"image": "busybox", "mounts": [{"source": "src"}]}}`, want: `key docker.mounts[0]: source "src" and target "" must be absolute paths`},
		{name: "a relative mount target", file: `{"docker": {"image": "busybox", "mounts": [{"source": "/srv", "target": "srv"}]}}`, want: "key docker.mounts[0]"},
		{name: "a workdir outside the mounts", file: `{"workdir": "` + dir + `", "docker": {"image": "busybox", "mounts": [{"source": "/srv/elsewhere"}]}}`, want: `key workdir (flag -workdir): "` + dir + `" is not inside any source of docker.mounts`},
		{name: "an unknown docker key", file: `{"docker": {"image": "busybox", "privileged": true}}`, want: `unknown key "privileged"`},
		{name: "a wrong docker type", file: `{"docker": {"image": "busybox", "cpus": "two"}}`, want: `key "docker.cpus": a JSON string is not a float64`},
		{name: "host docker beside the bubblewrap sandbox", args: []string{"-sandbox", "-docker-image", "busybox", "-host", "docker"}, want: "contradicts Config.Sandbox"},
		{name: "a bad host", args: []string{"-host", "pod"}, want: `key host (flag -host): "pod" is not one of auto, gateway, sandbox, node, docker`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.name, "sandbox") {
				needTool(t, "bwrap") // bgexec checks the sandbox before the hosts agree
			}
			args := tc.args
			if tc.file != "" {
				args = append([]string{"-config", writeConfig(t, tc.file)}, args...)
			}
			_, err := parseConfig(args, io.Discard, noEnv)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// testDockerDaemon returns the private daemon .ci/dockerd started and its
// test image; it skips outside CI when there is none, and fails under CI.
func testDockerDaemon(t *testing.T) (daemon, image string) {
	t.Helper()
	daemon, image = os.Getenv("BGEXEC_TEST_DOCKER_HOST"), os.Getenv("BGEXEC_TEST_DOCKER_IMAGE")
	if daemon == "" || image == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("BGEXEC_TEST_DOCKER_HOST and BGEXEC_TEST_DOCKER_IMAGE are unset: run .ci/dockerd start (CI must test the Docker host)")
		}
		t.Skip("no test Docker daemon: eval \"$(BGEXEC_DOCKERD_OWNER=$$ .ci/dockerd start)\" to test the Docker host")
	}
	return daemon, image
}

// TestServeDocker runs the server binary with the Docker host from its
// flags: a command runs in a container of the image (its own hostname,
// no network but loopback), writes to the workdir through the mount, and
// its container is gone once the MCP session ends.
func TestServeDocker(t *testing.T) {
	t.Parallel()
	daemon, image := testDockerDaemon(t)
	bin := buildServer(t)
	dir := t.TempDir()
	c := connect(t, bin, "-docker-host", daemon, "-docker-image", image, "-workdir", dir)

	// The session stays running while its container is inspected: a
	// finished session's container is removed as it ends, which raced
	// with the inspection.
	res := c.call(t, "exec", map[string]any{"command": "echo made inside > mark && hostname && ls /sys/class/net && echo ready && exec sleep 1000", "background": true})
	d := detailsOf(t, res)
	require.Equal(t, bgexec.StatusRunning, d.Status, textOf(t, res))
	res = c.call(t, "process", map[string]any{"action": "wait", "sessionId": d.SessionID, "pattern": "^ready$", "timeout": 20000})
	require.Equal(t, "pattern", detailsOf(t, res).Condition, textOf(t, res))
	res = c.call(t, "process", map[string]any{"action": "log", "sessionId": d.SessionID})
	lines := strings.Fields(textOf(t, res))
	require.GreaterOrEqual(t, len(lines), 3, "the hostname, then the network interfaces, then ready: %q", textOf(t, res))
	cid := lines[0]
	assert.Equal(t, []string{"lo", "ready"}, lines[1:3], "network is off by default: loopback only")
	b, err := os.ReadFile(filepath.Join(dir, "mark"))
	require.NoError(t, err, "the workdir is mounted read-write")
	assert.Equal(t, "made inside\n", string(b))

	api, err := dockerclient.New(dockerclient.WithHost(daemon))
	require.NoError(t, err)
	defer api.Close()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	in, err := api.ContainerInspect(ctx, cid, dockerclient.ContainerInspectOptions{})
	require.NoError(t, err, "the command's hostname %q names its container on the daemon", cid)
	assert.Equal(t, image, in.Container.Config.Image)
	c.call(t, "process", map[string]any{"action": "kill", "sessionId": d.SessionID})

	res = c.call(t, "exec", map[string]any{"command": "exit 3"})
	assert.Equal(t, 3, *detailsOf(t, res).ExitCode, textOf(t, res))

	require.NoError(t, c.cs.Close()) // the server's registry closes with the session
	_, err = api.ContainerInspect(ctx, cid, dockerclient.ContainerInspectOptions{})
	assert.True(t, cerrdefs.IsNotFound(err), "the container is removed once the session ended: %v", err)
}
