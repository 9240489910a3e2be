//go:build linux

package contain

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// Limiter applies a registry's limits to its session cgroups. Each
// controller (memory, pids, cpu) comes from the cgroup v2 tree when the
// registry's cgroup may enable it for its children, else from a cgroup v1
// hierarchy (the hybrid layout), where the registry gets a directory of
// its own below this process's cgroup. Its methods are safe for
// concurrent use; a nil *Limiter applies nothing. It is made by
// [NewLimiter] only.
type Limiter struct {
	lim    Limits
	report Report
	v2     map[string]bool // controllers enabled in the registry's subtree_control
	v1     []*v1Hierarchy  // hierarchies used for the controllers v2 lacks

	kick func() // wakes the sweeper, which calls RetryDirty; set once by SetKick

	mu     sync.Mutex // guards the fields below
	dirty  []string   // v1 session directories of ended sessions, to remove
	spare  []*v1Spare // emptied sets of v1 session directories, for reuse
	closed bool
}

// takeSpare returns an emptied set of v1 session directories, or nil.
// A mkdir in a v1 memory hierarchy costs about as much as the fork.
func (l *Limiter) takeSpare() *v1Spare {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.spare)
	if n == 0 {
		return nil
	}
	set := l.spare[n-1]
	l.spare[n-1] = nil
	l.spare = l.spare[:n-1]
	return set
}

// keepSpare keeps an emptied set for reuse unless enough are kept or the
// registry is closing; it returns the spare, or nil when it did not keep
// the set.
func (l *Limiter) keepSpare(set []string) *v1Spare {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || len(l.spare) >= MaxSpares || len(set) == 0 {
		return nil
	}
	sp := &v1Spare{dirs: set}
	l.spare = append(l.spare, sp)
	return sp
}

// v1Hierarchy is one cgroup v1 hierarchy used for a controller.
type v1Hierarchy struct {
	ctrl string // "memory", "pids" or "cpu"
	dir  string // the registry's directory in it
	home int    // O_WRONLY descriptor of this process's cgroup's tasks file
}

// sessionLimits is one session's share: its v1 directories and what its
// reused v2 cgroup had counted before it.
type sessionLimits struct {
	root     *Limiter
	v1       []string    // the session's directory in each of root.v1, in order; fixed after attach
	released atomic.Bool // release ran: the directories are gone (or reused)
	tasks    []int       // O_WRONLY descriptors of their tasks files, closed after the spawn
	// baseCPUUsec is a reused v2 cgroup's cpu.stat usage_usec at the
	// session's start (0 for a new one).
	baseCPUUsec int64
	// kept is the spare release made of v1, which prepareSpare prepares;
	// nil when none was kept.
	kept *v1Spare
	// mem are the session's memory counters, in the v2 cgroup or the v1
	// memory directory, whichever has the memory controller: the peak,
	// memory.peak (v2) through a descriptor whose view was reset at the
	// start (Linux 6.12 resets the peak per descriptor), or
	// memory.max_usage_in_bytes (v1), reset by a write of 0, nil when
	// neither could be reset for this session; the OOM killer's count
	// (memory.events or memory.oom_control), open when a spare prepared
	// it, with where it stood at the start (0 for a new cgroup).
	mem memoryFiles
}

// The cgroup files of each controller.
const (
	v2MemoryMax = "memory.max"
	v2PidsMax   = "pids.max"
	v2CPUMax    = "cpu.max"
	v1MemLimit  = "memory.limit_in_bytes"
	v1PidsMax   = "pids.max"
	v1CFSQuota  = "cpu.cfs_quota_us"
)

