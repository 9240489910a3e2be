//go:build linux

package local

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// startInCgroup starts a child whose v2 cgroup clone3 sets. Its v1
// cgroups, which clone3 cannot set, it inherits from the forking thread:
// cgroup v1 membership is per thread. A goroutine locked to a thread
// moves that thread into the session's v1 cgroups, forks (os/exec forks
// on the calling thread), and moves the thread back. If the move back
// fails, the goroutine ends still locked, so the runtime ends the thread
// instead of running other goroutines in the session's cgroups. New
// runtime threads are cloned by the runtime's template thread while a
// thread is locked, so none inherits the session's cgroups either.
func startInCgroup(spec *spawnSpec) (*spawned, error) {
	if !spec.cgroup.HasV1() {
		return startChild(spec)
	}
	type result struct {
		sp  *spawned
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var res result
		var home bool
		res.sp, res.err, home = startHere(spec)
		if home {
			runtime.UnlockOSThread()
		}
		done <- res
	}()
	res := <-done
	return res.sp, res.err
}

// startHere forks spec from the calling goroutine's thread, which must be
// locked to it: the thread joins the session's v1 cgroups, forks, and goes
// back. home is false when it could not go back; the caller must then let
// the thread end rather than reuse it.
func startHere(spec *spawnSpec) (sp *spawned, err error, home bool) {
	if !spec.cgroup.HasV1() {
		sp, err = startChild(spec)
		return sp, err, true
	}
	leave, err := spec.cgroup.EnterV1(unix.Gettid())
	if err == nil {
		sp, err = startChild(spec)
	}
	return sp, err, leave()
}

// OOMKilled reports whether the kernel's OOM killer ended a process of
// the session (see [contain.Cgroup.OOMKilled]).
func (c *osChild) OOMKilled() bool { return c.cg.OOMKilled() }
