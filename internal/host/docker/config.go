package dockerhost

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Config says which Docker daemon runs the sessions and how their
// containers are made. The zero value is not usable: Image is required.
// [New] copies it and never writes back into it.
type Config struct {
	// Daemon is the daemon's address in DOCKER_HOST form
	// ("unix:///run/docker.sock", "tcp://host:2375"); "" means
	// DefaultDaemon.
	Daemon string
	// Image is the image every session's container runs (required). It
	// must already be on the daemon: the host never pulls. It needs
	// /bin/sh (or Shell) with the kill builtin.
	Image string
	// Shell runs each command as [Shell, "-c", command]; "" means "/bin/sh".
	Shell string
	// Mounts are the paths of this machine the containers see. The
	// working directory of a command must lie inside one of them; the
	// first one's Target is the default working directory. None means the
	// container sees no path of this machine, and commands start in the
	// image's working directory.
	Mounts []Mount
	// Network gives the containers the daemon's default network; false
	// (the default) gives them none (only loopback).
	Network bool
	// User is the user (and group) the commands run as, in Docker's
	// "name", "uid" or "uid:gid" form; "" means the image's user.
	User string
	// MemoryBytes caps each session's container memory, in bytes (swap
	// included); 0 means no cap. When a process of the session is killed
	// for it, the session ends with the reason "oom".
	MemoryBytes int64
	// Pids caps the number of processes of each session's container; 0
	// means no cap.
	Pids int64
	// CPUs caps each session's container CPU time, in CPUs (1.5 is one
	// and a half cores); 0 means no cap.
	CPUs float64
	// PerScope runs the sessions of one scope in one container (see
	// [Host.ForScope]), made at the scope's first session and kept until
	// Close: files a command leaves outside the mounts are there for the
	// scope's next session. The caps above are then the scope's, shared
	// by its sessions, and the spare is not made. False (the default)
	// gives each session a container of its own.
	PerScope bool
	// NoSpare turns off the spare container: by default the host keeps
	// one started container ready for the next session, made in the
	// background after each Start, so a session does not wait for a
	// container to be created.
	NoSpare bool
	// APITimeout bounds each call to the daemon that is not bound by the
	// caller's context (signals, inspections, removals); 0 means
	// DefaultAPITimeout.
	APITimeout time.Duration
}

// Mount is one path of this machine bind-mounted into the containers.
type Mount struct {
	// Source is the absolute path on this machine (the daemon's machine,
	// when the daemon is remote).
	Source string
	// Target is the absolute path inside the container; "" means Source.
	Target string
	// ReadOnly mounts it read-only.
	ReadOnly bool
}

// Defaults of [Config].
const (
	DefaultDaemon     = "unix:///var/run/docker.sock"
	DefaultShell      = "/bin/sh"
	DefaultAPITimeout = 30 * time.Second
)

// normalize returns a copy of c with its defaults filled in, or an error
// that says what to fix.
func (c Config) normalize() (Config, error) {
	if strings.TrimSpace(c.Image) == "" {
		return c, errors.New("docker host: Image is empty; name an image that is on the daemon")
	}
	if c.Daemon == "" {
		c.Daemon = DefaultDaemon
	}
	if c.Shell == "" {
		c.Shell = DefaultShell
	}
	if c.APITimeout <= 0 {
		c.APITimeout = DefaultAPITimeout
	}
	if c.MemoryBytes < 0 || c.Pids < 0 || c.CPUs < 0 {
		return c, errors.New("docker host: MemoryBytes, Pids and CPUs must not be negative")
	}
	if c.MemoryBytes > 0 && c.MemoryBytes < 6<<20 {
		return c, fmt.Errorf("docker host: MemoryBytes %d is below Docker's minimum of 6 MiB", c.MemoryBytes)
	}
	mounts := make([]Mount, 0, len(c.Mounts))
	for _, m := range c.Mounts {
		if m.Target == "" {
			m.Target = m.Source
		}
		if !filepath.IsAbs(m.Source) || !filepath.IsAbs(m.Target) {
			return c, fmt.Errorf("docker host: mount %q -> %q: both paths must be absolute", m.Source, m.Target)
		}
		if strings.ContainsAny(m.Source+m.Target, ":,") {
			return c, fmt.Errorf("docker host: mount %q -> %q: paths must not contain ':' or ','", m.Source, m.Target)
		}
		m.Source, m.Target = filepath.Clean(m.Source), filepath.Clean(m.Target)
		mounts = append(mounts, m)
	}
	c.Mounts = mounts
	return c, nil
}

// containerDir maps a working directory of this machine to the container:
// the path under the mount whose Source holds it (the longest such
// Source). "" maps to the first mount's Target, or to "" (the image's
// directory) without mounts. ok is false when no mount holds dir.
func (c *Config) containerDir(dir string) (string, bool) {
	if dir == "" {
		if len(c.Mounts) == 0 {
			return "", true
		}
		return c.Mounts[0].Target, true
	}
	if !filepath.IsAbs(dir) {
		return "", false
	}
	dir = filepath.Clean(dir)
	best := -1
	for i, m := range c.Mounts {
		if within(dir, m.Source) && (best < 0 || len(m.Source) > len(c.Mounts[best].Source)) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	m := c.Mounts[best]
	rel, err := filepath.Rel(m.Source, dir)
	if err != nil {
		return "", false
	}
	return filepath.Join(m.Target, rel), true
}

// within reports whether path is dir or lies below it (both clean).
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}