// NewLimiter decides, per controller, where the limits come from, and
// reports it. cg is nil without session cgroups, cgErr then says why.
// The task limit is capped by the host's task budget (see Report).
func NewLimiter(cg *Root, cgErr error, lim Limits) *Limiter {
	l := &Limiter{lim: lim, v2: make(map[string]bool)}
	rep := &l.report
	tasksSet := lim.TasksSet
	if cg == nil {
		why := "sessions have no cgroup of their own"
		if cgErr != nil {
			why += " (" + cgErr.Error() + ")"
		}
		for _, r := range []*Controller{&rep.Memory, &rep.Tasks, &rep.CPU} {
			r.Reason = why
		}
		return l
	}
	budget, hasBudget := hostTaskBudget()
	if hasBudget {
		// The sessions together, and so each, get what the host's tightest
		// ancestor leaves beyond the host's reserve (see Limits.Tasks).
		rep.TaskBudget = int(budget.free)
		rep.TaskBudgetSource = budget.String()
		share := budget.free
		if !tasksSet {
			// The default leaves room for other sessions beside a
			// runaway one: half the budget.
			share = max(minTaskBudget, budget.free/2)
		}
		if l.lim.Tasks > 0 && int64(l.lim.Tasks) > share {
			l.lim.Tasks = int(share)
		}
	}
	if l.lim.Tasks > 0 {
		rep.SessionTasks = l.lim.Tasks
	}
	rep.Cgroup, rep.CgroupDir = true, cg.dir
	rep.CgroupNamespace = cg.namespace
	rep.MigrationRefused = cg.namespace && cg.nsdelegate
	rep.Migration = migrationText(cg)
	// memory is always wanted: it gives the resource view its memory
	// figure even without a limit; pids and cpu only for their limits.
	type want struct {
		ctrl   string
		needed bool
		report *Controller
		v2, v1 string
	}
	for _, w := range []want{
		{"memory", true, &rep.Memory, v2MemoryMax, v1MemLimit},
		{"pids", lim.Tasks > 0 || hasBudget, &rep.Tasks, v2PidsMax, v1PidsMax},
		{"cpu", lim.CPU > 0, &rep.CPU, v2CPUMax, v1CFSQuota},
	} {
		if !w.needed {
			continue
		}
		err2 := enableV2(cg.dir, w.ctrl)
		if err2 == nil {
			l.v2[w.ctrl] = true
			w.report.File = "cgroup2 " + w.v2
			if w.ctrl == "pids" && hasBudget {
				l.capTasks(filepath.Join(cg.dir, v2PidsMax), budget)
			}
			continue
		}
		h, err1 := newV1Hierarchy(w.ctrl, filepath.Base(cg.dir), w.v1)
		if err1 == nil {
			l.v1 = append(l.v1, h)
			w.report.File = "cgroup1 " + w.v1
			if w.ctrl == "pids" && hasBudget {
				l.capTasks(filepath.Join(h.dir, v1PidsMax), budget)
			}
			continue
		}
		w.report.Reason = fmt.Sprintf("no %s controller: cgroup v2: %v; cgroup v1: %v", w.ctrl, err2, err1)
	}
	if hasBudget && !l.v2["pids"] && !slices.ContainsFunc(l.v1, func(h *v1Hierarchy) bool { return h.ctrl == "pids" }) {
		rep.TaskBudget = 0
		rep.TaskBudgetSource += "; not applied: no pids controller for the registry's cgroup"
		l.report.BudgetWarning = "bgexec: the sessions' tasks are not capped below the host's own pids.max (" + budget.String() + "): no pids controller reaches the registry's cgroup, so a fork bomb can take the tasks the host needs"
	}
	return l
}

// migrationText is ContainmentReport.Migration for a registry with
// session cgroups.
func migrationText(cg *Root) string {
	switch {
	case !cg.namespace:
		return "Sessions have no cgroup namespace (creating one needs CAP_SYS_ADMIN): a process that may write another cgroup's cgroup.procs can leave its session's cgroup, and then outlives kill, Close and the host."
	case cg.nsdelegate:
		return "The kernel refuses to move a session's process out of its cgroup v2 cgroup (nsdelegate and a cgroup namespace per session), so it is killed with its session's cgroup, on Close and when the host dies, unless it first entered another cgroup namespace (setns or unshare, CAP_SYS_ADMIN). On cgroup v1 hierarchies a root process may still move, leaving its limits there, but not its cgroup v2 cgroup."
	default:
		return "The cgroup2 mount has no nsdelegate, so the kernel lets a root session move its processes to any cgroup, leaving its limits; they are still killed with their session, on Close and when the host dies, found by their cgroup namespace, unless they also entered another cgroup namespace (setns or unshare, CAP_SYS_ADMIN)."
	}
}

