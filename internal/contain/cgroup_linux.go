//go:build linux

package contain

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Root is a registry's own cgroup directory in the cgroup v2 tree; every
// session gets a child directory below it ([Root.NewSession]). Killing
// through cgroup.kill reaches processes that left the process group
// (setsid, setpgid, double forks). Its methods are safe for concurrent
// use; it is made by [NewRoot] only.
type Root struct {
	dir string

	// namespace is set when a gateway session can get a cgroup namespace
	// rooted at its session cgroup (unshare(CLONE_NEWCGROUP) needs
	// CAP_SYS_ADMIN); nsdelegate when the cgroup2 mount treats such a
	// namespace as a boundary the kernel refuses to migrate across.
	namespace  bool
	nsdelegate bool
	shared     sharedNamespaces // this process's and init's, when namespace

	mu     sync.Mutex     // guards spare, dirty and closed
	spare  []*spareCgroup // emptied session cgroups kept for reuse
	dirty  []string       // session cgroups not seen empty or not removed: never reused, retried
	closed bool
}

// Dir is the registry's cgroup directory.
func (r *Root) Dir() string { return r.dir }

// Spares lists the emptied session cgroups kept for reuse (a copy).
func (r *Root) Spares() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	dirs := make([]string, 0, len(r.spare))
	for _, sp := range r.spare {
		dirs = append(dirs, sp.dir)
	}
	return dirs
}

// Dirty lists the session cgroups not seen empty or not removed yet (a
// copy): they are never reused, and RetryDirty kills them again.
func (r *Root) Dirty() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.dirty)
}

// MaxSpares is how many emptied session cgroups a Root keeps for the next
// sessions, which then skip a mkdir and an rmdir each.
const MaxSpares = 4

// takeSpare returns an emptied session cgroup to reuse, or nil.
func (r *Root) takeSpare() *spareCgroup {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.spare)
	if n == 0 {
		return nil
	}
	sp := r.spare[n-1]
	r.spare[n-1] = nil
	r.spare = r.spare[:n-1]
	return sp
}

// keepSpare keeps an emptied session cgroup for reuse, unless enough are
// kept already or the registry is closing; it returns the spare, or nil
// when it did not keep it. Only a cgroup that was never killed may be
// kept (see Cgroup.killed).
func (r *Root) keepSpare(dir string) *spareCgroup {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || len(r.spare) >= MaxSpares {
		return nil
	}
	sp := newSpareCgroup(dir)
	r.spare = append(r.spare, sp)
	return sp
}

// keepDirty records a session cgroup that could not be seen empty (or
// removed), so that it is never reused and RetryDirty kills it again. It is
// a no-op on a nil root.
func (r *Root) keepDirty(dir string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dirty = append(r.dirty, dir)
}

