//go:build linux

package local

import (
	"fmt"
	"runtime"

	"github.com/bgexec/bgexec/internal/contain"
)

// spawner forks every child outside a cgroup from OS threads that live as
// long as the host. Pdeathsig fires when the thread that forked a child
// exits, not when the process does, and the Go runtime may end a thread (a
// goroutine that exits while locked to it). Forking from dedicated locked
// threads makes Pdeathsig mean "the host process died". Several threads
// (spawnerThreads) serve the one queue, so concurrent execs fork in
// parallel rather than one after the other.
type spawner struct {
	reqs chan spawnCall
}

// spawnerThreads is how many spawner threads a host runs: one per CPU the
// Go scheduler uses (GOMAXPROCS), at most 4. More would not fork faster,
// and each is an OS thread for the host's life.
func spawnerThreads() int { return min(max(runtime.GOMAXPROCS(0), 1), 4) }

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
			// startHere may fail to bring the thread back from a
			// session's cgroup v1 directories (a write to a tasks file
			// this thread was just in; not seen happen). The thread
			// cannot end without killing every child it forked with
			// Pdeathsig, so it goes on serving: later children are
			// then counted in that session's v1 cgroups too.
			sp, err, _ := startHere(c.spec)
			c.reply <- spawnResult{sp, err}
		}
	}
}

// spawn starts spec in a cgroup of its own when containment is on.
func (h *Host) spawn(spec *spawnSpec) (*spawned, error) {
	if h.cgroups != nil {
		cg, err := h.cgroups.NewSession()
		if err != nil {
			return nil, fmt.Errorf("create session cgroup: %w", err)
		}
		if err := h.attach(cg); err != nil {
			_ = cg.Remove(0) // Best effort: it is fresh and empty.
			return nil, fmt.Errorf("set the session's limits: %w", err)
		}
		spec.cgroup = cg
	}
	sp, err := h.spawnChild(spec)
	if spec.cgroup != nil {
		if err != nil {
			if spec.cgroup.Remove(0) != nil {
				h.kick() // the owner's sweeper retries it (Sweep)
			}
			spec.cgroup = nil
		} else {
			spec.cgroup.CloseFD() // only the clone needed it
		}
	}
	return sp, err
}

// attach gives cg the limits, unless DropLimits took them away.
func (h *Host) attach(cg *contain.Cgroup) error {
	if h.bare {
		return nil
	}
	return h.limits.Attach(cg)
}

// spawnChild starts spec. A child in a cgroup is forked right on the
// calling goroutine's thread, without Pdeathsig: clone3 places it in its
// cgroup, inside the registry's, before its first instruction, and the
// watchdog kills the registry's cgroup as a whole when the host dies. The
// hop to the spawner thread and back would cost about 6 % of a spawn.
// Any other child is forked on the spawner thread with Pdeathsig, and its
// process group is listed with the watchdog.
func (h *Host) spawnChild(spec *spawnSpec) (*spawned, error) {
	h.watchdog.KeepAlive()
	if spec.cgroup != nil && spec.wrap == nil {
		sp, err := startInCgroup(spec)
		if err == nil && spec.cgroup.Namespaced() {
			if oc, ok := sp.child.(*osChild); ok {
				oc.watchdog = h.watchdog
				h.watchdog.WatchNamespace(spec.cgroup)
			}
		}
		return sp, err
	}
	// bwrap --die-with-parent ties bwrap's own life to the thread that
	// forked it: a wrapped command is forked on the spawner thread even
	// in a cgroup.
	spec.pdeathsig = spec.cgroup == nil
	c := spawnCall{spec: spec, reply: make(chan spawnResult, 1)}
	select {
	case h.spawner.reqs <- c:
	case <-h.stop:
		return nil, ErrClosed
	}
	res := <-c.reply
	if res.err == nil && spec.cgroup == nil {
		if oc, ok := res.sp.child.(*osChild); ok {
			oc.watchdog = h.watchdog
			h.watchdog.Watch(oc.Pid())
		}
	}
	return res.sp, res.err
}
