//go:build linux

package contain

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// nsReaper kills what is left in the cgroup namespaces of a Root's
// sessions beside their exit path. A session's end used to scan /proc for
// the processes of its namespace on its own path, before anything else of
// the end: a readlink of every process on the host, about a quarter of a
// foreground exec's CPU and more of its latency. The reaper's goroutine
// does the scan instead, while the session's end goes on (reaping the
// shell, draining its output, closing its files), one scan for every
// namespace handed to it since its last look, and looks again (after 1
// ms, after 100 ms once a namespace has resisted nsKillBound) until a
// look finds none of a namespace's processes. [Cgroup.Remove], the last
// step of the end, waits for that verdict, so the end is still reported
// only once nothing of the namespace runs: what changes is that the scan
// overlaps the rest of the end instead of preceding it.
//
// A namespace stays held open, and listed with the watchdogs, until the
// reaper is done with it: [Watchdog.ForgetNamespace] hands its part over
// while the reaper still looks, so the namespace's number names no other
// namespace and the host's death still ends its processes.
// [Root.Remove] waits for the reaper.
//
// The zero value is ready; its goroutine starts with the first namespace.
// Its methods are safe for concurrent use.
type nsReaper struct {
	mu      sync.Mutex
	pending map[*namespace]*nsPending // namespaces to look for
	running bool                      // the goroutine was started
	stopped bool                      // Root.Remove began: kill on the caller's path
	wake    chan struct{}             // capacity 1: there is work
	stop    chan struct{}             // closed by close
	done    chan struct{}             // closed when the goroutine ends
	err     error                     // namespaces given up at close
}

// nsPending is what waits for a namespace's last process: the watchdog's
// forget (in the order handed over), and done, closed after them.
type nsPending struct {
	after []func()
	done  chan struct{}
}

// enqueue hands n to the reaper and reports true, or reports false when
// the reaper is closing (the caller then kills on its own path).
func (r *nsReaper) enqueue(n *namespace) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return false
	}
	if r.pending == nil {
		r.pending = map[*namespace]*nsPending{}
	}
	if r.pending[n] == nil {
		r.pending[n] = &nsPending{done: make(chan struct{})}
	}
	if !r.running {
		r.running = true
		r.wake = make(chan struct{}, 1)
		r.stop = make(chan struct{})
		r.done = make(chan struct{})
		go r.run(r.wake, r.stop)
	}
	select {
	case r.wake <- struct{}{}:
	default: // a wake-up is due already
	}
	return true
}

// after runs f once the reaper is done with n, or now when it is not
// looking for n. Nil-safe.
func (r *nsReaper) after(n *namespace, f func()) {
	if r != nil && n != nil {
		r.mu.Lock()
		if p := r.pending[n]; p != nil {
			p.after = append(p.after, f)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
	f()
}

// await waits, at most bound, until the reaper is done with n (at once
// when it is not looking for n), and reports whether it is. Nil-safe.
func (r *nsReaper) await(n *namespace, bound time.Duration) bool {
	if r == nil {
		return true
	}
	r.mu.Lock()
	p := r.pending[n]
	r.mu.Unlock()
	if p == nil {
		return true
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// close stops the goroutine after a last bounded look for every pending
// namespace, and reports the namespaces it gave up on. Later namespaces
// are killed on their caller's path.
func (r *nsReaper) close() error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	running := r.running
	if running {
		close(r.stop)
	}
	r.mu.Unlock()
	if !running {
		return nil
	}
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// run is the reaper's goroutine.
func (r *nsReaper) run(wake, stop <-chan struct{}) {
	defer close(r.done)
	sc := new(procScan)
	for {
		select {
		case <-stop:
			r.finish(sc)
			return
		default:
		}
		select {
		case <-wake:
			r.reap(sc, stop)
		case <-stop:
		}
	}
}

// reap looks until no namespace is pending, or until stop.
func (r *nsReaper) reap(sc *procScan, stop <-chan struct{}) {
	first := time.Now()
	for {
		if r.look(sc) {
			return
		}
		wait := time.Millisecond
		if time.Since(first) > nsKillBound {
			wait = 100 * time.Millisecond // a namespace forking as fast as it is killed
		}
		select {
		case <-stop:
			return
		case <-time.After(wait):
		}
	}
}

// finish looks for the pending namespaces for at most nsKillBound more,
// then gives up on those still found and releases them.
func (r *nsReaper) finish(sc *procScan) {
	deadline := time.Now().Add(nsKillBound)
	for !r.look(sc) {
		if time.Now().After(deadline) {
			r.mu.Lock()
			var left []*namespace
			for n := range r.pending {
				left = append(left, n)
			}
			r.mu.Unlock()
			r.release(left)
			r.mu.Lock()
			r.err = errors.Join(r.err, fmt.Errorf("processes of %d cgroup namespaces still ran %v after SIGKILL", len(left), nsKillBound))
			r.mu.Unlock()
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// look scans /proc once for every pending namespace, SIGKILLs what it
// finds, releases the namespaces it found nothing of, and reports whether
// none is pending now.
func (r *nsReaper) look(sc *procScan) bool {
	r.mu.Lock()
	batch := make([]*namespace, 0, len(r.pending))
	for n := range r.pending {
		batch = append(batch, n)
	}
	r.mu.Unlock()
	if len(batch) == 0 {
		return true
	}
	found, err := scanKill(sc, batch)
	var clean []*namespace
	if err == nil {
		for i, n := range batch {
			if found[i] == 0 {
				clean = append(clean, n)
			}
		}
	}
	r.release(clean)
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending) == 0
}

// release forgets the namespaces and runs what waited for them, in the
// order it was handed over, including what is handed over meanwhile.
func (r *nsReaper) release(ns []*namespace) {
	for _, n := range ns {
		for {
			r.mu.Lock()
			p := r.pending[n]
			if p == nil {
				r.mu.Unlock()
				break
			}
			if len(p.after) == 0 {
				delete(r.pending, n)
				r.mu.Unlock()
				close(p.done)
				break
			}
			run := p.after
			p.after = nil
			r.mu.Unlock()
			for _, f := range run {
				f()
			}
		}
	}
}