// RetryDirty kills what is left in each dirty session cgroup, waits at most
// bound for each to empty, removes those that did, and reports how many
// are left.
func (r *Root) RetryDirty(bound time.Duration) int {
	r.mu.Lock()
	dirty := r.dirty
	r.dirty = nil
	r.mu.Unlock()
	if len(dirty) == 0 {
		return 0
	}
	var left []string
	for _, dir := range dirty {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			continue // the watchdog removed it
		}
		c := &Cgroup{dir: dir, fd: -1}
		if c.settle(bound) != nil {
			left = append(left, dir)
			continue
		}
		if err := unix.Rmdir(dir); err != nil && err != unix.ENOENT {
			left = append(left, dir)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dirty = append(r.dirty, left...)
	return len(r.dirty)
}

// Cgroup2Dir returns the directory of this process's cgroup in the
// cgroup v2 hierarchy, from /proc/self/cgroup and /proc/self/mountinfo. The
// hierarchy may be mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified
// (hybrid systems).
func Cgroup2Dir() (string, error) {
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
	dir := ""
	err = eachCgroupMount(func(m cgroupMount) bool {
		if m.fstype != "cgroup2" {
			return true
		}
		if sub, ok := m.below(rel); ok {
			dir = filepath.Join(m.point, sub)
			return false
		}
		return true
	})
	if err != nil {
		return "", err
	}
	if dir != "" {
		return dir, nil
	}
	return "", errors.New("no cgroup2 mount in /proc/self/mountinfo")
}

// cgroupMount is one cgroup file system mount of /proc/self/mountinfo.
type cgroupMount struct {
	root, point string // the mount's root in its hierarchy, and where it is mounted
	fstype      string // "cgroup" (v1) or "cgroup2"
	superOpts   string // for v1, the controllers among the options
}

// below returns the path of the cgroup rel (a path in the hierarchy)
// relative to the mount point, if the mount shows it.
func (m cgroupMount) below(rel string) (string, bool) {
	sub, err := filepath.Rel(m.root, rel)
	if err != nil || strings.HasPrefix(sub, "..") {
		return "", false
	}
	return sub, true
}

// eachCgroupMount calls f for every cgroup and cgroup2 mount of this
// process, until f returns false.
func eachCgroupMount(f func(cgroupMount) bool) error {
	file, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 5 || sep+1 >= len(fields) {
			continue
		}
		m := cgroupMount{root: fields[3], point: fields[4], fstype: fields[sep+1]}
		if m.fstype != "cgroup" && m.fstype != "cgroup2" {
			continue
		}
		if sep+3 < len(fields) {
			m.superOpts = fields[sep+3]
		}
		if !f(m) {
			return nil
		}
	}
	return sc.Err()
}

// NewRoot creates a registry's cgroup below this process's cgroup v2
// cgroup, and checks that a shell can be cloned into a session cgroup
// below it, or reports why it cannot.
func NewRoot() (*Root, error) {
	base, err := Cgroup2Dir()
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
	r := &Root{dir: dir, nsdelegate: cgroup2NSDelegate()}
	if err := r.probe(); err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	return r, nil
}

// probe clones one short shell into a session cgroup, as every session
// will be. Some kernels (6.18 among them) compare the kill counter of the
// forking process's cgroup with the target's at clone time and SIGKILL the
// child when they differ, which is the case for every session when the
// host's own cgroup was killed once before (a service restarted in a
// reused cgroup). Containment cannot work there.
func (r *Root) probe() error {
	cg, err := r.NewSession()
	if err != nil {
		return fmt.Errorf("create session cgroup: %w", err)
	}
	defer func() {
		cg.CloseFD()
		_ = unix.Rmdir(cg.dir)
	}()
	run := func(unshare uintptr) error {
		cmd := exec.Command("/bin/sh", "-c", "exit 0")
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: cg.fd, Unshareflags: unshare}
		return cmd.Run()
	}
	err = run(unix.CLONE_NEWCGROUP)
	if err == nil {
		r.namespace = true
		r.shared = readSharedNamespaces()
		return nil
	}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) {
		err = run(0) // no CAP_SYS_ADMIN, or no cgroup namespaces: contain without
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		return errors.New("the kernel SIGKILLs children cloned into a new cgroup (the host's cgroup was killed before, and this kernel compares kill counters at clone)")
	default:
		return fmt.Errorf("clone a shell into a new cgroup: %w", err)
	}
}

// Cgroup is one session's cgroup, with its share of the limits and its
// cgroup namespace. Safe for concurrent use once the session started.
type Cgroup struct {
	root *Root
	dir  string
	fd   int // O_PATH|O_DIRECTORY descriptor for clone3's CLONE_INTO_CGROUP

	// emptied is set once the cgroup was seen empty after its leader
	// exited. Nothing can enter it after that (no member is left to fork),
	// so it stays empty and needs neither a kill nor another look.
	emptied atomic.Bool

	// reused is set when the cgroup is a spare: its counters start where
	// the last session left them, and prep holds what that spare had
	// prepared (nil when it was taken before), for Attach to take over.
	// kept is the spare this session's cgroup became (Remove), which
	// PrepareSpare prepares. lim is the session's share of the registry's
	// limits (see Limiter); nil without limits.
	reused bool
	prep   *cgroupPrep
	kept   *spareCgroup
	lim    *sessionLimits

	// killed is set once cgroup.kill was written. Such a cgroup is never
	// reused: on some kernels (6.18 here) a child cloned into a cgroup
	// that was killed before is SIGKILLed at birth, because the kill
	// counter is compared with the forking process's cgroup.
	killed atomic.Bool
	// killSent is set once a write to cgroup.kill succeeded (see Dying).
	killSent atomic.Bool

	// ns is the session's cgroup namespace (nil without one): every
	// process of the session is in it, even one that moved to another
	// cgroup, until it unshares or enters another (CAP_SYS_ADMIN).
	// keepNS: Remove leaves it held (KeepNamespace).
	ns     *namespace
	keepNS bool
}