// capTasks writes the sessions' task budget into the registry's own
// pids.max, the parent of every session's: the sum of their tasks. A
// failure is reported and warned about.
func (l *Limiter) capTasks(path string, b taskBudget) {
	if err := WriteFile(path, strconv.FormatInt(b.free, 10)); err != nil {
		l.report.TaskBudget = 0
		l.report.TaskBudgetSource += "; not applied to the sessions together: " + err.Error()
		l.report.BudgetWarning = "bgexec: the sessions' tasks together are not capped below the host's own pids.max (" + b.String() + "): " + err.Error()
	}
}

// Each session's tasks are also the host's: they count against every
// pids.max above the host's cgroup (a systemd service's TasksMax). A
// fork bomb that took all of it would leave the host's Go runtime unable
// to start a thread, which aborts the process.

// HostTaskReserve is how many tasks of its tightest ancestor's pids.max
// the host keeps for its own threads and processes: a quarter of the
// limit, at least 64.
func HostTaskReserve(limit int64) int64 { return max(64, limit/4) }

// minTaskBudget is the least the sessions get, even when the host's
// budget leaves less: a shell and a command.
const minTaskBudget = 8

// taskBudget is what the tightest pids.max above the host leaves for its
// sessions.
type taskBudget struct {
	dir                     string // the cgroup whose pids.max binds
	limit, current, reserve int64
	free                    int64 // limit - current - reserve, at least minTaskBudget
}

func (b taskBudget) String() string {
	return fmt.Sprintf("pids.max %d of %s: %d in use at NewRegistry, %d kept for the host, %d for the sessions together", b.limit, b.dir, b.current, b.reserve, b.free)
}

// hostTaskBudget walks up from this process's cgroup, in the cgroup v2
// tree and in the v1 pids hierarchy, and returns the tightest budget any
// pids.max there leaves; false when none limits tasks.
func hostTaskBudget() (taskBudget, bool) {
	var starts []string
	if d, err := Cgroup2Dir(); err == nil {
		starts = append(starts, d)
	}
	if mnt, rel, err := V1Mount("pids"); err == nil {
		starts = append(starts, filepath.Join(mnt, rel))
	}
	var best taskBudget
	found := false
	for _, start := range starts {
		// Up to the hierarchy's root: the first directory without
		// cgroup.procs is outside the cgroup file system.
		for d := start; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err != nil {
				break
			}
			limit, current := ReadInt(filepath.Join(d, "pids.max")), ReadInt(filepath.Join(d, "pids.current"))
			if limit > 0 && current >= 0 {
				b := taskBudget{dir: d, limit: limit, current: current, reserve: HostTaskReserve(limit)}
				b.free = max(minTaskBudget, limit-current-b.reserve)
				if !found || b.free < best.free {
					best, found = b, true
				}
			}
			if d == "/" {
				break
			}
		}
	}
	return best, found
}

// enableV2 enables ctrl for the session cgroups below the registry's
// cgroup dir. The registry's cgroup holds no process, so the
// no-internal-process rule allows it whenever the parent delegates ctrl.
func enableV2(dir, ctrl string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	if !containsWord(string(b), ctrl) {
		return fmt.Errorf("%s is not delegated to %s (enable it in the parent's cgroup.subtree_control)", ctrl, filepath.Dir(dir))
	}
	return WriteFile(filepath.Join(dir, "cgroup.subtree_control"), "+"+ctrl)
}

func containsWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// WriteFile writes one value to a cgroup file that exists.
func WriteFile(path, value string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(value)); err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// newV1Hierarchy creates the registry's directory, named like its v2
// cgroup, in the v1 hierarchy of ctrl below this process's cgroup there.
func newV1Hierarchy(ctrl, name, limitFile string) (*v1Hierarchy, error) {
	mnt, rel, err := V1Mount(ctrl)
	if err != nil {
		return nil, err
	}
	home := filepath.Join(mnt, rel)
	removeStaleV1(home)
	dir := filepath.Join(home, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, limitFile)); err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	fd, err := unix.Open(filepath.Join(home, "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, &os.PathError{Op: "open", Path: filepath.Join(home, "tasks"), Err: err}
	}
	return &v1Hierarchy{ctrl: ctrl, dir: dir, home: fd}, nil
}

