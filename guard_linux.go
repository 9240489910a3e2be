//go:build linux

package bgexec

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// spawner forks every child outside a cgroup from one OS thread that lives as long as the
// registry. Pdeathsig fires when the thread that forked a child exits, not
// when the process does, and the Go runtime may end a thread (a goroutine
// that exits while locked to it). Forking from a dedicated locked thread
// makes Pdeathsig mean "the host process died".
type spawner struct {
	reqs chan spawnCall
}

type spawnCall struct {
	spec  *spawnSpec
	reply chan spawnResult
}

type spawnResult struct {
	sp  *spawned
	err error
}

// run serves spawn requests until stop is closed. It keeps its thread
// locked for life; when it returns the thread ends with it, after every
// child has been killed by Close.
func (s *spawner) run(stop <-chan struct{}) {
	runtime.LockOSThread()
	for {
		select {
		case <-stop:
			return
		case c := <-s.reqs:
			sp, err := startChild(c.spec)
			c.reply <- spawnResult{sp, err}
		}
	}
}

// spawnChild starts spec. A child in a cgroup is forked right on the
// calling goroutine's thread, without Pdeathsig: clone3 places it in its
// cgroup, inside the registry's, before its first instruction, and the
// watchdog kills the registry's cgroup as a whole when the host dies. The
// hop to the spawner thread and back would cost about 6 % of a spawn.
// Any other child is forked on the spawner thread with Pdeathsig, and its
// process group is listed with the watchdog.
func (r *Registry) spawnChild(spec *spawnSpec) (*spawned, error) {
	r.watchdog.keepAlive()
	if spec.cgroup != nil {
		return startChild(spec)
	}
	spec.pdeathsig = true
	c := spawnCall{spec: spec, reply: make(chan spawnResult, 1)}
	select {
	case r.spawner.reqs <- c:
	case <-r.stop:
		return nil, ErrClosed
	}
	res := <-c.reply
	if res.err == nil {
		if oc, ok := res.sp.child.(*osChild); ok {
			oc.watchdog = r.watchdog
			r.watchdog.watch(oc.pid())
		}
	}
	return res.sp, res.err
}

// watchdogScript runs in a small sh process per registry. It reads "+ pgid"
// and "- pgid" lines from a pipe only the host holds open, keeping the set
// as shell variables (the shell's hash table: constant time per line, so it
// keeps up with thousands of sessions); when the pipe
// reaches EOF, because Close ended it or because the host died (even by
// SIGKILL), it kills every process group still listed and the registry's
// cgroup, so no session outlives its host as an orphan.
const watchdogScript = `trap '' HUP INT TERM
while read -r op p; do
	case "$op$p" in
	+[0-9]*) eval "g_$p=1" ;;
	-[0-9]*) unset "g_$p" ;;
	esac
done
set | while IFS='=' read -r k _; do
	case "$k" in g_[0-9]*) kill -s KILL -- "-${k#g_}" 2>/dev/null ;; esac
done
if [ -n "$1" ]; then
	echo 1 > "$1/cgroup.kill" 2>/dev/null
	i=0
	while [ -d "$1" ] && [ $i -lt 50 ]; do
		for d in "$1"/s-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
		rmdir "$1" 2>/dev/null
		i=$((i+1))
		[ -d "$1" ] && sleep 0.1
	done
fi
`

// watchdog is the host side of the watchdog process. It remembers the
// listed process groups, and if the process dies while the registry is
// open (someone killed it), a keeper goroutine starts another and lists
// them again. The keeper starts with the first spawn: a registry that
// never spawns needs none, and one waiting in the runtime poller would
// keep a testing/synctest bubble from ever idling. Its methods are safe
// for concurrent use and on a nil receiver (no watchdog).
type watchdog struct {
	cgroupDir string
	stop      chan struct{} // closed by close
	done      chan struct{} // closed when the keeper returns

	mu       sync.Mutex // serialises lines, restarts and close
	proc     *watchdogProc
	groups   map[int]struct{} // listed process groups
	keeping  bool             // the keeper was started
	closed   bool
	restarts int
}