// NewSession returns an empty cgroup for one session: a spare one if there
// is, else a new one.
func (r *Root) NewSession() (*Cgroup, error) {
	c := &Cgroup{root: r, fd: -1}
	if from := r.takeSpare(); from != nil {
		c.dir, c.reused = from.dir, true
		if p, ok := from.prep.take(); ok {
			c.prep = p
			c.fd, c.prep.dirFD = c.prep.dirFD, -1
		}
	} else {
		var b [6]byte
		_, _ = rand.Read(b[:])
		c.dir = filepath.Join(r.dir, "s-"+hex.EncodeToString(b[:]))
		if err := unix.Mkdir(c.dir, 0o755); err != nil {
			return nil, &os.PathError{Op: "mkdir", Path: c.dir, Err: err}
		}
	}
	if c.fd < 0 {
		fd, err := unix.Open(c.dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			if c.prep != nil {
				c.prep.close()
			}
			_ = unix.Rmdir(c.dir)
			return nil, &os.PathError{Op: "open", Path: c.dir, Err: err}
		}
		c.fd = fd
	}
	return c, nil
}

// CloseFD closes the directory descriptor, which only the clone into the
// cgroup needs; it is safe to call more than once.
func (c *Cgroup) CloseFD() {
	if c.fd >= 0 {
		_ = unix.Close(c.fd)
		c.fd = -1
	}
	if c.prep != nil { // no Attach took it over
		c.prep.close()
		c.prep = nil
	}
}

// Dir is the session's cgroup directory.
func (c *Cgroup) Dir() string { return c.dir }

// FD is the cgroup directory's descriptor, for clone3's
// CLONE_INTO_CGROUP (SysProcAttr.CgroupFD); -1 after CloseFD.
func (c *Cgroup) FD() int { return c.fd }

// Killed reports whether cgroup.kill was written (the cgroup is then
// never reused).
func (c *Cgroup) Killed() bool { return c.killed.Load() }

// UnshareNamespace reports whether a gateway session started in c should
// unshare a cgroup namespace (CLONE_NEWCGROUP) after its clone into c:
// [NewRoot] found that this host can.
func (c *Cgroup) UnshareNamespace() bool { return c.root != nil && c.root.namespace }

// OpenNamespace holds the cgroup namespace of a session just started with
// one (leader is its shell, pidfd the leader's pidfd or -1), so that its
// processes are found, and killed by [Cgroup.KillNamespace], wherever
// their cgroup. It takes the namespace through the pidfd where the kernel
// can (Linux 6.11), else through /proc/<leader>/ns/cgroup, which costs
// about three times as much for a process just started, whose /proc
// entries are not looked up yet. It holds none when
// the session entered the host's own namespace or init's, or when nothing
// of it runs any more.
//
// Nor when the cgroup2 mount has nsdelegate: the kernel then refuses to
// move a process of the session across its namespace's root, the session's
// cgroup, so every process of the namespace stays in the cgroup, where
// the cgroup's kill reaches it, and looking for them costs a scan of every
// process on the host at each session's end for nothing. The one way out
// is the same with or without the scan: entering another cgroup namespace
// first (setns or unshare, CAP_SYS_ADMIN), after which the scan would not
// find the process either. A process outside the session, one not in its
// namespace, may still move a session's process: systemd moves the
// command of a `systemd-run --scope` into a scope of its own. The scan
// would have found that one; it finds none of what such a process starts
// for the session instead (`systemd-run --unit`), and the session's
// process-group kill still reaches the moved process unless it also left
// the group (setsid).
func (c *Cgroup) OpenNamespace(leader, pidfd int) {
	if c.root != nil && c.root.nsdelegate {
		return
	}
	c.ns = sessionNamespace(leader, pidfd, c)
}

