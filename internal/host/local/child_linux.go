//go:build linux

package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
	"golang.org/x/sys/unix"
)

// osChild is a real process. It waits on a pidfd through the runtime's
// netpoller, so an idle session holds no OS thread (a blocking wait4 would
// hold one per child, and past 10,000 threads the Go runtime aborts).
type osChild struct {
	leader int       // the shell's pid, which is also its process group id
	cmd    *exec.Cmd // reaps the leader only when pidfd is nil
	pidfd  *os.File  // nil when pidfd_open is unavailable

	cg       *contain.Cgroup   // nil without cgroup containment
	watchdog *contain.Watchdog // learns the pgid, to kill it if this process dies

	res resourceCache // the resources list and poll show

	// wrapped: the leader is a wrapper (bwrap; see Host.StartWrapped),
	// which reports a command killed by signal n as exit code 128+n (see
	// wrappedStatus).
	wrapped bool

	mu      sync.Mutex      // guards reaped, killErr and sent
	reaped  bool            // after reaping, the pgid may be reused: never signal it
	killErr error           // why the last SIGKILL may have missed a process; nil if it did not
	usage   *syscall.Rusage // the leader's rusage from its reaping; guarded by mu
	sent    syscall.Signal  // the last signal other than SIGKILL sent to a wrapped command
	peak    int64           // the cgroup's peak memory, read by Release; -1 unknown; guarded by mu
	sweep   bool            // KillAtEnd left the cgroup namespace to SweepAfterEnd; guarded by mu
	atEnd   bool            // KillAtEnd ran: SweepAfterEnd follows Release; guarded by mu
	remove  bool            // Release left the cgroup's removal to SweepAfterEnd; guarded by mu
}

// What an osChild is to its session and to the tool layer: checked here,
// so that no capability goes missing unnoticed.
var (
	_ session.Process       = (*osChild)(nil)
	_ session.LateReaper    = (*osChild)(nil)
	_ session.EndSweeper    = (*osChild)(nil)
	_ session.Lingerer      = (*osChild)(nil)
	_ session.TreeLister    = (*osChild)(nil)
	_ session.LimitReporter = (*osChild)(nil)
	_ host.UsageReader      = (*osChild)(nil)
	_ host.EscapeWatcher    = (*osChild)(nil)
	_ host.Container        = (*osChild)(nil)
	_ host.EndUsager        = (*osChild)(nil)
	_ host.PeakReporter     = (*osChild)(nil)
)

func (c *osChild) Pid() int { return c.leader }

// AwaitExit blocks until the leader has exited, without reaping it, so the
// process group id stays valid for a final SIGKILL.
func (c *osChild) AwaitExit() error {
	if c.pidfd == nil || contain.AwaitPidfd(c.pidfd) != nil {
		return c.waitNoReap()
	}
	return nil
}

// waitNoReap blocks until the leader exits, leaving the zombie (for old
// kernels without pidfd, and if polling the pidfd fails).
func (c *osChild) waitNoReap() error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, c.Pid(), &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

// SignalGroup signals the process group, and the cgroup when there is one.
// Only ESRCH means the group is gone; any other error means some of it may
// still run, and for SIGKILL it is kept for release to report.
func (c *osChild) SignalGroup(sig syscall.Signal) error {
	return c.signalGroup(sig, true)
}

// KillAtEnd is the SIGKILL at the session's end: SignalGroup's, except
// that the look for processes that left the cgroup but not its namespace
// (a scan of every process on the host) is left to SweepAfterEnd, after
// the end is recorded.
func (c *osChild) KillAtEnd() error {
	c.mu.Lock()
	c.atEnd = true
	c.mu.Unlock()
	return c.signalGroup(unix.SIGKILL, false)
}

