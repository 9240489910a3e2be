package session

import (
	"context"
	"io"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeProc is a process in memory: SIGTERM and SIGKILL end it.
type fakeProc struct {
	out    *io.PipeWriter
	exited chan struct{}
	once   sync.Once
	mu     sync.Mutex
	status syscall.WaitStatus
}

func (f *fakeProc) Pid() int         { return 4242 }
func (f *fakeProc) AwaitExit() error { <-f.exited; return nil }
func (f *fakeProc) Release() error   { return nil }
func (f *fakeProc) Reap() (syscall.WaitStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, nil
}
func (f *fakeProc) SignalGroup(sig syscall.Signal) error {
	if sig == syscall.SIGTERM || sig == syscall.SIGKILL {
		f.exit(syscall.WaitStatus(sig))
	}
	return nil
}
func (f *fakeProc) exit(ws syscall.WaitStatus) {
	f.once.Do(func() {
		f.mu.Lock()
		f.status = ws
		f.mu.Unlock()
		_ = f.out.Close()
		close(f.exited)
	})
}

// start runs a fake session; ended receives it when its end is recorded.
func start(t *testing.T, o Options) (*Session, *fakeProc, *sync.WaitGroup, chan *Session) {
	r, w := io.Pipe()
	f := &fakeProc{out: w, exited: make(chan struct{})}
	var g sync.WaitGroup
	ended := make(chan *Session, 1)
	o.Proc, o.Outputs, o.Pool, o.Goroutines = f, []io.Reader{r}, &ChunkPool{}, &g
	o.Ended = func(s *Session) { ended <- s }
	if o.MaxChars == 0 {
		o.MaxChars, o.PendingChars = 200000, 30000
	}
	o.KillGrace, o.DrainTimeout, o.StartedAt = 3*time.Second, time.Second, time.Now()
	s := New(o)
	s.Start()
	t.Cleanup(func() { f.exit(0); g.Wait() })
	return s, f, &g, ended
}

func TestTheExitIsReportedExactlyOnce(t *testing.T) {
	bg := Options{ID: "a-b", Background: true, NotifyOnExit: true}
	t.Run("a poll waiting at the end reports it; no event is due", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, _ := start(t, bg)
			go func() {
				time.Sleep(time.Second)
				_, _ = f.out.Write([]byte("bye\n"))
				f.exit(0)
			}()
			var dr Drained
			for !dr.Snap.Ended {
				dr = s.Poll(context.Background(), time.Minute)
			}
			_, due := s.BeginEvent()
			assert.False(t, due)
			assert.Empty(t, dr.Retract)
		})
	})
	t.Run("an end nobody waited for is an event, unless a poll takes it first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, ended := start(t, bg)
			_, _ = f.out.Write([]byte("out\n"))
			f.exit(1 << 8)
			<-ended
			dr := s.Poll(context.Background(), 0)
			require.True(t, dr.Snap.Ended)
			assert.Empty(t, dr.Retract, "not sent yet: nothing to retract")
			_, due := s.BeginEvent()
			assert.False(t, due, "the poll took the report")
		})
	})
	t.Run("a poll after the delivery gets the text to retract", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, ended := start(t, bg)
			_, _ = f.out.Write([]byte("out\n"))
			f.exit(0)
			<-ended
			sn, due := s.BeginEvent()
			require.True(t, due)
			assert.Equal(t, "out\n", sn.Tail)
			assert.False(t, s.EventSent("the event"))
			assert.Equal(t, "the event", s.Poll(context.Background(), 0).Retract)
			assert.Empty(t, s.Poll(context.Background(), 0).Retract, "once")
		})
	})
	t.Run("a poll during the delivery waits for it, then retracts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, ended := start(t, bg)
			_, _ = f.out.Write([]byte("out\n"))
			f.exit(0)
			<-ended
			_, due := s.BeginEvent()
			require.True(t, due)
			got := make(chan string)
			go func() { got <- s.Poll(context.Background(), 0).Retract }()
			time.Sleep(time.Second) // the notifier takes its time
			synctest.Wait()
			select {
			case <-got:
				t.Fatal("the poll returned before the delivery it must retract finished")
			default:
			}
			assert.False(t, s.EventSent("late event"))
			assert.Equal(t, "late event", <-got)
		})
	})
	t.Run("a poll whose context ends during the delivery leaves the retraction to the sender", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, ended := start(t, bg)
			_, _ = f.out.Write([]byte("out\n"))
			f.exit(0)
			<-ended
			_, due := s.BeginEvent()
			require.True(t, due)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			assert.Empty(t, s.Poll(ctx, 0).Retract)
			assert.True(t, s.EventSent("late event"), "the sender must retract")
		})
	})
	t.Run("the agent's own kill sends no event", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, _, _, ended := start(t, bg)
			require.True(t, s.Kill())
			<-ended
			_, due := s.BeginEvent()
			assert.False(t, due)
			assert.Equal(t, ReasonKilled, s.Snapshot(0).Exit.Reason)
			assert.False(t, s.Kill(), "a second kill finds it ended")
		})
	})
	t.Run("a timeout is an event", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o := bg
			o.Timeout = 2 * time.Second
			s, _, _, ended := start(t, o)
			<-ended
			sn, due := s.BeginEvent()
			assert.True(t, due)
			assert.Equal(t, ReasonTimeout, sn.Exit.Reason)
		})
	})
	t.Run("foreground runs and quiet successes send none", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, ended := start(t, Options{NotifyOnExit: true})
			_, _ = f.out.Write([]byte("x"))
			f.exit(1 << 8)
			<-ended
			_, due := s.BeginEvent()
			assert.False(t, due, "never backgrounded")

			s, f, _, ended = start(t, bg)
			f.exit(0)
			<-ended
			_, due = s.BeginEvent()
			assert.False(t, due, "exit 0 without output")

			o := bg
			o.NotifyEmptySuccess = true
			s, f, _, ended = start(t, o)
			f.exit(0)
			<-ended
			_, due = s.BeginEvent()
			assert.True(t, due, "unless empty successes are wanted")
		})
	})
	t.Run("background at the start holds even for a run that is over at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, ended := start(t, bg)
			f.exit(0)
			<-ended
			assert.False(t, s.Background(), "ended")
			assert.True(t, s.Snapshot(0).Backgrounded)
		})
	})
}