// Namespaced reports whether OpenNamespace holds a namespace for c.
// Nil-safe.
func (c *Cgroup) Namespaced() bool { return c != nil && c.ns != nil }

// KeepNamespace makes [Cgroup.Remove] leave the namespace held, for a
// sweep after the cgroup is removed or kept as a spare: KillNamespace,
// then ReleaseNamespace. The namespace's number cannot name another
// namespace until then.
func (c *Cgroup) KeepNamespace() { c.keepNS = true }

// ReleaseNamespace lets go of the namespace OpenNamespace holds, if any;
// it is safe to call more than once. KillNamespace then finds nothing.
func (c *Cgroup) ReleaseNamespace() {
	c.ns.close()
	c.ns = nil
}

// KillNamespace SIGKILLs every process of the session's cgroup namespace
// (see [Cgroup.OpenNamespace]), wherever its cgroup, and looks again until
// none is left; nil without a namespace. An error means some may still
// run.
func (c *Cgroup) KillNamespace() error {
	if c.ns == nil {
		return nil
	}
	return c.ns.kill()
}

// Every reader and writer of a cgroup file below fails closed: a cgroup is
// empty only once cgroup.events was read and said so. When a file cannot
// be opened, read or written (no free descriptor, say), the cgroup counts
// as populated, so a kill escalates rather than stops, the end of the
// session is not reported as certain, and the cgroup is never reused.

// kill SIGKILLs every process in the cgroup, wherever its process group.
func (c *Cgroup) kill() error {
	c.killed.Store(true)
	path := c.dir + "/cgroup.kill"
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte("1")); err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	c.killSent.Store(true)
	return nil
}

// Dying reports whether nothing of the cgroup can run any more, though it
// is not empty yet: a cgroup.kill was written (every process in the
// cgroup had SIGKILL then, and the kernel kills one cloned into it after
// that at birth, or fails the clone), and each process it lists is a
// zombie or a single thread already in its exit. A pid namespace's init
// is such a process while it tears its namespaces down (a sandbox's
// mounts), which can take milliseconds before the cgroup is empty: the
// session's end can be reported then, and the cgroup removed after. It
// reports false when it cannot tell.
func (c *Cgroup) Dying() bool {
	if !c.killSent.Load() {
		return false
	}
	pids, err := c.Procs()
	if err != nil {
		return false
	}
	for _, pid := range pids {
		st, err := ReadStat(pid)
		switch {
		case err != nil && !Gone(err):
			return false
		case err == nil && st.Live():
			return false
		}
	}
	return true
}

// EmptyAfterExit reports whether the cgroup is empty, and records it as
// emptied if so: KillLeft and Remove then need not look again. It is
// meant for after the session's leader exited (while the leader lives the
// cgroup holds it), when nothing can enter an empty cgroup any more but a
// stranger's migration. It reports false when it cannot tell.
func (c *Cgroup) EmptyAfterExit() bool {
	if c.emptied.Load() {
		return true
	}
	if pop, err := c.Populated(); err == nil && !pop {
		c.emptied.Store(true)
		return true
	}
	return false
}

// KillLeft SIGKILLs every process in the cgroup unless it was seen empty.
// It looks at cgroup.events first: when the leader has exited, usually
// nothing is left, and the look costs less than a kill. A cgroup it cannot
// look at is killed.
func (c *Cgroup) KillLeft() error {
	if c.EmptyAfterExit() {
		return nil
	}
	return c.kill()
}