// SweepAfterEnd first removes the session's cgroup if Release left that
// to it (waiting until the kernel has emptied it), prepares the spare
// that the cgroup became for the next session to start in
// (contain.Cgroup.PrepareSpare), and then SIGKILLs what is left of the
// session's cgroup namespace, if KillAtEnd left it, and lets go of the
// namespace. The host runs no other session in that namespace, so this
// is not hurried.
func (c *osChild) SweepAfterEnd() error {
	c.mu.Lock()
	remove := c.remove
	c.remove = false
	c.mu.Unlock()
	var err error
	if remove {
		err = c.cg.Remove(time.Second) // not under mu: it may wait up to a second
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cg != nil {
		c.cg.PrepareSpare()
	}
	if c.sweep {
		c.sweep = false
		err = errors.Join(err, c.cg.KillNamespace())
		c.watchdog.ForgetNamespace(c.cg) // while it is held open: the number is not reused
		c.cg.ReleaseNamespace()
	}
	return err
}

// signalGroup is SignalGroup; a SIGKILL looks for the processes of the
// cgroup namespace too only when namespace is set, and otherwise leaves
// them to SweepAfterEnd.
func (c *osChild) signalGroup(sig syscall.Signal, namespace bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reaped {
		return nil
	}
	if c.wrapped && c.cg != nil && sig != unix.SIGKILL {
		return c.signalWrapped(sig)
	}
	var err error
	if kerr := unix.Kill(-c.Pid(), sig); kerr != nil && !errors.Is(kerr, unix.ESRCH) {
		err = fmt.Errorf("signal process group %d: %w", c.Pid(), kerr)
	}
	if c.cg != nil {
		// Also reach processes that left the group (setsid, double fork).
		if sig == unix.SIGKILL {
			err = errors.Join(err, c.cg.KillLeft())
			// And those that left the cgroup: root may write itself into
			// any cgroup.procs, but not out of its namespace.
			if namespace {
				err = errors.Join(err, c.cg.KillNamespace())
			} else if c.cg.Namespaced() && !c.sweep {
				c.sweep = true
				c.cg.KeepNamespace()
			}
		} else {
			err = errors.Join(err, c.cg.Signal(sig))
		}
	}
	if sig == unix.SIGKILL {
		c.killErr = err
	}
	return err
}

// reap collects the leader's exit status; the leader has already exited, so
// this does not block.
func (c *osChild) Reap() (syscall.WaitStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reaped = true
	c.watchdog.Forget(c.Pid())
	if c.pidfd != nil {
		// The os.Process was released at start; reap with wait4.
		defer c.pidfd.Close()
		var ws unix.WaitStatus
		var ru unix.Rusage
		for {
			_, err := unix.Wait4(c.leader, &ws, 0, &ru)
			if err != unix.EINTR {
				if err == nil {
					c.usage = &syscall.Rusage{Utime: syscall.Timeval(ru.Utime), Stime: syscall.Timeval(ru.Stime)}
				}
				return c.wrappedStatus(syscall.WaitStatus(ws)), err
			}
		}
	}
	_ = c.cmd.Wait() // non-zero exits are a status here, not an error
	if c.cmd.ProcessState == nil {
		return 0, errors.New("local: process state unavailable")
	}
	c.usage, _ = c.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return c.wrappedStatus(c.cmd.ProcessState.Sys().(syscall.WaitStatus)), nil
}

// ExitStatus reads the exited leader's status, and its CPU time for
// EndUsage, with waitid's WNOWAIT, leaving the zombie: the session records
// its end first and reaps after (see [session.LateReaper]). The zombie
// keeps the pid, and so the process group id, from reuse until then. Not
// with a cgroup, which is removed at the end's recording (Release) and
// must not still hold the unreaped leader then; and not if the leader has
// not exited (AwaitExit failed), which Reap then waits for.
func (c *osChild) ExitStatus() (syscall.WaitStatus, bool) {
	if c.cg != nil || c.pidfd == nil {
		return 0, false
	}
	var info unix.Siginfo
	var ru unix.Rusage
	for {
		err := unix.Waitid(unix.P_PID, c.leader, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, &ru)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, false
		}
		break
	}
	pid, code, status := sigchld(&info)
	if pid != c.leader {
		return 0, false // WNOHANG found nothing: not exited yet
	}
	var ws syscall.WaitStatus
	switch code {
	case cldExited:
		ws = syscall.WaitStatus(status&0xff) << 8
	case cldKilled:
		ws = syscall.WaitStatus(status & 0x7f)
	case cldDumped:
		ws = syscall.WaitStatus(status&0x7f) | 0x80
	default:
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.usage = &syscall.Rusage{Utime: syscall.Timeval(ru.Utime), Stime: syscall.Timeval(ru.Stime)}
	return c.wrappedStatus(ws), true
}

// The si_code values of a child's end (<asm-generic/siginfo.h>).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// sigchld reads si_pid, si_code and si_status from a SIGCHLD siginfo:
// the union after the three ints starts at the next pointer-aligned
// offset (16 on 64-bit, 12 on 32-bit), with si_pid first and si_status
// two ints on.
func sigchld(info *unix.Siginfo) (pid int, code int32, status int32) {
	const union = (12 + unsafe.Sizeof(uintptr(0)) - 1) &^ (unsafe.Sizeof(uintptr(0)) - 1)
	base := unsafe.Pointer(info)
	pid = int(*(*int32)(unsafe.Add(base, union)))
	status = *(*int32)(unsafe.Add(base, union+8))
	return pid, info.Code, status
}

// EndUsage is the CPU time, in milliseconds, the session's processes used,
// from the leader's reaping (wait4's rusage): the leader's and that of
// every descendant it, or one of its waited-for children, reaped. A
// process that was never waited for (a daemon that left the tree) is not
// counted. ok is false before the reaping, and for a wrapped command: the
// wrapper (bubblewrap) hands its command's status on without the reaping
// that would account the command's time to it.
func (c *osChild) EndUsage() (cpuMs int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.usage == nil || c.wrapped {
		return 0, false
	}
	u := c.usage
	return int64(u.Utime.Sec+u.Stime.Sec)*1000 + int64(u.Utime.Usec+u.Stime.Usec)/1000, true
}

// Release removes the session's cgroup once its processes are gone. An
// error means some may still run: the cgroup was not seen empty (it is
// then kept from reuse and killed again later), or, without a cgroup, the
// last SIGKILL of the process group failed. At the session's end (after
// KillAtEnd) a cgroup that is only dying (contain.Cgroup.Dying: killed,
// and each process left in it already in its exit, such as a sandbox's
// init tearing its namespaces down) runs nothing of the session any
// more: its removal, which waits until the kernel has emptied it, is
// then left to SweepAfterEnd, after the end is reported.
func (c *osChild) Release() error {
	if c.cg != nil {
		peak, ok := c.cg.PeakMemory() // before the cgroup goes or serves another session
		if !ok {
			peak = -1
		}
		c.mu.Lock()
		c.peak = peak
		sweep, atEnd := c.sweep, c.atEnd
		c.mu.Unlock()
		if !sweep {
			c.watchdog.ForgetNamespace(c.cg) // while it is held open: the number is not reused
		}
		if atEnd && !c.cg.EmptyAfterExit() && c.cg.Dying() {
			c.mu.Lock()
			c.remove = true
			c.mu.Unlock()
			return nil
		}
		return c.cg.Remove(time.Second)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.killErr
}

// members lists the session's live processes other than the leader: its
// cgroup's members, else its process group's (processes that left the
// group without a cgroup are not seen). An empty cgroup costs one read,
// and none after that. Only for after the leader's exit.
func (c *osChild) members() ([]int, error) {
	if c.cg != nil {
		if c.cg.EmptyAfterExit() {
			return nil, nil // the zombie leader is no live member
		}
		pids, err := c.cg.Procs()
		if err != nil {
			return nil, err
		}
		return contain.LiveAmong(pids, c.leader), nil
	}
	return contain.GroupMembers(c.leader)
}

// TreePids lists the session's live processes for the input-wait look:
// its cgroup's members, else its process tree walked down from the leader
// and the processes the resource view has seen (see [contain.WalkTree]); only a
// kernel without children files makes it read all of /proc.
func (c *osChild) TreePids() []int {
	if c.cg != nil {
		pids, _ := c.cg.Procs() // an unreadable cgroup: nothing to look at
		return pids
	}
	c.res.mu.Lock()
	known := slices.Clone(c.res.known)
	c.res.mu.Unlock()
	procs, err := contain.WalkTree(c.leader, known)
	if errors.Is(err, contain.ErrNoChildrenFiles) {
		pids, _ := contain.GroupMembers(c.leader)
		return append([]int{c.leader}, pids...)
	}
	pids := make([]int, 0, len(procs))
	for _, p := range procs {
		pids = append(pids, p.Pid)
	}
	return pids
}

// Lingering lists what the exited shell left running. Without a cgroup
// finding the group's members means reading all of /proc, so it looks
// only when something still holds the session's output open: the
// `server &` idiom is found, a job that redirected all its output away is
// not (it is killed with the group, as before).
func (c *osChild) Lingering(outputHeld bool) []session.Lingering {
	if c.wrapped {
		// Nothing outlives the wrapper's pid namespace; bwrap's init may
		// still be on its way out, and the session's end kills it.
		return nil
	}
	if c.cg == nil && !outputHeld {
		return nil
	}
	pids, err := c.members()
	if err != nil {
		return nil // cannot tell: the session ends, and release reports it
	}
	out := make([]session.Lingering, 0, len(pids))
	for _, pid := range pids {
		out = append(out, session.Lingering{Pid: pid, Command: func() string { return contain.CommandLine(pid, 60) }})
	}
	return out
}

// AwaitLingering waits, one pidfd at a time and in the runtime poller,
// until no member is left; it looks again after each exit, so processes
// started meanwhile are waited for too. A kill of the session ends them,
// and so this wait; so does any failure to look or to wait.
func (c *osChild) AwaitLingering() {
	for {
		pids, err := c.members()
		if err != nil || len(pids) == 0 {
			return
		}
		fd, err := unix.PidfdOpen(pids[0], unix.PIDFD_NONBLOCK)
		switch {
		case errors.Is(err, unix.ESRCH):
			continue // it is gone already: look again
		case err != nil:
			// It cannot be waited for (no descriptors left): stop keeping
			// the leftovers. The session ends and kills its group, and
			// Release reports what could not be confirmed.
			return
		}
		f := os.NewFile(uintptr(fd), "pidfd")
		_ = contain.AwaitPidfd(f) // an error means poll failed: looking again tells
		_ = f.Close()
	}
}

// PeekStatus reads the exited leader's wait status from its zombie's
// /proc entry, without reaping it.
func (c *osChild) PeekStatus() (syscall.WaitStatus, error) {
	st, err := contain.ReadStat(c.leader)
	if err != nil {
		return 0, err
	}
	if st.State != 'Z' {
		return 0, errors.New("the leader has not exited")
	}
	return syscall.WaitStatus(st.ExitCode), nil
}

// PeakMemory is the most memory the session's cgroup was charged, in
// bytes, once Release ran (see contain.Cgroup.PeakMemory); ok is false
// without a memory controller for the session, or before Release.
func (c *osChild) PeakMemory() (bytes int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peak, c.peak >= 0
}

// Cgroup is the session's cgroup, nil without one. For tests: the
// process owns it.
func (c *osChild) Cgroup() *contain.Cgroup { return c.cg }

// PidFD is the pidfd the leader is waited on, nil without one. For tests:
// the process owns it.
func (c *osChild) PidFD() *os.File { return c.pidfd }

// InCgroup reports whether c runs in a session cgroup.
func (c *osChild) InCgroup() bool { return c.cg != nil }

// WatchEscapes remembers the session's processes before a kill, when it
// has no cgroup: a process that left the process group survives the
// group's kill (see [contain.EscapeWarning]).
func (c *osChild) WatchEscapes() (func() string, error) {
	if c.cg != nil {
		return nil, nil
	}
	before, err := contain.Descendants(c.leader)
	return func() string { return contain.EscapeWarning(before) }, err
}

// signalWrapped sends sig (not SIGKILL) to the wrapped command's
// processes but the wrapper's own monitor (bwrap), the session leader. bwrap does not pass signals on
// and dies of a SIGTERM at once, and --die-with-parent would then SIGKILL
// the command before it could use the grace period. The sandbox's init
// (its pid 1) has no handlers, so it ignores what a process outside sends
// it; it ends when the command does. c.mu is held.
func (c *osChild) signalWrapped(sig syscall.Signal) error {
	pids, err := c.cg.Procs()
	for _, pid := range pids {
		if pid != c.leader {
			_ = unix.Kill(pid, sig) // Best effort: it may have exited since.
		}
	}
	c.sent = sig
	return err
}

// wrappedStatus turns the status the wrapper (bwrap) reports back into a signal death
// when that is what it stands for: bwrap exits with 128+n when the command
// died of signal n, and when n is the signal the session last sent, the
// command died of it. A signal from inside the sandbox (a crash, a kill
// by another process there) stays the exit code 128+n, since bwrap tells
// nothing more.
func (c *osChild) wrappedStatus(ws syscall.WaitStatus) syscall.WaitStatus {
	if !c.wrapped || c.sent == 0 || !ws.Exited() || ws.ExitStatus() != 128+int(c.sent) {
		return ws
	}
	return syscall.WaitStatus(c.sent) // WIFSIGNALED, WTERMSIG = sent
}
