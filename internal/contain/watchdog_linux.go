//go:build linux

package contain

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// WatchdogScript runs in two small sh processes per registry (see
// watchdog). Its lifeline is a socket only the host holds the other end
// of. The sessions' process groups and cgroup namespaces it learns from
// the list the host keeps in shared memory (see watchList), which it reads
// from fd 3 when the lifeline ends (its second argument is then "list"),
// and from "+ pgid" and "- pgid" lines, and "+n ino" and "-n ino" for
// namespaces, that the host writes to the lifeline when the list is full
// or not available. It keeps the sets as exported shell variables (the
// shell's hash table: constant time per entry, so it keeps up with
// thousands of sessions). When the lifeline reaches EOF, because Close
// ended it or because the host died (even by SIGKILL), it ends every
// session, so none outlives its host as an orphan, and then removes the
// cgroups. In this order:
//
//  1. It freezes the registry's cgroup (cgroup.freeze): one write, and
//     no session process inside runs any more.
//  2. It stops (SIGSTOP) every process of a listed cgroup namespace,
//     wherever its cgroup but another registry's session cgroup: one
//     ls -l of /proc/*/ns/cgroup. When one it
//     found was outside the frozen cgroup (it left it, and could fork
//     meanwhile), it looks again, until a look finds no process it had
//     not seen (at most three looks).
//  3. It kills the registry's cgroup (cgroup.kill), every process group
//     still listed and every process it stopped.
//
// Nothing is killed before the scan, because a namespace whose last
// process died is freed, and the kernel gives its number to the next
// namespace created anywhere on the machine: a later look would then
// kill the processes of a stranger's namespace (another registry's
// session, under a load of tests). Frozen and stopped processes keep
// their namespaces, so every number the scan matches is still the
// session's. And the scan, which reads a link of every process on the
// machine (about 0.35 s of CPU with 2,000 processes, 1-4 s of wall time
// per look at load 20), no longer holds back anything a session could
// do: what it has not stopped yet is frozen. A host killed 0-1 ms after
// the other watchdog once left its sessions running for more than 10 s
// while the scan ran first and killed as it went.
//
// An orderly Close with nothing listed any more (every session ended, and
// the host removes the cgroups itself) sends "q" before it ends the
// lifeline: the watchdog then only kills what is left in the registry's
// cgroup (one write) and exits, without the scan or the clean-up above,
// which cost each watchdog about 40 ms of CPU (subshells and rmdir
// processes) at every registry's Close. Only the host holds the lifeline,
// so only the host can send it.
//
// Nothing it reads is ever parsed as shell code: a line or a record of
// the list counts only if it
// names one process group by a plain decimal number above 1 with at most
// seven digits (pid_max is at most 4194304), or one namespace by a plain
// decimal number of at most 20 digits, and anything else is skipped.
// That keeps a line from running a command, from naming every process
// ("-1") or the watchdog's own group ("-0"), and from making the shell exit
// (unset with a bad name is fatal in sh). The same check guards the kill,
// so a variable the shell did not get from a line (it has no inherited
// environment) cannot name a group either.
const WatchdogScript = `trap '' HUP INT TERM
stopns() {
	b=${2##*/}
	prev=
	r=0
	while [ $r -lt 3 ]; do
		found=$(ls -l /proc/[1-9]*/ns/cgroup 2>/dev/null | while read -r line; do
			n=${line##*-> cgroup:\[}
			n=${n%\]}
			case $n in ''|*[!0-9]*) continue ;; esac
			case "$1 " in *" $n "*) ;; *) continue ;; esac
			q=${line% -> *}
			q=${q##* /proc/}
			q=${q%%/*}
			case $q in ''|*[!0-9]*) continue ;; esac
			out=o
			while IFS= read -r l; do
				case $l in
				0::*/"$b"|0::*/"$b"/*) [ -n "$b" ] && out= ;;
				0::*/bgexec-*/s-*) out=x ;;
				esac
			done < "/proc/$q/cgroup"
			[ "$out" = x ] && continue
			kill -s STOP "$q" 2>/dev/null || continue
			echo "$q$out"
		done)
		found=$(echo $found)
		stopped="$stopped $found"
		case " $found " in *o\ *) ;; *) return ;; esac
		[ "$found" = "$prev" ] && return
		prev=$found
		r=$((r+1))
	done
}
quit=
while read -r op p; do
	case $op in
	q) quit=1; break ;;
	+|-) case $p in ''|*[!0-9]*|0*|1|????????*) continue ;; esac ;;
	+n|-n) case $p in ''|*[!0-9]*|0*|?????????????????????*) continue ;; esac ;;
	*) continue ;;
	esac
	case $op in
	+) export "g_$p=1" ;;
	-) unset "g_$p" ;;
	+n) export "n_$p=1" ;;
	-n) unset "n_$p" ;;
	esac
done
exec </dev/null
if [ -z "$quit" ] && [ "$2" = list ]; then
	while read -r op p; do
		case $op in
		.) break ;;
		+) case $p in ''|*[!0-9]*|0*|1|????????*) continue ;; esac
			export "g_$p=1" ;;
		+n) case $p in ''|*[!0-9]*|0*|?????????????????????*) continue ;; esac
			export "n_$p=1" ;;
		esac
	done <&3
fi
exec 3<&-
if [ -n "$quit" ]; then
	[ -n "$1" ] && echo 1 > "$1/cgroup.kill" 2>/dev/null
	exit 0
fi
[ -n "$1" ] && echo 1 > "$1/cgroup.freeze" 2>/dev/null
nss=$(set | while IFS='=' read -r k _; do
	case $k in n_*) ;; *) continue ;; esac
	p=${k#n_}
	case $p in ''|*[!0-9]*|0*|?????????????????????*) continue ;; esac
	printf ' %s' "$p"
done)
stopped=
[ -n "$nss" ] && stopns "$nss" "$1"
[ -n "$1" ] && echo 1 > "$1/cgroup.kill" 2>/dev/null
set | while IFS='=' read -r k _; do
	case $k in g_*) ;; *) continue ;; esac
	p=${k#g_}
	case $p in ''|*[!0-9]*|0*|1|????????*) continue ;; esac
	kill -s KILL -- "-$p" 2>/dev/null
done
for q in $stopped; do
	q=${q%o}
	case $q in ''|*[!0-9]*) continue ;; esac
	kill -s KILL "$q" 2>/dev/null
done
if [ -n "$1" ]; then
	i=0
	while [ -d "$1" ] && [ $i -lt 50 ]; do
		for d in "$1"/s-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
		rmdir "$1" 2>/dev/null
		i=$((i+1))
		[ -d "$1" ] && sleep 0.1
	done
fi
`