// Signal sends sig to every process in the cgroup.
func (c *Cgroup) Signal(sig unix.Signal) error {
	pids, err := c.Procs()
	for _, pid := range pids {
		_ = unix.Kill(pid, sig) // Best effort: it may have exited since.
	}
	return err
}

// Procs lists the pids in the cgroup.
func (c *Cgroup) Procs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Populated reports whether any process is still in the cgroup. When it
// cannot tell, it reports true and the reason.
func (c *Cgroup) Populated() (bool, error) {
	path := c.dir + "/cgroup.events"
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	return eventsPopulated(fd)
}

// eventsPopulated reads an open cgroup.events from its start. The file is
// two short lines ("populated N", "frozen N"). When it cannot tell, it
// reports true and the reason.
func eventsPopulated(fd int) (bool, error) {
	var buf [128]byte
	n, err := unix.Pread(fd, buf[:], 0)
	if err != nil {
		return true, os.NewSyscallError("read cgroup.events", err)
	}
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		switch line {
		case "populated 0":
			return false, nil
		case "populated 1":
			return true, nil
		}
	}
	return true, fmt.Errorf("no populated line in cgroup.events: %q", buf[:n])
}

// settle kills what is left in the cgroup and waits, at most bound, to see
// it empty. Nil means it was seen empty; an error means processes may
// still run in it. The wait is event-driven: cgroup.events signals POLLPRI
// when "populated" changes.
func (c *Cgroup) settle(bound time.Duration) error {
	if err := c.KillLeft(); err != nil {
		return err
	}
	if c.emptied.Load() {
		return nil
	}
	path := c.dir + "/cgroup.events"
	ev, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(ev)
	deadline := time.Now().Add(bound)
	for {
		pop, err := eventsPopulated(ev)
		if err == nil && !pop {
			c.emptied.Store(true)
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			if err == nil {
				err = fmt.Errorf("%s still populated %v after cgroup.kill", c.dir, bound)
			}
			return err
		}
		fds := []unix.PollFd{{Fd: int32(ev), Events: unix.POLLPRI}}
		if _, err := unix.Poll(fds, int(left/time.Millisecond)+1); err != nil && err != unix.EINTR {
			return os.NewSyscallError("poll cgroup.events", err)
		}
	}
}

// Remove settles the cgroup (bound limits the wait) and then keeps it as a
// spare or deletes it. An error means it could not be seen empty: it is
// then never reused, and the registry retries the kill ([Root.RetryDirty]).
func (c *Cgroup) Remove(bound time.Duration) error {
	defer c.CloseFD()
	if !c.keepNS {
		defer c.ReleaseNamespace()
	}
	if err := c.settle(bound); err != nil {
		c.root.keepDirty(c.dir)
		c.lim.release(false)
		return err
	}
	c.lim.release(true)
	if !c.killed.Load() && c.root != nil {
		if c.kept = c.root.keepSpare(c.dir); c.kept != nil {
			return nil
		}
	}
	if err := unix.Rmdir(c.dir); err != nil {
		// Seen empty, so nothing of the session runs; retry the rmdir.
		c.root.keepDirty(c.dir)
	}
	return nil
}

// PrepareSpare prepares the spare that Remove made of c (and of its v1
// directories) for the next session: it reads where its counters stand
// and opens the descriptors that session needs, so that it starts
// without (see spareCgroup). Call it after Remove, off the path that
// reports the session's end; a no-op when nothing was kept.
func (c *Cgroup) PrepareSpare() {
	if sp := c.kept; sp != nil {
		sp.prepare(c.lim != nil && c.lim.root.v2["memory"])
		c.kept = nil
	}
	if c.lim != nil {
		c.lim.prepareSpare()
	}
}

// ShedPrepared closes what the spare cgroups prepared for their next
// sessions (their descriptors), for a host process short of descriptors,
// and returns how many spares had something prepared. The spares stay: a
// session that takes one sets it up itself. Nil-safe; safe for concurrent
// use.
func (r *Root) ShedPrepared() int {
	if r == nil {
		return 0
	}
	return shedPrepared(&r.mu, &r.spare)
}

