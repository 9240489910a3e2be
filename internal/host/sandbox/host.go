package sandbox

import (
	"context"
	"errors"
	"os"
	"sync/atomic"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/host/local"
)

// Host runs commands on this machine inside bubblewrap: a fresh sandbox
// per command, started by the local host it wraps (which contains it in
// a cgroup or process group like any local command), in a workdir the
// plan exposes, or a sandbox of its pool (see [NewHost]). It implements
// [host.Host], [host.Placer] and [host.Preparer]. Safe for concurrent
// use.
type Host struct {
	local *local.Host
	plan  *Plan
	pool  *Pool[*warmSandbox] // sandboxes started ahead (pool_host.go); nil: off

	closed atomic.Bool // Close ran: the pool serves nothing more
}

var (
	_ host.Host     = (*Host)(nil)
	_ host.Placer   = (*Host)(nil)
	_ host.Preparer = (*Host)(nil)
)

// NewHost returns the sandbox host of plan, starting its commands through
// l, with a pool of poolSize sandboxes started ahead of time (see [Pool]
// and [Warm]; DefaultPoolSize is the registry's default, below 1 none).
// The pool starts filling at once. Call Close once no session can start
// any more, before l closes. l stays the caller's: it is closed by
// whoever made it.
func NewHost(l *local.Host, plan *Plan, poolSize int) *Host {
	h := &Host{local: l, plan: plan}
	h.pool = newHostPool(h, poolSize)
	return h
}

// Close ends the pool: it stops the refill and ends every sandbox not
// taken (sessions already started are theirs). Call it after every
// session ended and before the local host closes. Idempotent.
func (h *Host) Close() {
	h.closed.Store(true)
	h.pool.Close()
}

// PoolReady is how many sandboxes the pool holds ready now; 0 without a
// pool. For tests and diagnostics.
func (h *Host) PoolReady() int { return h.pool.Ready() }

// PoolTaken is how many sandboxes of the pool sessions have taken. For
// tests and diagnostics.
func (h *Host) PoolTaken() int { return h.pool.Taken() }

// AwaitPool waits until the pool is full (nil at once without a pool or
// after Close), until ctx ends (its error) or until a Close meanwhile
// ([context.Canceled]). For tests that count processes or descriptors.
func (h *Host) AwaitPool(ctx context.Context) error {
	if h.PoolSize() == 0 {
		return nil
	}
	return h.pool.AwaitFull(ctx)
}

// Name is "sandbox".
func (h *Host) Name() string { return "sandbox" }

// Place checks that dir lies in a path the sandbox exposes.
func (h *Host) Place(dir string) string {
	_, _, msg := h.plan.Place(dir)
	return msg
}

// placed is what Prepare left for Start: the workdir's real path and
// whether it lies in a read-only path.
type placed struct {
	real     string
	readOnly bool
}

// Prepare checks spec's workdir and the configured paths (see
// Plan.Prepare).
func (h *Host) Prepare(spec *host.Spec) string {
	real, ro, msg := h.plan.Prepare(spec.Dir)
	if msg != "" {
		return msg
	}
	spec.Prepared = placed{real: real, readOnly: ro}
	return ""
}

// Start starts spec inside a fresh sandbox.
func (h *Host) Start(_ context.Context, spec *host.Spec) (*host.Started, error) {
	pl, ok := spec.Prepared.(placed)
	if !ok {
		if msg := h.Prepare(spec); msg != "" {
			return nil, errors.New(msg)
		}
		pl = spec.Prepared.(placed)
	}
	return h.local.StartWrapped(spec, &local.Wrap{
		Command: func(argv []string, pty bool, extra []*os.File) (string, []string, []*os.File, []*os.File, error) {
			return h.plan.Command(argv, pl.real, pl.readOnly, pty, extra)
		},
		Env:  func(env []string) []string { return h.plan.Environ(env, pl.real, pl.readOnly) },
		Hint: h.plan.ReadOnlyHint(spec.Dir, pl.readOnly),
		Take: h.take(pl),
	})
}