// WatchdogEnvPath is the watchdog's whole environment. Nothing of the
// host's is passed on: no variable (IFS, PATH, ENV, a g_ name) may steer it.
// Other helper processes that need nothing of the host's environment (the
// sandbox's probes) get it too.
const WatchdogEnvPath = "PATH=/usr/sbin:/usr/bin:/sbin:/bin"

// Watchdog is the host side of the watchdog processes. It runs two, each
// with a lifeline of its own, reading the same list and each told every
// line, so that killing one leaves the other to act if the host dies
// before a replacement is up (starting one takes a few milliseconds: the
// window in which a host killed right after its only watchdog left its
// sessions running). It keeps the process groups and namespaces in the
// list (see watchList) and remembers those it sent as lines, and if a
// watchdog process dies while the registry is open (someone killed it),
// that slot's keeper goroutine starts another, which reads the list, and
// sends it the lines again. The
// keepers start with the first spawn: a registry that never spawns needs
// none, and one waiting in the runtime poller would keep a
// testing/synctest bubble from ever idling. Its methods are safe for
// concurrent use and on a nil receiver (no watchdog).
type Watchdog struct {
	cgroupDir string
	list      *watchList    // nil: every entry is sent as a line
	stop      chan struct{} // closed by close
	keepers   sync.WaitGroup

	mu    sync.Mutex // serialises lines, restarts and close
	procs [WatchdogCount]*watchdogProc
	// lined are the entries ("+ 123" for a process group, "+n 456" for a
	// namespace) not in the list, which every watchdog process is sent
	// as lines.
	lined    map[string]struct{}
	keeping  bool // the keepers were started
	closed   bool
	restarts int
}

// WatchdogCount is how many watchdog processes a registry runs: one to
// spare, so that no single kill opens a window.
const WatchdogCount = 2

// watchdogProc is one watchdog process and the host's end of its lifeline.
type watchdogProc struct {
	cmd      *exec.Cmd
	lifeline *os.File // the host's end
	pidfd    *os.File // nil without pidfd_open: the keeper then blocks in Wait
	// list: it reads the list when its lifeline ends. Else (its read-only
	// description of the list could not be opened) it is sent every entry
	// as a line.
	list bool
}

// StartWatchdog starts the two watchdog processes of a registry whose
// cgroup is cgroupDir ("" without one). Close ends them.
func StartWatchdog(cgroupDir string) (*Watchdog, error) {
	return startWatchdog(cgroupDir, listSlots)
}

