package bgexec

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/bgexec/bgexec/internal/allowlist"
	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/envpolicy"
	dockerhost "github.com/bgexec/bgexec/internal/host/docker"
	"github.com/bgexec/bgexec/internal/host/local"
	"github.com/bgexec/bgexec/internal/host/sandbox"
	sshhost "github.com/bgexec/bgexec/internal/host/ssh"
	"github.com/bgexec/bgexec/internal/session"
)

// ErrClosed is returned by calls on a Registry that has been closed.
var ErrClosed = errors.New("bgexec: registry closed")

// Registry owns every session started through its scopes: their processes,
// goroutines, buffers and timers. Sessions live in memory only and are lost
// when the process exits. All methods are safe for concurrent use.
type Registry struct {
	cfg    settings
	env    envpolicy.Policy
	allow  *allowlist.Checker // the allowlist, parsed per call
	shells shellStates        // each scope's shell state (Config.KeepShellState)
	spills spillKeeper        // spill quota and kept files (Config.SpillDir)
	chunks session.ChunkPool

	// quota counts the running sessions (MaxSessions, MaxSessionsPerScope);
	// containment is what Containment reports.
	quota       quotas
	containment ContainmentReport
	nodes       nodeHosts // the SSH connections to Config.Nodes; nil without nodes
	hosts       hostSet   // where commands run, chosen here once

	// goroutines counts every goroutine the registry started but the
	// notification goroutine; Close waits for it.
	goroutines sync.WaitGroup
	// spawns counts exec calls admitted before Close that have not yet
	// registered their session. Close waits for them, so it ends every
	// session and no goroutine is added after its final Wait.
	spawns    sync.WaitGroup
	stop      chan struct{} // closed by Close
	sweepKick chan struct{} // wakes the sweeper when a session ended
	noteKick  chan struct{} // wakes the notifier when an event is queued
	notesDone chan struct{} // closed when the notification goroutine returns
	closeDone chan struct{} // closed when the first Close has ended every session

	mu       sync.Mutex // guards the fields below
	sessions map[string]*session.Session
	byScope  map[string]map[string]*session.Session // the same sessions, by scope
	expiry   expiryHeap                             // ended backgrounded sessions, by TTL
	expiryOf map[*session.Session]*expiring         // each one's entry in expiry
	closed   bool
	retired  map[string]struct{} // ids of forgotten sessions, not reissued
	retiredQ []string            // retired ids, oldest first (at most maxRetiredIDs)
	notes    []*session.Session  // sessions whose exit event may be due, in order
	// noteCalling is set while the notification goroutine is in a
	// Notifier call; notesAbandoned once Close stopped waiting for it,
	// after which it starts no other call.
	noteCalling    bool
	notesAbandoned bool
	// notices holds, per scope, the ended sessions whose exit notice the
	// scope's next tool result may carry, in the order they ended
	// (Config.ExitNoticesInResults).
	notices map[string][]*session.Session

	approvals approvalBook // deferred approvals and allow-always rules

	obs      *observerQueue      // Config.Observer's queue; nil without one
	reserved map[string]struct{} // session ids picked for spawn events, not added yet
}

// NewRegistry returns a registry configured by cfg (zero Config = the
// documented defaults; see [ConfigFromEnv] for the environment variables).
// It starts three goroutines (the gateway host's spawner, on a locked OS
// thread, the sweeper and the notification goroutine; with
// Config.Observer, a fourth that delivers its events) and two watchdog
// processes; the first spawn adds one keeper goroutine per watchdog, and
// each SSH node connection two more (its reader and its keepalives; one
// when keepalives are off). Call Close to end them all. Safe for
// concurrent use: each call makes a registry of its own.
func NewRegistry(cfg Config) (*Registry, error) {
	st, rules, err := resolveRegistry(cfg)
	if err != nil {
		return nil, err
	}
	pol := envpolicy.Default()
	pol.DroppedKeys = append(pol.DroppedKeys, st.extraBlocked...)
	pol.OverrideOnlyKeys = append(pol.OverrideOnlyKeys, st.extraOverrides...)
	sweepKick := make(chan struct{}, 1)
	var report ContainmentReport
	m, err := local.New(local.Options{
		Shell:       st.shell,
		ShellPath:   st.shellPath,
		Env:         pol,
		Containment: localContainment(cfg.Containment),
		Limits:      contain.Limits{MemoryBytes: st.limits.MemoryBytes, Tasks: st.limits.Tasks, TasksSet: st.tasksSet, CPU: st.limits.CPU},
		Check:       limitsCheck(&st, cfg.Containment == ContainmentRequired, &report),
		Kick:        func() { kick(sweepKick) },
	})
	if err != nil {
		return nil, fmt.Errorf("bgexec: %w", err)
	}
	var docker *dockerhost.Host
	if cfg.Docker != nil {
		if docker, err = dockerhost.New(cfg.Docker.hostConfig(defaultWorkdir(st.workdir))); err != nil {
			m.Close()
			return nil, fmt.Errorf("bgexec: Config.Docker: %w", err)
		}
	}
	r := &Registry{
		cfg:         st,
		env:         pol,
		allow:       newAllowlist(&st, pol),
		stop:        make(chan struct{}),
		sweepKick:   sweepKick,
		noteKick:    make(chan struct{}, 1),
		notesDone:   make(chan struct{}),
		closeDone:   make(chan struct{}),
		sessions:    make(map[string]*session.Session),
		byScope:     make(map[string]map[string]*session.Session),
		expiryOf:    make(map[*session.Session]*expiring),
		containment: report,
	}
	r.obs = startObserver(&st.observer)
	r.approvals.rules = rules
	if len(st.nodes) > 0 {
		r.nodes = sshhost.NewPool(slices.Collect(maps.Values(st.nodes)), os.Getenv, &r.goroutines)
	}
	r.hosts = newHostSet(r, m, cfg.Kubernetes, docker)
	r.start()
	return r, nil
}

