package sandbox

import (
	"errors"
	"os"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/host/local"
)

// The sandbox host keeps its pool's sandboxes started ahead of time (see
// [Pool] and [Warm]). Each is started through the local host exactly as
// a cold sandbox is (local.Host.StartHeld): in a session cgroup of its
// own created for it with the limits, or, without cgroups, in a process
// group of its own on the spawner thread, listed with the watchdog. A
// session that takes one therefore gets the containment a cold start
// would have given it; only the command, its environment and its stdin
// are chosen at the take. What a warm sandbox cannot serve starts cold.

// warmSandbox is one sandbox of the pool: the stub's control and the
// held bwrap process.
type warmSandbox struct {
	w    *Warm
	held *local.Held
}

// warmReadyTimeout bounds a warm sandbox's set-up.
const warmReadyTimeout = 20 * time.Second

// newHostPool starts the pool of h, nil when it is off (size below 1).
func newHostPool(h *Host, size int) *Pool[*warmSandbox] {
	if size < 1 {
		return nil
	}
	return NewPool(size, h.startWarm, (*warmSandbox).discard)
}

// startWarm starts one warm sandbox and waits until it is ready. It
// starts none when the host process is short of descriptors (see
// contain.DescriptorRefusal): a waiting sandbox holds several, and must
// not take those the host keeps in reserve, nor the room of a session's
// cold start. The pool then backs off and tries again later.
func (h *Host) startWarm() (*warmSandbox, error) {
	if text := contain.DescriptorRefusal(); text != "" {
		return nil, errors.New("sandbox pool: no sandbox started ahead: " + text)
	}
	w, err := h.plan.NewWarm()
	if err != nil {
		return nil, err
	}
	command := func(argv []string, pty bool, extra []*os.File) (string, []string, []*os.File, []*os.File, error) {
		return w.Command(argv, w.Dir(), w.ReadOnly(), pty, extra)
	}
	held, err := h.local.StartHeld(w.Dir(), &local.Wrap{Command: command, MoveStdio: true})
	if err != nil {
		w.Close()
		return nil, err
	}
	ws := &warmSandbox{w: w, held: held}
	if err := w.AwaitReady(held.Stdout(), warmReadyTimeout); err != nil {
		ws.discard()
		return nil, err
	}
	return ws, nil
}

// discard ends a warm sandbox nobody took: its stub reads the end of its
// control pipe and exits, and the sandbox with it (see local.Held.Discard).
func (ws *warmSandbox) discard() {
	ws.w.Close()
	ws.held.Discard()
}

// take returns the local host's Take for a call placed at pl: a warm
// sandbox of the pool that fits it, with the command handed over, or nil
// (the call starts cold).
func (h *Host) take(pl placed) func(argv, env []string, stdin, keepState bool) *local.Held {
	if h.pool == nil {
		return nil
	}
	return func(argv, env []string, stdin, keepState bool) *local.Held {
		if !Passable(argv, env) {
			return nil
		}
		ws, ok := h.pool.Take(func(ws *warmSandbox) Verdict { return ws.w.Fits(pl.real, pl.readOnly) })
		if !ok {
			return nil
		}
		if err := ws.w.Exec(argv, env, stdin, keepState); err != nil {
			ws.held.Kill() // before anything else: see Warm.Exec
			ws.discard()
			return nil
		}
		return ws.held
	}
}

// PoolPids are the pids of the bwrap processes of the sandboxes ready in
// the pool now, nil without a pool. For tests that follow them.
func (h *Host) PoolPids() []int {
	var pids []int
	h.pool.Take(func(ws *warmSandbox) Verdict {
		pids = append(pids, ws.held.Pid())
		return Keep
	})
	return pids
}

// ShedPool discards the sandboxes waiting in the pool now and returns how
// many it discarded, for a host process short of descriptors: each holds
// several, which a session starting cold can then use. The pool refills
// when there is room again. Safe for concurrent use.
func (h *Host) ShedPool() int { return h.pool.Shed() }

// PoolSize is how many sandboxes the pool keeps ready, 0 without a pool
// and after Close.
func (h *Host) PoolSize() int {
	if h.closed.Load() {
		return 0
	}
	return h.pool.Size()
}
