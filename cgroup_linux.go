//go:build linux

package bgexec

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Containment says how sessions are contained (see [Config.Containment]).
type Containment int

const (
	// ContainmentAuto runs each session in its own cgroup v2 child cgroup when
	// this process may create one, and falls back to the process group.
	ContainmentAuto Containment = iota
	// ContainmentOff uses the process group only.
	ContainmentOff
	// ContainmentRequired refuses to start (NewRegistry fails) without cgroups.
	ContainmentRequired
)

// cgroupRoot is the registry's own cgroup directory; every session gets a
// child directory below it. Killing through cgroup.kill reaches processes
// that left the process group (setsid, setpgid, double forks).
type cgroupRoot struct {
	dir string
}

// findCgroup2Dir returns the directory of this process's cgroup in the
// cgroup v2 hierarchy, from /proc/self/cgroup and /proc/self/mountinfo. The
// hierarchy may be mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified
// (hybrid systems).
func findCgroup2Dir() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	var rel string
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
		}
	}
	if !found {
		return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) || fields[sep+1] != "cgroup2" || len(fields) < 5 {
			continue
		}
		root, mnt := fields[3], fields[4]
		sub, err := filepath.Rel(root, rel)
		if err != nil || strings.HasPrefix(sub, "..") {
			continue
		}
		return filepath.Join(mnt, sub), nil
	}
	return "", errors.New("no cgroup2 mount in /proc/self/mountinfo")
}

// newCgroupRoot creates this registry's cgroup, or reports why it cannot.
func newCgroupRoot() (*cgroupRoot, error) {
	base, err := findCgroup2Dir()
	if err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	dir := filepath.Join(base, fmt.Sprintf("bgexec-%d-%s", os.Getpid(), hex.EncodeToString(b[:])))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = os.Remove(dir)
		return nil, errors.New("cgroup.kill is not available (Linux 5.14+ needed)")
	}
	return &cgroupRoot{dir: dir}, nil
}

// sessionCgroup is one session's cgroup.
type sessionCgroup struct {
	dir string
	fd  int // O_PATH|O_DIRECTORY descriptor for clone3's CLONE_INTO_CGROUP
}

func (r *cgroupRoot) newSession() (*sessionCgroup, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	dir := filepath.Join(r.dir, "s-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	return &sessionCgroup{dir: dir, fd: fd}, nil
}

// kill SIGKILLs every process in the cgroup, wherever its process group.
func (c *sessionCgroup) kill() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

// signal sends sig to every process in the cgroup.
func (c *sessionCgroup) signal(sig unix.Signal) {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = unix.Kill(pid, sig)
		}
	}
}

// populated reports whether any process is still in the cgroup.
func (c *sessionCgroup) populated() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	if err != nil {
		return false
	}
	return strings.Contains(string(b), "populated 1")
}

// remove kills what is left, waits (bounded) for the cgroup to empty and
// deletes it. The wait is event-driven: cgroup.events signals POLLPRI when
// "populated" changes.
func (c *sessionCgroup) remove(bound time.Duration) error {
	defer unix.Close(c.fd)
	if c.populated() {
		_ = c.kill()
		ev, err := unix.Open(filepath.Join(c.dir, "cgroup.events"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			deadline := time.Now().Add(bound)
			for c.populated() {
				left := time.Until(deadline)
				if left <= 0 {
					break
				}
				fds := []unix.PollFd{{Fd: int32(ev), Events: unix.POLLPRI}}
				_, _ = unix.Poll(fds, int(left/time.Millisecond)+1)
			}
			_ = unix.Close(ev)
		}
	}
	return os.Remove(c.dir)
}

func (r *cgroupRoot) remove() error { return os.Remove(r.dir) }