// resolveRegistry checks cfg and resolves what a registry needs from it:
// its settings (the sandbox's plan among them) and its approval rules.
func resolveRegistry(cfg Config) (settings, []string, error) {
	st, err := resolveConfig(cfg, os.Getenv)
	if err != nil {
		return st, nil, err
	}
	rules, err := loadApprovalRules(&st)
	if err != nil {
		return st, nil, err
	}
	if cfg.Sandbox != nil {
		if st.sandbox, err = sandbox.New(sandboxConfig(cfg.Sandbox), st.workdir, defaultWorkdir); err != nil {
			return st, nil, err
		}
		st.sandboxPool = cfg.Sandbox.poolSize()
	}
	return st, rules, nil
}

// localContainment is mode in the gateway host's terms.
func localContainment(mode Containment) local.Containment {
	switch mode {
	case ContainmentOff:
		return local.ContainmentOff
	case ContainmentRequired:
		return local.ContainmentRequired
	}
	return local.ContainmentAuto
}

// start starts the registry's sweeper and notification goroutines.
func (r *Registry) start() {
	r.goroutines.Add(1)
	go func() {
		defer r.goroutines.Done()
		r.sweep()
	}()
	go func() {
		defer close(r.notesDone)
		r.deliverNotes()
	}()
}

// Scope returns the view of one agent (a session key such as
// "agent:main:main"). A scope sees only the sessions it started, by exact key
// match. Scopes are cheap; the returned value is safe for concurrent use.
func (r *Registry) Scope(key string) *Scope {
	return &Scope{reg: r, key: key}
}

// Close kills every running session (SIGTERM, then SIGKILL after the grace
// period, or at once when ctx ends first), waits for every goroutine the
// registry started, and forgets all sessions. Exit notifications not yet
// delivered are dropped: once Close has begun, no Notifier call starts but
// the Retract of an event already delivered. It returns ctx.Err() if ctx
// ended before the processes did (they are SIGKILLed and still waited
// for).
//
// A Notifier call in progress is waited for only until ctx ends. If it
// still blocks then, Close returns ctx.Err() without waiting for it: that
// one goroutine is left to finish the call on its own, and makes no other
// call afterwards. Every other goroutine has ended when Close returns. An
// Approver call is made on the goroutine of the Exec call that asked for
// it, so Close never waits for one; that Exec returns [ErrClosed] and
// spawns nothing.
//
// With Config.Observer, Close delivers every queued event, the ends of
// the sessions it killed included, before it returns; an Observer call
// still blocked when ctx ends is left to finish like a Notifier call, and
// the events after it are dropped (counted by [Registry.ObserverStats]).
//
// Close is idempotent. A later call waits, until its ctx ends, for the
// first to finish and for a Notifier call the first left blocked; it then
// returns nil, or ctx.Err() if ctx ended first.
func (r *Registry) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		select {
		case <-r.closeDone:
		default:
			select {
			case <-r.closeDone:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return r.awaitNotifier(ctx)
	}
	r.closed = true
	r.mu.Unlock()
	r.closeApprovals()
	// Exec calls admitted before the flag finish spawning and register.
	r.spawns.Wait()
	r.mu.Lock()
	running := make([]*session.Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		running = append(running, s)
	}
	r.mu.Unlock()

	err := r.endAll(ctx, running)
	r.hosts.closeSandboxPool() // no exec call can take a pooled sandbox now
	r.hosts.closeRemote()      // every remote session has ended: its connections go
	close(r.stop)
	r.goroutines.Wait()
	// Only now stop the gateway host's spawner: its thread's exit sends
	// Pdeathsig (SIGKILL) to every child it forked, which would cut the
	// grace period. Its watchdogs and cgroups go with it.
	r.hosts.close()
	r.spills.close(running)
	// Every session has ended and sent its end event: deliver the rest.
	if oerr := r.obs.close(ctx); oerr != nil {
		err = oerr
	}
	r.mu.Lock()
	clear(r.sessions)
	clear(r.byScope)
	clear(r.expiryOf)
	clear(r.notices)
	r.expiry = nil
	r.mu.Unlock()
	close(r.closeDone)
	if nerr := r.awaitNotifier(ctx); err == nil {
		err = nerr
	}
	r.mu.Lock()
	r.notes = nil
	r.mu.Unlock()
	return err
}

