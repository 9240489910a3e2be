//go:build linux

package contain

import (
	"bytes"
	"errors"
	"os"
	"strconv"
)

// The processes of a session's cgroup namespace were all forked after its
// first process, so their pids are among those the kernel handed out since
// then. The kernel hands pids out in turn, upward from the last one given,
// skipping those in use, and wraps at pid_max (to 300, or 1 early in a
// pid namespace's life). As long as it has not gone all the way round
// since the first process, every pid given since lies on the arc from that
// process's pid up to the last pid given (wrapping), and a look at those
// few pids finds every process of the namespace: no scan of /proc, whose
// cost grows with every process on the machine, is needed.
//
// The turn is bounded from two counts the kernel keeps: the forks since
// boot (every process and thread created on the machine, in any pid
// namespace: at least the pids given in this one), and the tasks alive.
// The allocator moves one step per pid given and one per pid in use it
// skips. A pid it skips was given since the session started, or was in
// use then: as a task's own pid, or as the number of a process group or
// session, each of which some task belonged to, so at most three per
// task alive then. So it moved at most 2×forks + 3×tasks steps, and while
// that is less than a turn, the arc is complete.

// pidMark is what the kernel's counts were just before a session's first
// process was forked.
type pidMark struct {
	forks uint64 // forks since boot
	tasks uint64 // tasks alive on the machine
}

// maxArc bounds the pids a look probes one by one; a longer arc (a long
// session on a busy machine) is looked at by a scan of /proc instead.
const maxArc = 1024

// markPids reads the kernel's counts; ok is false when it cannot.
func markPids() (pidMark, bool) {
	forks, err := forkCount()
	if err != nil {
		return pidMark{}, false
	}
	_, tasks, err := lastPid()
	if err != nil {
		return pidMark{}, false
	}
	return pidMark{forks: forks, tasks: tasks}, true
}

// arcSince returns the pids the kernel may have given since first was
// forked (first included), in this process's pid namespace, given the
// counts m read before that fork. ok is false when that cannot be known
// for certain or the arc is longer than maxArc: the caller then scans
// /proc.
func arcSince(first int, m pidMark) ([]int, bool) {
	pidMax, err := readInt("/proc/sys/kernel/pid_max")
	if err != nil || first < 1 || first >= pidMax {
		return nil, false
	}
	forks, err := forkCount()
	if err != nil || forks < m.forks {
		return nil, false
	}
	last, _, err := lastPid()
	if err != nil || last < 1 || last >= pidMax {
		return nil, false
	}
	if steps := 2*(forks-m.forks) + 3*m.tasks; steps+uint64(maxArc) >= uint64(pidMax) {
		return nil, false // it may have gone round: the arc is not known
	}
	return pidArc(first, last, pidMax)
}

// pidArc returns the pids from first up to last, wrapping at pidMax to 1
// (so that every low pid is in), and false when that is more than maxArc.
func pidArc(first, last, pidMax int) ([]int, bool) {
	n := last - first
	if n < 0 {
		n += pidMax
	}
	if n >= maxArc {
		return nil, false
	}
	pids := make([]int, 0, n+1)
	for p := first; len(pids) <= n; {
		pids = append(pids, p)
		if p++; p >= pidMax {
			p = 1
		}
	}
	return pids, true
}

// forkCount reads the forks since boot, the "processes" line of
// /proc/stat.
func forkCount() (uint64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("processes ")); ok {
			return strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	return 0, errors.New("/proc/stat has no processes line")
}

// lastPid reads /proc/loadavg ("0.00 0.01 0.05 1/345 30750"): the last
// pid given in this process's pid namespace, and the tasks alive on the
// machine.
func lastPid() (last int, tasks uint64, err error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, 0, err
	}
	f := bytes.Fields(b)
	if len(f) < 5 {
		return 0, 0, errors.New("/proc/loadavg has fewer than 5 fields")
	}
	_, total, found := bytes.Cut(f[3], []byte("/"))
	if !found {
		return 0, 0, errors.New("/proc/loadavg has no task count")
	}
	if tasks, err = strconv.ParseUint(string(total), 10, 64); err != nil {
		return 0, 0, err
	}
	last, err = strconv.Atoi(string(f[4]))
	return last, tasks, err
}

// readInt reads a file holding one decimal number.
func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(bytes.TrimSpace(b)))
}