// removeStaleV1 removes the v1 directories that registries of processes
// that no longer exist left in home. The watchdog empties a dead host's
// sessions through its v2 cgroup, but knows nothing of the v1
// directories; they are empty, and rmdir refuses any that is not.
func removeStaleV1(home string) {
	dirs, _ := filepath.Glob(filepath.Join(home, "bgexec-*-*"))
	for _, dir := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(filepath.Base(dir), "-", 3)[1])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil || !errors.Is(err, os.ErrNotExist) {
			continue // alive, or cannot tell
		}
		subs, _ := filepath.Glob(filepath.Join(dir, "s-*"))
		for _, sub := range subs {
			_ = unix.Rmdir(sub) // Best effort: a busy one keeps its parent.
		}
		_ = unix.Rmdir(dir)
	}
}

// V1Mount finds the mount point of the v1 hierarchy with ctrl and this
// process's cgroup in it (relative to the mount's root).
func V1Mount(ctrl string) (mnt, rel string, err error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-id:controller-list:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[1] != "" && containsWord(strings.ReplaceAll(parts[1], ",", " "), ctrl) {
			rel, found = parts[2], true
		}
	}
	if !found {
		return "", "", fmt.Errorf("no cgroup v1 %s hierarchy", ctrl)
	}
	err = eachCgroupMount(func(m cgroupMount) bool {
		if m.fstype != "cgroup" || !containsWord(strings.ReplaceAll(m.superOpts, ",", " "), ctrl) {
			return true
		}
		if sub, ok := m.below(rel); ok {
			mnt, rel = m.point, sub
			return false
		}
		return true
	})
	if err != nil {
		return "", "", err
	}
	if mnt != "" {
		return mnt, rel, nil
	}
	return "", "", fmt.Errorf("no mount of the cgroup v1 %s hierarchy", ctrl)
}

// Attach gives a new session cgroup its limits: in a fresh v2 cgroup the
// limit files, in each v1 hierarchy a directory of its own. On error
// nothing of it is left.
func (l *Limiter) Attach(c *Cgroup) error {
	if l == nil || (len(l.v2) == 0 && len(l.v1) == 0) {
		return nil
	}
	sl := &sessionLimits{root: l} // a new memory cgroup has no OOM kills yet: oomKill 0
	if c.reused {
		// A spare has its limits already, and counters of earlier
		// sessions, read when the last one ended if they could be.
		p := c.prep
		c.prep = nil
		if p == nil {
			p = &cgroupPrep{cpuUsec: -1, dirFD: -1, mem: noMemoryFiles()}
		}
		sl.baseCPUUsec = p.cpuUsec
		if sl.baseCPUUsec < 0 {
			sl.baseCPUUsec = ReadKey(filepath.Join(c.dir, "cpu.stat"), "usage_usec")
		}
		if l.v2["memory"] {
			sl.mem, p.mem = p.mem, noMemoryFiles()
		}
		p.close()
	} else if err := l.writeV2(c.dir); err != nil {
		return err
	}
	fail := func(err error) error {
		sl.released.Store(true)
		sl.closeTasks()
		sl.mem.close()
		l.keepDirty(sl.v1...)
		return err
	}
	if set := l.takeSpare(); set != nil {
		sl.v1 = set.dirs
		if p, ok := set.prep.take(); ok {
			sl.tasks = p.tasks
			if sl.v1Dir("memory") != "" {
				sl.mem, p.mem = p.mem, noMemoryFiles()
			}
			p.tasks = nil
			p.close()
		} else if sl.v1Dir("memory") != "" {
			sl.mem.oomKill = -1 // a reused directory: read where it stands
		}
	} else {
		var b [6]byte
		_, _ = rand.Read(b[:])
		name := "s-" + hex.EncodeToString(b[:])
		for _, h := range l.v1 {
			dir := filepath.Join(h.dir, name)
			if err := unix.Mkdir(dir, 0o755); err != nil {
				return fail(&os.PathError{Op: "mkdir", Path: dir, Err: err})
			}
			sl.v1 = append(sl.v1, dir)
			if err := l.writeV1(h.ctrl, dir); err != nil {
				return fail(err)
			}
		}
	}
	if sl.mem.oomKill < 0 {
		sl.mem.oomKill = ReadKey(sl.oomPath(c), "oom_kill")
	}
	if sl.mem.peak == nil {
		sl.openPeak(c)
	}
	if sl.tasks == nil {
		for _, dir := range sl.v1 {
			path := filepath.Join(dir, "tasks")
			fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return fail(&os.PathError{Op: "open", Path: path, Err: err})
			}
			sl.tasks = append(sl.tasks, fd)
		}
	}
	c.lim = sl
	return nil
}