// endAll terminates the running sessions (SIGTERM, then SIGKILL after the
// grace period) and waits for their ends. When ctx ends first it kills
// what still runs at once (a hung node's sessions end as lost), waits for
// those ends and returns ctx.Err().
func (r *Registry) endAll(ctx context.Context, running []*session.Session) error {
	for _, s := range running {
		s.Terminate(session.ReasonKilled)
	}
	for i, s := range running {
		select {
		case <-s.Done():
			continue
		case <-ctx.Done():
		}
		// A hung node or pod must not hold Close: its sessions end as lost.
		r.hosts.closeRemote()
		for _, s := range running[i:] {
			s.ForceKill(session.ReasonKilled)
		}
		for _, s := range running[i:] {
			<-s.Done()
		}
		return ctx.Err()
	}
	return nil
}

// awaitNotifier waits for the notification goroutine. When ctx ends while
// that goroutine is in a Notifier call, it returns ctx.Err() and leaves it
// to finish on its own; the goroutine starts no other call after that.
// Outside a call the goroutine ends at once, so then it is waited for.
func (r *Registry) awaitNotifier(ctx context.Context) error {
	select {
	case <-r.notesDone:
		return nil
	case <-ctx.Done():
	}
	r.mu.Lock()
	r.notesAbandoned = true
	r.notes = nil
	calling := r.noteCalling
	r.mu.Unlock()
	if calling {
		return ctx.Err()
	}
	<-r.notesDone
	return nil
}

// admit lets one exec call spawn unless the registry is closed. An
// admitted call ends with spawnDone: after add, or when the spawn failed.
func (r *Registry) admit() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.spawns.Add(1)
	return nil
}

func (r *Registry) spawnDone() { r.spawns.Done() }

// add registers a new session under a fresh id, not started yet. Only
// admitted calls add, so it succeeds even while Close waits for them.
func (r *Registry) add(o session.Options) *session.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o.ID == "" {
		o.ID = r.freshIDLocked()
	} else {
		delete(r.reserved, o.ID) // reserved by observeSpawn
	}
	o.Pool, o.Goroutines, o.Ended = &r.chunks, &r.goroutines, r.sessionEnded
	s := session.New(o)
	r.sessions[o.ID] = s
	scope := r.byScope[o.Scope]
	if scope == nil {
		scope = make(map[string]*session.Session)
		r.byScope[o.Scope] = scope
	}
	scope[o.ID] = s
	return s
}

// freshIDLocked picks an id no session has, had or was reserved.
func (r *Registry) freshIDLocked() string {
	return newSlug(func(id string) bool {
		_, live := r.sessions[id]
		_, old := r.retired[id]
		_, taken := r.reserved[id]
		return live || old || taken
	})
}

// maxRetiredIDs bounds how many ids of forgotten sessions are kept from
// reuse, so a stale id (from a notification, or an agent's memory) does
// not reach a newer session.
const maxRetiredIDs = 10000

// forget drops a session from the registry and retires its id.
func (r *Registry) forget(s *session.Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := s.ID()
	if r.sessions[id] != s {
		return
	}
	delete(r.sessions, id)
	if e := r.expiryOf[s]; e != nil {
		// A cleared session must not stay reachable until its TTL.
		heap.Remove(&r.expiry, e.index)
		delete(r.expiryOf, s)
	}
	if scope := r.byScope[s.Scope()]; scope != nil {
		delete(scope, id)
		if len(scope) == 0 {
			delete(r.byScope, s.Scope())
		}
	}
	if r.retired == nil {
		r.retired = make(map[string]struct{})
	}
	r.dropNoticeLocked(s)
	r.releaseSpill(s)
	r.retired[id] = struct{}{}
	r.retiredQ = append(r.retiredQ, id)
	if len(r.retiredQ) > maxRetiredIDs {
		delete(r.retired, r.retiredQ[0])
		r.retiredQ[0] = ""
		r.retiredQ = r.retiredQ[1:]
	}
}

