package session

import (
	"errors"
	"io"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lateProc is a fakeProc that tells its status before the reaping, and
// holds its Reap until released, so a test sees what the session does in
// between.
type lateProc struct {
	fakeProc
	peekOK  bool
	release chan struct{}
	mu2     sync.Mutex
	reaps   int
}

func (l *lateProc) ExitStatus() (syscall.WaitStatus, bool) {
	if !l.peekOK {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status, true
}

func (l *lateProc) Reap() (syscall.WaitStatus, error) {
	<-l.release
	l.mu2.Lock()
	l.reaps++
	l.mu2.Unlock()
	return l.fakeProc.Reap()
}

func startLate(t *testing.T, peekOK bool) (*Session, *lateProc, *sync.WaitGroup) {
	r, w := io.Pipe()
	p := &lateProc{fakeProc: fakeProc{out: w, exited: make(chan struct{})}, peekOK: peekOK, release: make(chan struct{})}
	var g sync.WaitGroup
	s := New(Options{
		ID: "a-late", Proc: p, Outputs: []io.Reader{r}, Pool: &ChunkPool{}, Goroutines: &g,
		MaxChars: 1000, PendingChars: 1000, DrainTimeout: 1 << 30,
	})
	s.Start()
	return s, p, &g
}

// A Process that tells its exit status before the reaping has its end
// recorded first: Recorded closes, with the status it told, while the
// reaping still waits; Done closes only once it is reaped, and the
// session's output descriptors are closed by then.
func TestLateReapRecordsTheEndBeforeTheReaping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, p, g := startLate(t, true)
		_, _ = p.out.Write([]byte("bye\n"))
		p.exit(3 << 8)
		<-s.Recorded()
		sn := s.Snapshot(0)
		require.True(t, sn.Ended)
		require.NotNil(t, sn.Exit.Code)
		assert.Equal(t, 3, *sn.Exit.Code)
		synctest.Wait()
		select {
		case <-s.Done():
			t.Fatal("Done closed before the reaping")
		default:
		}
		p.mu2.Lock()
		assert.Zero(t, p.reaps, "not reaped yet")
		p.mu2.Unlock()
		close(p.release)
		<-s.Done()
		g.Wait()
		p.mu2.Lock()
		assert.Equal(t, 1, p.reaps, "reaped once, after the end was recorded")
		p.mu2.Unlock()
	})
}

// A Process that cannot tell (ok false) is reaped before its end is
// recorded, as one without the interface.
func TestLateReapFallsBackToReapingFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, p, g := startLate(t, false)
		p.exit(5 << 8)
		synctest.Wait()
		select {
		case <-s.Recorded():
			t.Fatal("recorded before the reaping")
		default:
		}
		close(p.release)
		<-s.Recorded()
		<-s.Done()
		g.Wait()
		sn := s.Snapshot(0)
		require.NotNil(t, sn.Exit.Code)
		assert.Equal(t, 5, *sn.Exit.Code)
	})
}

// sweepProc is a fakeProc with an end sweep (EndSweeper) that waits until
// released and then fails with err.
type sweepProc struct {
	fakeProc
	release chan struct{}
	err     error
	mu2     sync.Mutex
	atEnd   int // KillAtEnd calls
	sweeps  int // SweepAfterEnd calls
	full    int // SIGKILLs through SignalGroup
}

func (p *sweepProc) SignalGroup(sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		p.mu2.Lock()
		p.full++
		p.mu2.Unlock()
	}
	return p.fakeProc.SignalGroup(sig)
}

func (p *sweepProc) KillAtEnd() error {
	p.mu2.Lock()
	defer p.mu2.Unlock()
	p.atEnd++
	return nil
}

func (p *sweepProc) SweepAfterEnd() error {
	<-p.release
	p.mu2.Lock()
	defer p.mu2.Unlock()
	p.sweeps++
	return p.err
}

// The end's slow sweep runs after the end is recorded and before Done:
// the session's own end sends KillAtEnd, not a full SIGKILL, a caller
// waiting on Recorded is not held up by the sweep, and a sweep that could
// not end everything is reported in Exit.Leftover once Done closes.
func TestEndSweepRunsAfterTheEndIsRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, w := io.Pipe()
		p := &sweepProc{fakeProc: fakeProc{out: w, exited: make(chan struct{})}, release: make(chan struct{}), err: errors.New("1 process of the namespace still ran")}
		var g sync.WaitGroup
		s := New(Options{
			ID: "a-sweep", Proc: p, Outputs: []io.Reader{r}, Pool: &ChunkPool{}, Goroutines: &g,
			MaxChars: 1000, PendingChars: 1000, DrainTimeout: 1 << 30,
		})
		s.Start()
		p.exit(0)
		<-s.Recorded()
		sn := s.Snapshot(0)
		require.True(t, sn.Ended)
		assert.NoError(t, sn.Exit.Leftover, "nothing is known to be left when the end is recorded")
		synctest.Wait()
		select {
		case <-s.Done():
			t.Fatal("Done closed before the sweep")
		default:
		}
		p.mu2.Lock()
		assert.Equal(t, 1, p.atEnd, "the end's SIGKILL is KillAtEnd")
		assert.Zero(t, p.full, "and not a full SignalGroup(SIGKILL)")
		assert.Zero(t, p.sweeps, "the sweep waits")
		p.mu2.Unlock()
		close(p.release)
		<-s.Done()
		g.Wait()
		p.mu2.Lock()
		assert.Equal(t, 1, p.sweeps)
		p.mu2.Unlock()
		assert.ErrorContains(t, s.Snapshot(0).Exit.Leftover, "still ran", "a failed sweep is reported by Done")
	})
}
