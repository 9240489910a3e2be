package session

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// SpillSpec asks a session to copy its whole output to a file in Dir (the
// spill file), so that what the retention cap drops stays readable.
type SpillSpec struct {
	Dir string
	// MaxBytes caps this session's file, in bytes (> 0).
	MaxBytes int64
	// Quota counts the bytes of all of a registry's spill files, which
	// together may hold at most QuotaBytes.
	Quota      *SpillQuota
	QuotaBytes int64
}

// SpillQuota is the byte budget shared by the spill files of a
// registry's sessions. Its zero value has nothing used. Safe for
// concurrent use.
type SpillQuota struct {
	used atomic.Int64
	// bufs lends write queues, so an idle session holds none.
	bufs sync.Pool
}

// take grants up to n bytes of a budget of max.
func (q *SpillQuota) take(n, max int64) int64 {
	for {
		used := q.used.Load()
		g := min(n, max-used)
		if g <= 0 {
			return 0
		}
		if q.used.CompareAndSwap(used, used+g) {
			return g
		}
	}
}

func (q *SpillQuota) give(n int64) { q.used.Add(-n) }

// Used is the bytes the registry's spill files hold now.
func (q *SpillQuota) Used() int64 { return q.used.Load() }

func (q *SpillQuota) getBuf() []byte {
	if b, ok := q.bufs.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, ReadChunk)
}

// putBuf takes back a queue; one that grew past maxQueue is left to the
// collector.
func (q *SpillQuota) putBuf(b []byte) {
	if cap(b) > maxQueue {
		return
	}
	q.bufs.Put(&b)
}

// Why a spill file stopped growing before the output ended.
const (
	SpillSessionQuota  = "session quota"
	SpillRegistryQuota = "registry quota"
)

// SpillState is what a result says about a session's spill file.
type SpillState struct {
	On    bool   // the session copies its output to a file
	Path  string // the file; "" while nothing was written, or when it could not be created
	Bytes int64  // bytes written to it
	// Stop is why the file stopped growing while the output went on:
	// SpillSessionQuota, SpillRegistryQuota, or the error that writing
	// (or creating) it met. "" while the file holds all the output.
	Stop    string
	Removed bool // the file was deleted
}

// maxQueue is the largest write queue lent again.
const maxQueue = 4 * ReadChunk

// spill copies a session's cleaned output to its file. The output is
// queued under the session's lock, so the file has the same order as the
// log, and written by the reader that queued it after that lock is
// released: a slow disk slows that reader (and so the child, as a pipe
// would) but never a poll, a log or a kill. The queue holds at most what
// the other reader queued during one write.
type spill struct {
	spec   SpillSpec
	prefix string // the file's name starts with it (the session id)

	mu     sync.Mutex // guards the fields below
	queued []byte     // lent by the quota's pool while it holds output
	state  SpillState
	f      *os.File
	done   bool // no more output will come (finish, remove or a stop)

	wmu sync.Mutex // serialises writes (and the file's creation)
}

func newSpill(spec *SpillSpec, id string) *spill {
	if spec == nil {
		return nil
	}
	return &spill{spec: *spec, prefix: id, state: SpillState{On: true}}
}

// queue appends cleaned output. The session's lock is held.
func (p *spill) queue(text []byte) {
	if p == nil || len(text) == 0 {
		return
	}
	p.mu.Lock()
	if !p.done {
		if p.queued == nil {
			p.queued = p.spec.Quota.getBuf()
		}
		p.queued = append(p.queued, text...)
	}
	p.mu.Unlock()
}

// flush writes what is queued. No session lock is held.
func (p *spill) flush() {
	if p == nil {
		return
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.mu.Lock()
	buf, f, written := p.queued, p.f, p.state.Bytes
	p.queued = nil
	p.mu.Unlock()
	if buf == nil {
		return
	}
	defer p.spec.Quota.putBuf(buf)
	if f == nil {
		var err error
		if f, err = os.CreateTemp(p.spec.Dir, p.prefix+"-*.out"); err != nil {
			p.stop(fmt.Sprintf("it could not be created: %v", err), nil)
			return
		}
		p.mu.Lock()
		if p.state.Removed {
			p.mu.Unlock()
			_ = f.Close()           // Best effort: the session is gone.
			_ = os.Remove(f.Name()) // Best effort, as above.
			return
		}
		p.f, p.state.Path = f, f.Name()
		p.mu.Unlock()
	}
	want := int64(len(buf))
	n := min(want, p.spec.MaxBytes-written)
	stop := ""
	if n < want {
		stop = SpillSessionQuota
	}
	if g := p.spec.Quota.take(n, p.spec.QuotaBytes); g < n {
		n, stop = g, SpillRegistryQuota
	}
	w, err := f.Write(buf[:n])
	p.spec.Quota.give(n - int64(w))
	if err != nil {
		stop = fmt.Sprintf("writing it failed: %v", err)
	}
	p.mu.Lock()
	if p.state.Removed {
		// remove gave back what it knew of; this write came after.
		p.spec.Quota.give(int64(w))
	} else {
		p.state.Bytes += int64(w)
	}
	p.mu.Unlock()
	if stop != "" {
		p.stop(stop, f)
	}
}

// stop records why the file stops growing and closes it.
func (p *spill) stop(why string, f *os.File) {
	p.mu.Lock()
	p.done, p.queued, p.f = true, nil, nil
	if p.state.Stop == "" && !p.state.Removed {
		p.state.Stop = why
	}
	p.mu.Unlock()
	if f != nil {
		_ = f.Close() // Best effort: the bytes are written, no sync is promised.
	}
}

// finish writes the rest and closes the file once the readers are done.
func (p *spill) finish() {
	if p == nil {
		return
	}
	p.flush()
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.mu.Lock()
	f := p.f
	p.done, p.f = true, nil
	p.mu.Unlock()
	if f != nil {
		_ = f.Close() // Best effort: the bytes are written.
	}
}

// remove deletes the file and gives its bytes back to the quota. It does
// not wait for a write in progress, whose bytes that write gives back.
func (p *spill) remove() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.state.Removed {
		p.mu.Unlock()
		return
	}
	f, path, n := p.f, p.state.Path, p.state.Bytes
	p.state.Removed, p.done = true, true
	p.f, p.queued = nil, nil
	p.mu.Unlock()
	p.spec.Quota.give(n)
	if f != nil {
		_ = f.Close() // Best effort: the file is deleted next.
	}
	if path != "" {
		_ = os.Remove(path) // Best effort: a file someone else removed is gone too.
	}
}

func (p *spill) snapshot() SpillState {
	if p == nil {
		return SpillState{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// Spill returns the state of the session's spill file (Options.Spill);
// its On is false when the session has none. Safe for concurrent use.
func (s *Session) Spill() SpillState { return s.spill.snapshot() }

// RemoveSpill deletes the session's spill file, at once and for good:
// output that still arrives is not written. It can be called any number
// of times. Safe for concurrent use.
func (s *Session) RemoveSpill() { s.spill.remove() }