// Remove deletes the spare and dirty session cgroups (dirty ones after a
// last kill) and the registry's cgroup; call it once every session's
// cgroup is removed.
func (r *Root) Remove() error {
	r.mu.Lock()
	r.closed = true
	spare := r.spare
	r.spare = nil
	r.mu.Unlock()
	for _, sp := range spare {
		sp.prep.drop()
		_ = unix.Rmdir(sp.dir) // Best effort: the root's rmdir below reports it.
	}
	if n := r.RetryDirty(time.Second); n > 0 {
		return fmt.Errorf("bgexec: %d session cgroups could not be emptied", n)
	}
	return os.Remove(r.dir)
}

// cgroup2NSDelegate reports whether this process's cgroup2 mount has the
// nsdelegate option, under which the kernel refuses to move a process
// across the root of the mover's cgroup namespace. Without it (the mount
// on hybrid hosts here) a root session may write itself into any
// cgroup.procs, and only its namespace still marks it.
func cgroup2NSDelegate() bool {
	found := false
	_ = eachCgroupMount(func(m cgroupMount) bool { // Best effort: unknown counts as no.
		if m.fstype == "cgroup2" && containsWord(strings.ReplaceAll(m.superOpts, ",", " "), "nsdelegate") {
			found = true
			return false
		}
		return true
	})
	return found
}

// namespace is a session's cgroup namespace, held open so that its
// inode number cannot be given to another namespace while the session
// lives: processes are found by that number.
type namespace struct {
	fd   int
	ino  uint64
	link string // what /proc/<pid>/ns/cgroup reads for its members: "cgroup:[ino]"
	// own is the session's cgroup as /proc/<pid>/cgroup names it from
	// here ("/bgexec-…/s-…"), "" when unknown. A process found by the
	// namespace's number but living in another bgexec session's cgroup is
	// not this session's (see killOnce).
	own string
}

// pidfdGetCgroupNamespace is the pidfd ioctl that opens the process's
// cgroup namespace (PIDFD_GET_CGROUP_NAMESPACE, Linux 6.11).
const pidfdGetCgroupNamespace = 0xFF<<8 | 1

// openCgroupNamespace opens the cgroup namespace of pid, which must be
// alive (a zombie has none), through pidfd, pid's pidfd, when it is not
// -1 and the kernel has the ioctl, else through /proc.
func openCgroupNamespace(pid, pidfd int) (*namespace, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/ns/cgroup"
	fd := -1
	if pidfd >= 0 {
		r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(pidfd), pidfdGetCgroupNamespace, 0)
		switch errno {
		case 0:
			fd = int(r)
		case unix.ESRCH:
			return nil, &os.PathError{Op: "ioctl PIDFD_GET_CGROUP_NAMESPACE", Path: path, Err: errno}
		}
		// Any other error (ENOTTY or EINVAL before 6.11): /proc.
	}
	if fd < 0 {
		var err error
		if fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	return &namespace{fd: fd, ino: st.Ino, link: "cgroup:[" + strconv.FormatUint(st.Ino, 10) + "]"}, nil
}

// sessionNamespace opens the cgroup namespace of a session that was just
// started with one: its leader's, or, when the leader has exited already,
// that of a process still in the session's cgroup. Nil when neither is
// left; the session then has nothing running that could have moved.
//
// A session may have entered another namespace already (a root shell can
// exec nsenter before the host looks). The host's own namespace and
// init's are never taken for a session's: killing "every process of the
// namespace" would then kill the machine.
func sessionNamespace(leader, pidfd int, c *Cgroup) *namespace {
	ns, err := openCgroupNamespace(leader, pidfd)
	if err != nil {
		// The leader is gone already: a process still in the cgroup.
		pids, _ := c.Procs() // Best effort: none means the leader's was all there was.
		for _, pid := range pids {
			if ns, err = openCgroupNamespace(pid, -1); err == nil {
				break
			}
		}
		if err != nil {
			return nil
		}
	}
	if ns.shared(c.root) {
		ns.close()
		return nil
	}
	ns.own = "/" + filepath.Base(filepath.Dir(c.dir)) + "/" + filepath.Base(c.dir)
	return ns
}