// lookup finds a session of scope. Other scopes' sessions and removed ones
// are not found; bg reports whether it was backgrounded (foreground runs are
// still inside their exec call).
func (r *Registry) lookup(scope, id string) (s *session.Session, found, bg bool) {
	r.mu.Lock()
	s = r.byScope[scope][id]
	r.mu.Unlock()
	if s == nil {
		return nil, false, false
	}
	sn := s.Snapshot(0)
	if sn.Removed {
		return nil, false, false
	}
	return s, true, sn.Backgrounded
}

func (r *Registry) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// listed is a session of a list with its snapshot, taken once.
type listed struct {
	s  *session.Session
	sn session.Snapshot
}

// list returns the scope's backgrounded sessions, newest first, each with
// its snapshot and tail. It looks only at the scope's own sessions.
func (r *Registry) list(scope string) []listed {
	r.mu.Lock()
	ss := make([]*session.Session, 0, len(r.byScope[scope]))
	for _, s := range r.byScope[scope] {
		ss = append(ss, s)
	}
	r.mu.Unlock()
	out := make([]listed, 0, len(ss))
	for _, s := range ss {
		if sn := s.Snapshot(tailChars); sn.Backgrounded && !sn.Removed {
			out = append(out, listed{s, sn})
		}
	}
	slices.SortFunc(out, func(a, b listed) int { return b.s.StartedAt().Compare(a.s.StartedAt()) })
	return out
}

// sessionEnded is called by a session's owner goroutine after its end was
// recorded: a removed session is forgotten, a backgrounded one gets its
// expiry and, when it is due, its exit event.
func (r *Registry) sessionEnded(s *session.Session) {
	r.quota.give(s.Scope())
	r.observeEnd(s)
	sn := s.Snapshot(0)
	switch {
	case sn.Removed:
		r.forget(s)
		return
	case !sn.Backgrounded:
		return // a foreground run: its exec call forgets it
	}
	r.mu.Lock()
	if r.sessions[s.ID()] == s { // not cleared meanwhile
		e := &expiring{at: sn.Exit.At.Add(r.cfg.ttl), s: s}
		heap.Push(&r.expiry, e)
		r.expiryOf[s] = e
	}
	over := r.overflowLocked(s.Scope())
	r.mu.Unlock()
	if over != nil {
		r.forget(over) // as after its TTL
	}
	r.addNotice(s)
	r.enqueueNote(s)
	kick(r.sweepKick)
}

// overflowLocked returns the finished session of scope that ended first
// when the scope keeps more than Config.MaxFinishedSessionsPerScope, else
// nil. Every finished session waits in the expiry heap, so they are the
// scope's sessions found there.
func (r *Registry) overflowLocked(scope string) *session.Session {
	if r.cfg.maxFinished <= 0 {
		return nil
	}
	var oldest *expiring
	n := 0
	for _, s := range r.byScope[scope] {
		if e := r.expiryOf[s]; e != nil {
			n++
			if oldest == nil || e.at.Before(oldest.at) {
				oldest = e
			}
		}
	}
	if n <= r.cfg.maxFinished {
		return nil
	}
	return oldest.s
}

func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// sweep is the registry's single reaper: it forgets backgrounded sessions
// whose end is older than the TTL, sleeping until the next expiry, and
// has the gateway host kill session cgroups again that could not be seen
// empty, until they are.
func (r *Registry) sweep() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		next := r.reapExpired(time.Now())
		if again := r.hosts.sweep(); again > 0 {
			next = min(next, again)
		}
		next = min(next, r.spills.reap(time.Now()))
		if r.enforceOutputBudget() {
			next = min(next, budgetRecheck)
		}
		t.Reset(next)
		select {
		case <-r.stop:
			return
		case <-r.sweepKick:
		case <-t.C:
		}
	}
}

// reapExpired forgets the sessions whose TTL has passed and returns the
// wait until the next expiry. The expiry heap holds every ended
// backgrounded session once, so the cost is O(log n) per session.
func (r *Registry) reapExpired(now time.Time) time.Duration {
	var due []*session.Session
	next := time.Hour
	r.mu.Lock()
	for r.expiry.Len() > 0 {
		top := r.expiry[0]
		if left := top.at.Sub(now); left > 0 {
			next = min(next, left)
			break
		}
		heap.Pop(&r.expiry)
		delete(r.expiryOf, top.s)
		due = append(due, top.s)
	}
	r.mu.Unlock()
	for _, s := range due {
		r.forget(s) // a no-op for one cleared meanwhile
	}
	return next
}

// expiring is an ended session, when its TTL passes, and its place in the
// heap.
type expiring struct {
	at    time.Time
	s     *session.Session
	index int
}

// expiryHeap orders sessions by expiry, soonest first (container/heap).
type expiryHeap []*expiring

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *expiryHeap) Push(x any) {
	e := x.(*expiring)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil // the array must not keep the session reachable
	*h = old[:len(old)-1]
	return e
}