// watchdogProc is one watchdog process and the write end of its pipe.
type watchdogProc struct {
	cmd      *exec.Cmd
	lifeline *os.File // write end
	pidfd    *os.File // nil without pidfd_open: the keeper then blocks in Wait
}

func startWatchdog(cgroupDir string) (*watchdog, error) {
	p, err := startWatchdogProc(cgroupDir)
	if err != nil {
		return nil, err
	}
	w := &watchdog{
		cgroupDir: cgroupDir,
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		proc:      p,
		groups:    make(map[int]struct{}),
	}
	return w, nil
}

// keepAlive starts the keeper unless it runs already or the watchdog is
// closed.
func (w *watchdog) keepAlive() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.keeping && !w.closed {
		w.keeping = true
		go w.keep()
	}
}

func startWatchdogProc(cgroupDir string) (*watchdogProc, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "bgexec-watchdog", cgroupDir)
	cmd.Stdin = r
	// Its own process group, so nothing aimed at a session reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("bgexec: start watchdog: %w", err)
	}
	p := &watchdogProc{cmd: cmd, lifeline: w}
	if fd, err := unix.PidfdOpen(cmd.Process.Pid, unix.PIDFD_NONBLOCK); err == nil {
		p.pidfd = os.NewFile(uintptr(fd), "pidfd")
	}
	return p, nil
}

// reap waits for the process to end and reaps it. The lifeline is the
// watchdog's to close, under its lock.
func (p *watchdogProc) reap() {
	if p.pidfd != nil {
		_ = awaitPidfd(p.pidfd) // in the runtime poller: no thread held
		_ = p.pidfd.Close()
	}
	_ = p.cmd.Wait()
}

// keep waits for the watchdog process to end. Unless close ended it, it
// starts another one and lists every group again; if that fails it tries
// again every second.
func (w *watchdog) keep() {
	defer close(w.done)
	for {
		w.mu.Lock()
		p := w.proc
		w.mu.Unlock()
		if p != nil {
			p.reap()
		}
		w.mu.Lock()
		if p != nil && p.lifeline != nil {
			_ = p.lifeline.Close()
			p.lifeline = nil
		}
		w.proc = nil
		if w.closed {
			w.mu.Unlock()
			return
		}
		np, err := startWatchdogProc(w.cgroupDir)
		if err == nil {
			w.restarts++
			w.proc = np
			for g := range w.groups {
				_, _ = np.lifeline.Write([]byte("+ " + strconv.Itoa(g) + "\n"))
			}
		}
		w.mu.Unlock()
		if err != nil {
			select {
			case <-w.stop:
				return
			case <-time.After(time.Second):
			}
		}
	}
}

func (w *watchdog) send(op string, pgid int) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if op == "+" {
		w.groups[pgid] = struct{}{}
	} else {
		delete(w.groups, pgid)
	}
	if w.proc != nil && w.proc.lifeline != nil {
		_, _ = w.proc.lifeline.Write([]byte(op + " " + strconv.Itoa(pgid) + "\n"))
	}
}

// watch registers a process group to kill if the host dies.
func (w *watchdog) watch(pgid int) { w.send("+", pgid) }

// forget unregisters a process group; call it before reaping its leader,
// while the pgid cannot be reused.
func (w *watchdog) forget(pgid int) { w.send("-", pgid) }

// pid is the current watchdog process's pid, or 0 between a death and its
// replacement.
func (w *watchdog) pid() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.proc == nil {
		return 0
	}
	return w.proc.cmd.Process.Pid
}

// close ends the watchdog (it finds nothing left to kill) and waits for
// the keeper, which reaps it.
func (w *watchdog) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	close(w.stop)
	p := w.proc
	if p != nil {
		_ = p.lifeline.Close()
		p.lifeline = nil
	}
	keeping := w.keeping
	w.mu.Unlock()
	if keeping {
		<-w.done // the keeper reaps it
	} else if p != nil {
		p.reap()
	}
}