// sharedNamespaces are the inode numbers of this process's cgroup
// namespace and init's, as NewRoot found them; 0 when unknown. Both stay
// alive as long as this process, so their numbers name no other.
type sharedNamespaces struct {
	self, init uint64
}

// readSharedNamespaces looks up this process's cgroup namespace and
// init's (a supervisor may hide init's even from root: 0 then).
func readSharedNamespaces() sharedNamespaces {
	var sh sharedNamespaces
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/cgroup", &st) == nil {
		sh.self = st.Ino
	}
	if unix.Stat("/proc/1/ns/cgroup", &st) == nil {
		sh.init = st.Ino
	}
	return sh
}

// shared reports whether n is this process's cgroup namespace (or it
// cannot tell) or init's, as r found them (as found now when r is nil).
func (n *namespace) shared(r *Root) bool {
	var sh sharedNamespaces
	if r != nil {
		sh = r.shared
	} else {
		sh = readSharedNamespaces()
	}
	return sh.self == 0 || n.ino == sh.self || n.ino == sh.init
}

// nsKillBound bounds how long kill keeps looking for processes of a
// namespace: one that forks faster than it is killed is reported.
const nsKillBound = time.Second

// kill SIGKILLs every process in the namespace, wherever its cgroup, and
// looks again until a look finds none. An error means some may still run.
// It costs one scan of /proc per look.
func (n *namespace) kill() error {
	deadline := time.Now().Add(nsKillBound)
	buf := make([]byte, 64)
	for {
		found, err := n.killOnce(buf)
		if err != nil {
			return err
		}
		if found == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes of cgroup namespace %s still ran %v after SIGKILL", found, n.link, nsKillBound)
		}
		// Those killed leave the namespace as they exit; give them a moment.
		time.Sleep(time.Millisecond)
	}
}

// killOnce SIGKILLs the processes /proc shows in the namespace, and
// counts them. A zombie has left every namespace, so it is not counted.
func (n *namespace) killOnce(buf []byte) (int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, err
	}
	names, err := d.Readdirnames(-1)
	_ = d.Close()
	if err != nil {
		return 0, err
	}
	found := 0
	for _, name := range names {
		if name[0] < '1' || name[0] > '9' {
			continue
		}
		k, err := unix.Readlink("/proc/"+name+"/ns/cgroup", buf)
		if err != nil || string(buf[:k]) != n.link {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil || pid == os.Getpid() || n.stranger(name) {
			continue
		}
		_ = unix.Kill(pid, unix.SIGKILL) // Best effort: the next look tells.
		found++
	}
	return found, nil
}

// stranger reports whether process name (a /proc entry) lives in the
// cgroup of another bgexec session than n's. Such a process is never
// killed for n: the namespace number matched, but a session of this or
// another registry is not the one that left n's cgroup. It is a guard:
// the number is held (n.fd), so a match should be n's own.
func (n *namespace) stranger(name string) bool {
	if n.own == "" {
		return false
	}
	b, err := os.ReadFile("/proc/" + name + "/cgroup")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		path, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		if path == n.own || strings.HasPrefix(path, n.own+"/") {
			return false
		}
		return strings.Contains(path, "/bgexec-") && strings.Contains(path, "/s-")
	}
	return false
}

// close releases the namespace; nil-safe and idempotent.
func (n *namespace) close() {
	if n != nil && n.fd >= 0 {
		_ = unix.Close(n.fd)
		n.fd = -1
	}
}

// Populated reports whether any process is in the cgroup v2 directory
// dir, from its cgroup.events. When it cannot tell, it reports true and
// the reason.
func Populated(dir string) (bool, error) { return (&Cgroup{dir: dir, fd: -1}).Populated() }
