package bgexec

import "sync"

// MaxQueuedEvents is how many system events a [Queue] keeps per scope; the
// oldest is dropped first.
const MaxQueuedEvents = 20

// heartbeatBuffer is the capacity of a Queue's heartbeat channel.
const heartbeatBuffer = 64

// HeartbeatRequest asks the runtime to wake one agent.
//
// A HeartbeatRequest is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type HeartbeatRequest struct {
	// ScopeKey is the agent scope to wake, as given to [Registry.Scope].
	ScopeKey string
	// Reason is the reason the registry gave [Notifier.Heartbeat].
	Reason string
}

// Queue is a ready-made [Notifier] for runtimes without their own event
// queue. It keeps a FIFO of system events per scope (at most
// MaxQueuedEvents; an event whose text equals the previous one is dropped)
// for the runtime to [Queue.Drain] at the agent's next turn, and sends wake
// requests on [Queue.Heartbeats]. It implements [Retractor]: an event whose
// exit a poll already reported is removed if still queued. Use [NewQueue];
// all methods are safe for concurrent use and never block.
type Queue struct {
	beats chan HeartbeatRequest

	mu     sync.Mutex // guards events
	events map[string][]string
}

// NewQueue returns an empty Queue, ready to use. Safe for concurrent use.
func NewQueue() *Queue {
	return &Queue{beats: make(chan HeartbeatRequest, heartbeatBuffer), events: make(map[string][]string)}
}

// SystemEvent queues text for scopeKey.
func (q *Queue) SystemEvent(scopeKey, text string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ev := q.events[scopeKey]
	if n := len(ev); n > 0 && ev[n-1] == text {
		return
	}
	if len(ev) >= MaxQueuedEvents {
		ev = append(ev[:0], ev[len(ev)-MaxQueuedEvents+1:]...)
	}
	q.events[scopeKey] = append(ev, text)
}

// Heartbeat sends a wake request on the Heartbeats channel. When the
// channel is full the request is dropped: a wake is already pending.
func (q *Queue) Heartbeat(scopeKey, reason string) {
	select {
	case q.beats <- HeartbeatRequest{ScopeKey: scopeKey, Reason: reason}:
	default:
	}
}

// Heartbeats delivers wake requests (buffered; never closed).
func (q *Queue) Heartbeats() <-chan HeartbeatRequest { return q.beats }

// Retract removes a queued event with exactly this text.
func (q *Queue) Retract(scopeKey, text string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ev := q.events[scopeKey]
	for i, t := range ev {
		if t == text {
			q.events[scopeKey] = append(ev[:i], ev[i+1:]...)
			return
		}
	}
}

// Drain returns and removes the queued events of scopeKey, oldest first.
func (q *Queue) Drain(scopeKey string) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	ev := q.events[scopeKey]
	delete(q.events, scopeKey)
	return ev
}