// startWatchdog is StartWatchdog with a list of the given number of slots;
// 0 for none, so that every entry is sent as a line.
func startWatchdog(cgroupDir string, slots int) (*Watchdog, error) {
	w := &Watchdog{
		cgroupDir: cgroupDir,
		stop:      make(chan struct{}),
		lined:     make(map[string]struct{}),
	}
	if slots > 0 {
		// Without the list (a kernel before 5.1, no memfd), lines.
		w.list, _ = newWatchList(slots)
	}
	for i := range w.procs {
		p, err := startWatchdogProc(cgroupDir, w.list)
		if err != nil {
			w.Close()
			return nil, err
		}
		w.procs[i] = p
	}
	return w, nil
}

// KeepAlive starts the keepers unless they run already or the watchdog
// is closed.
func (w *Watchdog) KeepAlive() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.keeping && !w.closed {
		w.keeping = true
		for i := range w.procs {
			w.keepers.Add(1)
			go w.keep(i)
		}
	}
}

// newLifeline returns the two ends of a watchdog's lifeline: the host
// writes to host, the watchdog reads from child. It is an AF_UNIX socket
// pair, not a pipe, so that no other process can write orders into it: a
// pipe can be opened again through /proc/<pid>/fd/N by any process of the
// same user, but opening a socket there fails (ENXIO). Only a process
// allowed to ptrace the watchdog or the host (pidfd_getfd, or taking
// either over) can reach it.
func newLifeline() (host, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	// One way only. Best effort: nothing reads the host's end anyway.
	_ = unix.Shutdown(fds[0], unix.SHUT_RD)
	_ = unix.Shutdown(fds[1], unix.SHUT_WR)
	// The host's end goes into the runtime poller, as a pipe's would; the
	// watchdog's stays blocking, since sh takes EAGAIN for the end of input.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		_ = unix.Close(fds[0])
		_ = unix.Close(fds[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fds[0]), "lifeline"), os.NewFile(uintptr(fds[1]), "lifeline"), nil
}

// watchdogCommand returns the watchdog process, reading its orders from
// in, and from list (its fd 3) when that is not nil. Its argv, environment
// and working directory are fixed.
func watchdogCommand(cgroupDir string, in, list *os.File) *exec.Cmd {
	args := []string{"-c", WatchdogScript, "bgexec-watchdog", cgroupDir}
	if list != nil {
		args = append(args, "list")
	}
	cmd := exec.Command("/bin/sh", args...)
	cmd.Env = []string{WatchdogEnvPath}
	cmd.Dir = "/"
	cmd.Stdin = in
	if list != nil {
		cmd.ExtraFiles = []*os.File{list}
	}
	// Its own process group, so nothing aimed at a session reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// startWatchdogProc starts one watchdog process, reading list when it is
// not nil and a description of it can be opened (see watchdogProc.list).
func startWatchdogProc(cgroupDir string, list *watchList) (*watchdogProc, error) {
	var lf *os.File
	if list != nil {
		if f, err := list.reader(); err == nil {
			defer f.Close()
			lf = f
		}
	}
	w, r, err := newLifeline()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := watchdogCommand(cgroupDir, r, lf)
	// A descriptor the host inherited would stay open in the watchdog,
	// where any session could open it again through /proc.
	CloseOnExecAbove2()
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("bgexec: start watchdog: %w", err)
	}
	p := &watchdogProc{cmd: cmd, lifeline: w, list: lf != nil}
	if fd, err := unix.PidfdOpen(cmd.Process.Pid, unix.PIDFD_NONBLOCK); err == nil {
		p.pidfd = os.NewFile(uintptr(fd), "pidfd")
	}
	return p, nil
}

// reap waits for the process to end and reaps it. The lifeline is the
// watchdog's to close, under its lock.
func (p *watchdogProc) reap() {
	if p.pidfd != nil {
		_ = AwaitPidfd(p.pidfd) // in the runtime poller: no thread held
		_ = p.pidfd.Close()
	}
	_ = p.cmd.Wait()
}