// writeV2 writes the limits of the controllers enabled in the v2 tree.
func (l *Limiter) writeV2(dir string) error {
	var errs []error
	if l.v2["memory"] && l.lim.MemoryBytes > 0 {
		errs = append(errs, WriteFile(filepath.Join(dir, v2MemoryMax), strconv.FormatInt(l.lim.MemoryBytes, 10)))
		// Swap would let a session past its limit; the file is absent
		// without swap accounting.
		if err := WriteFile(filepath.Join(dir, "memory.swap.max"), "0"); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if l.v2["pids"] && l.lim.Tasks > 0 {
		errs = append(errs, WriteFile(filepath.Join(dir, v2PidsMax), strconv.Itoa(l.lim.Tasks)))
	}
	if l.v2["cpu"] && l.lim.CPU > 0 {
		errs = append(errs, WriteFile(filepath.Join(dir, v2CPUMax), fmt.Sprintf("%d %d", cpuQuota(l.lim.CPU), CPUPeriod)))
	}
	return errors.Join(errs...)
}

// writeV1 writes the limit of ctrl into a v1 session directory.
func (l *Limiter) writeV1(ctrl, dir string) error {
	switch ctrl {
	case "memory":
		if l.lim.MemoryBytes <= 0 {
			return nil
		}
		v := strconv.FormatInt(l.lim.MemoryBytes, 10)
		if err := WriteFile(filepath.Join(dir, v1MemLimit), v); err != nil {
			return err
		}
		// memory+swap, when swap is accounted: no way past the limit.
		if err := WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), v); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	case "pids":
		if l.lim.Tasks > 0 {
			return WriteFile(filepath.Join(dir, v1PidsMax), strconv.Itoa(l.lim.Tasks))
		}
	case "cpu":
		if l.lim.CPU > 0 {
			if err := WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), strconv.Itoa(CPUPeriod)); err != nil {
				return err
			}
			return WriteFile(filepath.Join(dir, v1CFSQuota), strconv.FormatInt(cpuQuota(l.lim.CPU), 10))
		}
	}
	return nil
}

func cpuQuota(cores float64) int64 { return int64(cores * CPUPeriod) }

// release removes the session's v1 directories once its processes are
// gone (empty: the v2 cgroup was seen empty); a directory that cannot be
// removed yet is retried later. Nil-safe.
func (sl *sessionLimits) release(empty bool) {
	if sl == nil || !sl.released.CompareAndSwap(false, true) {
		return
	}
	sl.closeTasks()
	sl.mem.close()
	if empty {
		if sl.kept = sl.root.keepSpare(sl.v1); sl.kept != nil {
			return
		}
	}
	// The rmdirs wait for the sweeper: a cgroup v1 rmdir can take a
	// millisecond, which would delay every session's end.
	sl.root.keepDirty(sl.v1...)
	if empty && sl.root.kick != nil {
		sl.root.kick()
	}
}

// prepareSpare prepares the v1 spare release made, if any (see
// Cgroup.PrepareSpare). Nil-safe.
func (sl *sessionLimits) prepareSpare() {
	if sl == nil || sl.kept == nil {
		return
	}
	sl.kept.prepare(sl.v1Dir("memory")) // the kept set is sl.v1
	sl.kept = nil
}

func (sl *sessionLimits) closeTasks() {
	for _, fd := range sl.tasks {
		_ = unix.Close(fd)
	}
	sl.tasks = nil
}

func (l *Limiter) keepDirty(dirs ...string) {
	if len(dirs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dirty = append(l.dirty, dirs...)
}

// RetryDirty removes the v1 session directories of ended sessions (those
// still busy stay for the next call). Nil-safe.
func (l *Limiter) RetryDirty() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	left := l.dirty[:0]
	for _, dir := range l.dirty {
		if err := unix.Rmdir(dir); err != nil && err != unix.ENOENT {
			left = append(left, dir)
		}
	}
	clear(l.dirty[len(left):])
	l.dirty = left
}

