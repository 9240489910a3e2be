package sandbox

import (
	"context"
	"sync"
	"time"
)

// DefaultPoolSize is how many sandboxes a sandbox host keeps started ahead
// of time, waiting for a command (see [Pool] and [Warm]). Two cover an
// agent that runs its commands one after another, with a spare while the
// next one sets itself up; a burst larger than the pool starts the rest
// cold, as every sandbox started before there was a pool.
const DefaultPoolSize = 2

// Verdict is what a [Pool.Take] filter says of one ready value.
type Verdict int

const (
	// Keep leaves the value in the pool for a later call (it does not
	// fit this one: another working directory).
	Keep Verdict = iota
	// Use hands the value to the caller.
	Use
	// Drop discards the value: it can serve no call any more (a directory
	// it binds is no longer the one at its path).
	Drop
)

// Pool keeps up to a fixed number of values started ahead of time, each
// handed out once and replaced in the background. Here the values are
// sandboxes waiting for their command (see [Warm]), but the pool only
// knows how to start and discard one.
//
// One goroutine, started by [NewPool], starts the values one at a time
// (so a refill never competes with more than one start of its own), each
// once no Take came for [RefillDelay], and discards those dropped; after
// a failed start it waits before trying
// again, from 100 ms doubling up to 30 s, so a host where the sandbox
// cannot start is not hammered, and [Pool.Take] finds nothing meanwhile.
// [Pool.Close] stops it, waits for it and discards every value left.
//
// A Pool is safe for concurrent use. The zero value is not usable; a nil
// *Pool is, and never has anything ready.
type Pool[T any] struct {
	size    int
	start   func() (T, error)
	discard func(T)

	mu       sync.Mutex // guards ready, dropped, closed, changed, taken and lastCall
	ready    []T
	taken    int       // values handed out by Take
	lastCall time.Time // the latest Take, served or not
	dropped  []T
	closed   bool
	changed  chan struct{} // closed and replaced whenever ready grows

	kick chan struct{} // buffered (1): a value was taken or dropped
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the refill goroutine has ended
}

// NewPool returns a pool that keeps size values ready, made by start and
// ended by discard, and starts filling it at once. start runs on the
// pool's goroutine and may block (it returns a value that is ready to
// use); discard runs there too, and in Close and Shed. size must be at
// least 1.
func NewPool[T any](size int, start func() (T, error), discard func(T)) *Pool[T] {
	if size < 1 {
		panic("sandbox: NewPool with size < 1")
	}
	p := &Pool[T]{
		size:    size,
		start:   start,
		discard: discard,
		changed: make(chan struct{}),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go p.run()
	return p
}

// Take hands out the oldest ready value fit says [Use] of, without
// waiting: false when none is ready (the caller starts one cold). Values
// fit says [Drop] of are discarded in the background; those it says
// [Keep] of stay. Every value taken or dropped is replaced in the
// background. fit runs under the pool's lock: it must be quick and must
// not call the pool.
func (p *Pool[T]) Take(fit func(T) Verdict) (T, bool) {
	var zero T
	if p == nil {
		return zero, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return zero, false
	}
	p.lastCall = time.Now()
	kept := p.ready[:0]
	var got T
	found, changed := false, false
	for _, v := range p.ready {
		if found {
			kept = append(kept, v)
			continue
		}
		switch fit(v) {
		case Use:
			got, found, changed = v, true, true
			p.taken++
		case Drop:
			p.dropped = append(p.dropped, v)
			changed = true
		default:
			kept = append(kept, v)
		}
	}
	clear(p.ready[len(kept):]) // no stale references past the end
	p.ready = kept
	if changed {
		select {
		case p.kick <- struct{}{}:
		default: // a kick is already pending
		}
	}
	return got, found
}

// Shed discards every value ready now, on the caller's goroutine, and
// returns how many it discarded; the refill then waits [RefillDelay], as
// after a Take. It is for a host short of what the values hold (here a
// sandbox's descriptors): a start under way is not waited for.
func (p *Pool[T]) Shed() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0
	}
	shed := p.ready
	p.ready = nil
	p.lastCall = time.Now()
	p.mu.Unlock()
	for _, v := range shed {
		p.discard(v)
	}
	if len(shed) > 0 {
		select {
		case p.kick <- struct{}{}:
		default: // a kick is already pending
		}
	}
	return len(shed)
}

// Size is how many values the pool keeps ready; 0 for a nil pool.
func (p *Pool[T]) Size() int {
	if p == nil {
		return 0
	}
	return p.size
}

// Ready is how many values are ready now.
func (p *Pool[T]) Ready() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ready)
}

// Taken is how many values Take has handed out so far.
func (p *Pool[T]) Taken() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.taken
}

// AwaitFull waits until the pool holds its full size of ready values, or
// until ctx ends (its error) or the pool is closed ([context.Canceled]).
func (p *Pool[T]) AwaitFull(ctx context.Context) error {
	for {
		p.mu.Lock()
		n, closed, changed := len(p.ready), p.closed, p.changed
		p.mu.Unlock()
		switch {
		case closed:
			return context.Canceled
		case n >= p.size:
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops the refill, waits for the value being started, if any, and
// discards every value not taken. It can be called any number of times;
// values already taken are their taker's.
func (p *Pool[T]) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.done
		return
	}
	p.closed = true
	close(p.stop)
	close(p.changed)
	p.mu.Unlock()
	<-p.done
	p.mu.Lock()
	left := append(p.ready, p.dropped...)
	p.ready, p.dropped = nil, nil
	p.mu.Unlock()
	for _, v := range left {
		p.discard(v)
	}
}

// RefillDelay is how long the pool waits after the latest call to Take
// before it starts a sandbox: a start costs a few milliseconds of CPU,
// which would otherwise be taken from the command that was just handed
// the sandbox, and from the cold starts of a burst larger than the pool
// (which must not get slower than without a pool). An agent's commands
// come seconds apart, so the pool is full again for the next one.
const RefillDelay = 100 * time.Millisecond

// quietFor is how much longer the refill waits for calls to Take to
// quiet down; 0 when it may start now.
func (p *Pool[T]) quietFor() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastCall.IsZero() {
		return 0
	}
	return RefillDelay - time.Since(p.lastCall)
}

// Refill pauses after a failed start.
const (
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 30 * time.Second
)

// run fills the pool until Close: it discards dropped values, starts one
// value whenever fewer than size are ready, and sleeps until a take or a
// drop otherwise.
func (p *Pool[T]) run() {
	defer close(p.done)
	backoff := time.Duration(0)
	for {
		p.mu.Lock()
		dropped := p.dropped
		p.dropped = nil
		need := !p.closed && len(p.ready) < p.size
		p.mu.Unlock()
		for _, v := range dropped {
			p.discard(v)
		}
		if !need {
			select {
			case <-p.kick:
				continue
			case <-p.stop:
				return
			}
		}
		if backoff > 0 && !p.sleep(backoff) {
			return
		}
		if wait := p.quietFor(); wait > 0 {
			if !p.sleep(wait) {
				return
			}
			continue
		}
		v, err := p.start()
		if err != nil {
			backoff = min(max(2*backoff, firstBackoff), maxBackoff)
			continue
		}
		backoff = 0
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			p.discard(v)
			return
		}
		p.ready = append(p.ready, v)
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}
}

// sleep waits d, or until Close (false).
func (p *Pool[T]) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.stop:
		return false
	}
}
