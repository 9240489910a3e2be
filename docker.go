package bgexec

import (
	"time"

	dockerhost "github.com/bgexec/bgexec/internal/host/docker"
)

// Docker is a Docker daemon that runs each command in a container of its
// own, for the host "docker". The container is made from Image when the
// session starts (a spare one is kept ready), sees only the Mounts of this
// machine, and is removed with everything in it when the session ends, so
// kill, timeout and Close reach every process the command started. A
// Docker is a plain value: it is copied and never written back into.
//
// Set Config.Docker to use it: Host "docker" runs every exec there, and
// so do "auto" and "sandbox" when no bubblewrap Sandbox is configured. An
// elevated call, when allowed, runs on this machine.
type Docker struct {
	// Host is the daemon's address in DOCKER_HOST form
	// ("unix:///run/docker.sock", "tcp://host:2375"). Empty means
	// unix:///var/run/docker.sock.
	Host string
	// Image is the image the containers run. Required; it must already be
	// on the daemon (it is never pulled) and have /bin/sh, or Shell.
	Image string
	// Shell runs each command as [Shell, "-c", command]. Empty means
	// /bin/sh.
	Shell string
	// Mounts are the paths of this machine the containers see; a
	// command's workdir must lie inside one of them. Nil means the
	// workspace (Config.Workdir, else the process's working directory)
	// read-write at the same path, and nothing else.
	Mounts []DockerMount
	// Network gives the containers the daemon's default network. False
	// (the default) gives them none but loopback.
	Network bool
	// User is who the commands run as, in Docker's "name", "uid" or
	// "uid:gid" form. Empty means the image's user.
	User string
	// MemoryBytes caps each session's memory, swap included, in bytes; a
	// session the cap ends is "oom". Zero means no cap; otherwise at least
	// 6 MiB.
	MemoryBytes int64
	// Pids caps each session's processes. Zero means no cap.
	Pids int64
	// CPUs caps each session's CPU time in CPUs (1.5 is one and a half
	// cores). Zero means no cap.
	CPUs float64
	// PerScope runs the sessions of one scope (one agent) in one
	// container, made at the scope's first session and kept until Close,
	// so files a command leaves outside the mounts are there for the
	// scope's next command. The caps above are then the scope's, and no
	// spare is kept. Each session's processes carry a tag in their
	// environment (BGEXEC_SESSION), which kill, timeout and the session's
	// end follow; a process that drops it leaves their reach, though not
	// Close's. False (the default) gives each session a container of its
	// own, which nothing leaves.
	PerScope bool
	// NoSpare turns off the container kept ready for the next session.
	NoSpare bool
	// APITimeout bounds each call to the daemon that no exec call bounds
	// (signals, inspections, removals). Zero means 30s.
	APITimeout time.Duration
}

// DockerMount is one path of this machine bind-mounted into the
// containers.
type DockerMount struct {
	// Source is the absolute path on this machine. Required.
	Source string
	// Target is the absolute path in the container. Empty means Source.
	Target string
	// ReadOnly mounts it read-only.
	ReadOnly bool
}

// hostConfig is d as the Docker host takes it; workspace is the
// registry's default working directory, mounted read-write when d names
// no mounts.
func (d *Docker) hostConfig(workspace string) dockerhost.Config {
	c := dockerhost.Config{
		Daemon: d.Host, Image: d.Image, Shell: d.Shell, Network: d.Network, User: d.User,
		MemoryBytes: d.MemoryBytes, Pids: d.Pids, CPUs: d.CPUs, NoSpare: d.NoSpare, PerScope: d.PerScope, APITimeout: d.APITimeout,
	}
	if d.Mounts == nil {
		c.Mounts = []dockerhost.Mount{{Source: workspace, Target: workspace}}
		return c
	}
	c.Mounts = make([]dockerhost.Mount, len(d.Mounts))
	for i, m := range d.Mounts {
		c.Mounts[i] = dockerhost.Mount{Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly}
	}
	return c
}