// ShedPrepared closes what the spare sets of v1 directories prepared for
// their next sessions, as Root.ShedPrepared does for cgroups, and returns
// how many had something prepared. Nil-safe; safe for concurrent use.
func (l *Limiter) ShedPrepared() int {
	if l == nil {
		return 0
	}
	return shedPrepared(&l.mu, &l.spare)
}

// Remove deletes the registry's v1 directories; call it after every
// session cgroup was removed. Nil-safe.
func (l *Limiter) Remove() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.closed = true
	for _, set := range l.spare {
		set.prep.drop()
		l.dirty = append(l.dirty, set.dirs...)
	}
	l.spare = nil
	l.mu.Unlock()
	l.RetryDirty()
	for _, h := range l.v1 {
		_ = unix.Close(h.home)
		_ = unix.Rmdir(h.dir) // Best effort: a dirty session directory keeps it.
	}
}

// Report says where the limits come from, as NewLimiter found it (a
// copy). Nil-safe: a nil Limiter reports nothing.
func (l *Limiter) Report() Report {
	if l == nil {
		return Report{}
	}
	return l.report
}

// SetKick sets what wakes the registry's sweeper, which calls RetryDirty,
// when an ended session leaves cgroup v1 directories to remove. Call it
// once, before the first session.
func (l *Limiter) SetKick(kick func()) { l.kick = kick }

// HasV1 reports whether the session has cgroup v1 directories that a
// thread must join to fork into them (see [Cgroup.EnterV1]). Nil-safe.
func (c *Cgroup) HasV1() bool {
	return c != nil && c.lim != nil && len(c.lim.tasks) > 0
}

// EnterV1 moves the thread tid (the caller's, locked to it) into the
// session's cgroup v1 directories, so that a child it forks inherits
// them: cgroup v1 membership is per thread and clone3 cannot set it. The
// returned leave, never nil, moves the thread back into this process's
// cgroups, closes the directories' tasks files, and reports whether the
// thread is back everywhere (home); when it is not, the caller must let
// the thread end rather than run other goroutines on it. On error the
// thread may be in some of the directories: call leave all the same.
func (c *Cgroup) EnterV1(tid int) (leave func() (home bool), err error) {
	sl := c.lim
	id := []byte(strconv.Itoa(tid))
	joined := 0
	for _, fd := range sl.tasks {
		if _, werr := unix.Write(fd, id); werr != nil {
			err = fmt.Errorf("join the session's cgroup v1 %s: %w", sl.root.v1[joined].ctrl, werr)
			break
		}
		joined++
	}
	return func() bool {
		defer sl.closeTasks()
		home := true
		for _, h := range sl.root.v1[:joined] {
			if _, werr := unix.Write(h.home, id); werr != nil {
				home = false
			}
		}
		return home
	}, err
}

// OOMKilled reports whether the kernel's OOM killer ended a process of
// the session (memory.events or memory.oom_control: oom_kill). Nil-safe.
func (c *Cgroup) OOMKilled() bool {
	if c == nil || c.lim == nil {
		return false
	}
	sl := c.lim
	path := sl.oomPath(c)
	if path == "" {
		return false
	}
	if sl.released.Load() {
		return ReadKey(path, "oom_kill")-sl.mem.oomKill > 0
	}
	return sl.mem.oomKills(path)-sl.mem.oomKill > 0
}

// oomPath is the file that counts the OOM killer's kills in the session's
// cgroups: memory.events in the v2 cgroup, or memory.oom_control in the
// v1 memory directory; "" when no memory controller reaches the session.
func (sl *sessionLimits) oomPath(c *Cgroup) string {
	if sl.root.v2["memory"] {
		return filepath.Join(c.dir, "memory.events")
	}
	if dir := sl.v1Dir("memory"); dir != "" {
		return filepath.Join(dir, "memory.oom_control")
	}
	return ""
}