// keep waits for the watchdog process in slot i to end. Unless close
// ended it, it starts another one, which reads the same list, and sends
// it every group and namespace listed by line again; if that fails it
// tries again every second.
func (w *Watchdog) keep(i int) {
	defer w.keepers.Done()
	for {
		w.mu.Lock()
		p := w.procs[i]
		w.mu.Unlock()
		if p != nil {
			p.reap()
		}
		w.mu.Lock()
		if p != nil && p.lifeline != nil {
			_ = p.lifeline.Close()
			p.lifeline = nil
		}
		w.procs[i] = nil
		if w.closed {
			w.mu.Unlock()
			return
		}
		np, err := startWatchdogProc(w.cgroupDir, w.list)
		if err == nil {
			w.restarts++
			w.procs[i] = np
			for e := range w.lined {
				_, _ = np.lifeline.Write([]byte(e + "\n"))
			}
			if !np.list && w.list != nil {
				for e := range w.list.slots {
					_, _ = np.lifeline.Write([]byte(e + "\n"))
				}
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

func (w *Watchdog) send(op string, pgid int) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.orderLocked(op, strconv.Itoa(pgid))
}

// orderLocked lists (op "+" or "+n") or unlists ("-" or "-n") one entry:
// in the list when it has room (unlisting where it was listed), else by
// a line to every watchdog process. A watchdog process that does not read
// the list is sent the line either way. An entry listed by line stays
// there until it is unlisted, so that no entry is in both. Unlisting an
// entry that was never listed sends nothing.
func (w *Watchdog) orderLocked(op, value string) {
	key := "+" + op[1:] + " " + value
	_, lined := w.lined[key]
	inList := false
	if w.list != nil && !lined {
		if op[0] == '+' {
			inList = w.list.add(op, value)
		} else {
			inList = w.list.remove(key[:len(op)], value)
		}
	}
	if op[0] == '-' && !inList && !lined {
		// Never listed: no watchdog process knows of it, and a line would
		// only wake them all (a cgroup session's group, which the cgroup's
		// kill covers, is forgotten at its end without ever being watched).
		return
	}
	if !inList {
		if op[0] == '+' {
			w.lined[key] = struct{}{}
		} else {
			delete(w.lined, key)
		}
	}
	line := []byte(op + " " + value + "\n")
	for _, p := range w.procs {
		if p != nil && p.lifeline != nil && (!inList || !p.list) {
			_, _ = p.lifeline.Write(line)
		}
	}
}

// WatchNamespace registers the cgroup namespace of a session's cgroup c
// (see [Cgroup.OpenNamespace]), whose processes it kills if the host dies,
// wherever their cgroup; nothing without one. The host holds the
// namespace open until ForgetNamespace, so the number names no other.
func (w *Watchdog) WatchNamespace(c *Cgroup) {
	if c.Namespaced() {
		w.watchNamespace(c.ns.ino)
	}
}

// ForgetNamespace unregisters the cgroup namespace of c, if it has one;
// call it before [Cgroup.Remove], while the namespace is still held open.
func (w *Watchdog) ForgetNamespace(c *Cgroup) {
	if c.Namespaced() {
		w.forgetNamespace(c.ns.ino)
	}
}

// watchNamespace registers a cgroup namespace by its inode number.
func (w *Watchdog) watchNamespace(ino uint64) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.orderLocked("+n", strconv.FormatUint(ino, 10))
}

// forgetNamespace unregisters a cgroup namespace by its inode number.
func (w *Watchdog) forgetNamespace(ino uint64) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.orderLocked("-n", strconv.FormatUint(ino, 10))
}

// writeLocked tells every watchdog process a line.
func (w *Watchdog) writeLocked(line string) {
	for _, p := range w.procs {
		if p != nil && p.lifeline != nil {
			_, _ = p.lifeline.Write([]byte(line))
		}
	}
}

// Watch registers a process group to kill if the host dies.
func (w *Watchdog) Watch(pgid int) { w.send("+", pgid) }

// Forget unregisters a process group; call it before reaping its leader,
// while the pgid cannot be reused.
func (w *Watchdog) Forget(pgid int) { w.send("-", pgid) }

// Pid is the pid of the first watchdog process, or 0 between a death and
// its replacement.
func (w *Watchdog) Pid() int { return w.PidOf(0) }

// PidOf is the pid of watchdog process i (0 or 1), or 0 between a death and its
// replacement.
func (w *Watchdog) PidOf(i int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.procs[i] == nil {
		return 0
	}
	return w.procs[i].cmd.Process.Pid
}

// Close ends the watchdog processes (they find nothing left to kill) and
// waits for the keepers, which reap them.
func (w *Watchdog) Close() {
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
	if len(w.lined) == 0 && (w.list == nil || w.list.empty()) {
		// Nothing is listed: every session ended, and the host removes
		// its cgroups itself.
		w.writeLocked("q\n")
	}
	procs := w.procs
	for _, p := range procs {
		if p != nil && p.lifeline != nil {
			_ = p.lifeline.Close()
			p.lifeline = nil
		}
	}
	keeping := w.keeping
	w.mu.Unlock()
	if keeping {
		w.keepers.Wait() // the keepers reap them
	} else {
		for _, p := range procs {
			if p != nil {
				p.reap()
			}
		}
	}
	if w.list != nil {
		w.list.close() // nothing changes it once closed is set
	}
}