// openPeak opens the session's peak memory counter and resets it, so that
// it counts this session only (a reused cgroup carries its earlier
// sessions' peak). It leaves sl.mem.peak nil when no memory controller
// reaches the session or the counter cannot be reset.
func (sl *sessionLimits) openPeak(c *Cgroup) {
	switch {
	case sl.root.v2["memory"]:
		sl.mem.peak = openPeak(filepath.Join(c.dir, "memory.peak"), "reset\n")
	case sl.v1Dir("memory") != "":
		sl.mem.peak = openPeak(filepath.Join(sl.v1Dir("memory"), "memory.max_usage_in_bytes"), "0\n")
	}
}

// PeakMemory is the most memory the session's cgroup was charged since
// its start, in bytes; ok is false when it is not known (no memory
// controller reaches the session, its counter could not be reset, or it
// was released). Read it before Remove. Nil-safe.
func (c *Cgroup) PeakMemory() (bytes int64, ok bool) {
	if c == nil || c.lim == nil || c.lim.mem.peak == nil || c.lim.released.Load() {
		return 0, false
	}
	var b [32]byte
	n, err := c.lim.mem.peak.ReadAt(b[:], 0)
	if n == 0 && err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b[:n])), 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// v1Dir is the session's directory in the v1 hierarchy of ctrl, or "".
func (sl *sessionLimits) v1Dir(ctrl string) string {
	for i, h := range sl.root.v1 {
		if h.ctrl == ctrl && i < len(sl.v1) {
			return sl.v1[i]
		}
	}
	return ""
}

// ReadKey reads the value of "key N" from a flat-keyed cgroup file; -1
// when it cannot.
func ReadKey(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	return parseKey(b, key)
}

// ReadInt reads a cgroup file holding one number; -1 when it cannot.
func ReadInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// fdsPerSpawn is how many descriptors a spawn may need at once: output
// pipes (both ends), stdin, a PTY pair, a pidfd, the cgroup directory,
// the script memfd and v1 tasks files, with room to spare.
const fdsPerSpawn = 16

// fdReserve is how many descriptors the host keeps for itself: a
// twentieth of its limit, at least 64.
func fdReserve(limit int64) int64 { return max(64, limit/20) }

// DescriptorRefusal returns the refusal text when starting a session
// would leave the host process fewer than its reserve of descriptors
// (RLIMIT_NOFILE), else "". When the count cannot be read it does not
// refuse: the spawn itself then fails with its own error.
func DescriptorRefusal() string {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return ""
	}
	limit := int64(rl.Cur)
	open, err := OpenDescriptors()
	if err != nil {
		return ""
	}
	reserve := fdReserve(limit)
	if open+fdsPerSpawn+reserve <= limit {
		return ""
	}
	return fmt.Sprintf("Too few file descriptors left in the host process for another session (%d of %d open, %d kept in reserve for the host). Kill or remove a session (process list) and retry.", open, limit, reserve)
}

// OpenDescriptors counts this process's open descriptors: on Linux 6.2+
// the size of /proc/self/fd is its number of entries, one stat, which
// runs before every spawn; elsewhere (a size of 0) procfs reads the
// directory.
func OpenDescriptors() (int64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/fd", &st); err == nil && st.Size > 0 {
		return st.Size, nil
	}
	p, err := procfs.Self()
	if err != nil {
		return 0, err
	}
	n, err := p.FileDescriptorsLen()
	return int64(n), err
}

// Hierarchy is a cgroup v1 hierarchy a Limiter uses for a controller.
type Hierarchy struct {
	Controller string // "memory", "pids" or "cpu"
	Dir        string // the registry's directory in it
}

// V1 lists the cgroup v1 hierarchies in use, in the order controllers are
// applied; none on a pure cgroup v2 host. Nil-safe.
func (l *Limiter) V1() []Hierarchy {
	if l == nil {
		return nil
	}
	out := make([]Hierarchy, 0, len(l.v1))
	for _, h := range l.v1 {
		out = append(out, Hierarchy{Controller: h.ctrl, Dir: h.dir})
	}
	return out
}

// ControllerDir is the directory whose interface files apply ctrl
// ("memory", "pids", "cpu") to the session: its v2 cgroup, or its
// directory in the v1 hierarchy of ctrl; "" when no limit controller
// reaches it. Nil-safe.
func (c *Cgroup) ControllerDir(ctrl string) string {
	if c == nil || c.lim == nil {
		return ""
	}
	if c.lim.root.v2[ctrl] {
		return c.dir
	}
	return c.lim.v1Dir(ctrl)
}
