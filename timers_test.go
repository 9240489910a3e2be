//go:build linux

package bgexec

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
)

// fakeChild is a process that exists only in memory, so yield, timeout,
// grace and TTL logic can run under testing/synctest with a fake clock.
type fakeChild struct {
	out    *io.PipeWriter
	exited chan struct{}

	mu         sync.Mutex
	once       sync.Once
	status     syscall.WaitStatus
	signals    []syscall.Signal
	ignoreTerm bool // SIGTERM and SIGHUP do nothing; SIGKILL still works
}

func (f *fakeChild) Pid() int { return 4242 }

func (f *fakeChild) AwaitExit() error { <-f.exited; return nil }

func (f *fakeChild) Release() error { return nil }

func (f *fakeChild) Reap() (syscall.WaitStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, nil
}

func (f *fakeChild) SignalGroup(sig syscall.Signal) error {
	f.mu.Lock()
	f.signals = append(f.signals, sig)
	ignore := f.ignoreTerm && sig != syscall.SIGKILL
	f.mu.Unlock()
	if !ignore {
		f.exit(syscall.WaitStatus(sig))
	}
	return nil
}

// exit ends the fake with a wait status (code<<8, or the signal number).
func (f *fakeChild) exit(ws syscall.WaitStatus) {
	f.once.Do(func() {
		f.mu.Lock()
		f.status = ws
		f.mu.Unlock()
		_ = f.out.Close()
		close(f.exited)
	})
}

// fakeRegistry returns a registry whose sessions are fakeChild processes;
// started receives each fake as it is spawned.
func fakeRegistry(t *testing.T, cfg Config, configure func(*fakeChild)) (*Registry, <-chan *fakeChild) {
	reg, err := NewRegistry(cfg)
	require.NoError(t, err)
	started := make(chan *fakeChild, 16)
	reg.spawn = func(*spawnSpec) (*spawned, error) {
		r, w := io.Pipe()
		f := &fakeChild{out: w, exited: make(chan struct{})}
		if configure != nil {
			configure(f)
		}
		started <- f
		return &spawned{child: f, outputs: []io.Reader{r}}, nil
	}
	return reg, started
}

func TestYieldWindowUnderFakeClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		reg, started := fakeRegistry(t, Config{}, nil)
		defer reg.Close(context.Background())
		sc := reg.Scope("a")

		start := time.Now()
		res, err := sc.Exec(context.Background(), &ExecRequest{Command: "fake", YieldMs: ptr(1500.0)})
		require.NoError(t, err)
		assert.Equal(t, StatusRunning, res.Details.Status)
		assert.Equal(t, 1500*time.Millisecond, time.Since(start), "backgrounded exactly when the window ended")
		(<-started).exit(0)

		// A run that ends inside the window returns at that moment.
		go func() {
			f := <-started
			time.Sleep(300 * time.Millisecond)
			_, _ = f.out.Write([]byte("done\n"))
			f.exit(0)
		}()
		start = time.Now()
		res, err = sc.Exec(context.Background(), &ExecRequest{Command: "fake", YieldMs: ptr(10000.0)})
		require.NoError(t, err)
		assert.Equal(t, "done", res.Text())
		assert.Equal(t, 300*time.Millisecond, time.Since(start))

		// The default window is the configured 10 s.
		start = time.Now()
		res, _ = sc.Exec(context.Background(), &ExecRequest{Command: "fake"})
		assert.Equal(t, StatusRunning, res.Details.Status)
		assert.Equal(t, 10*time.Second, time.Since(start))
		(<-started).exit(0)
	})
}

func TestTimeoutAndGraceUnderFakeClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		reg, started := fakeRegistry(t, Config{KillGrace: 3 * time.Second}, func(f *fakeChild) { f.ignoreTerm = true })
		defer reg.Close(context.Background())
		sc := reg.Scope("a")

		start := time.Now()
		res, err := sc.Exec(context.Background(), &ExecRequest{Command: "fake", Timeout: ptr(2.0), YieldMs: ptr(60000.0)})
		require.NoError(t, err)
		f := <-started
		assert.Equal(t, ExitReasonTimeout, res.Details.ExitReason)
		assert.Equal(t, 5*time.Second, time.Since(start), "SIGTERM at 2 s, SIGKILL 3 s later")
		assert.Equal(t, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL, syscall.SIGKILL}, f.signals,
			"TERM, KILL after the grace, then the owner's final group KILL")

		// The timeout holds in the background too.
		id := startBackground(t, sc, &ExecRequest{Command: "fake", Timeout: ptr(1.0)})
		<-started
		start = time.Now()
		poll, err := sc.Process(context.Background(), &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(120000))})
		require.NoError(t, err)
		assert.Equal(t, "(no new output)\n\nProcess exited with timeout.\n\n"+timeoutGuidance, poll.Text())
		assert.Equal(t, 4*time.Second, time.Since(start))
	})
}

func TestTTLReapingUnderFakeClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		reg, started := fakeRegistry(t, Config{JobTTLMs: 60000}, nil)
		defer reg.Close(context.Background())
		sc := reg.Scope("a")

		id := startBackground(t, sc, &ExecRequest{Command: "fake"})
		(<-started).exit(0)
		synctest.Wait()
		ended := time.Now()

		time.Sleep(59 * time.Second)
		synctest.Wait()
		list, _ := sc.Process(context.Background(), &ProcessRequest{Action: "list"})
		require.Len(t, list.Details.Sessions, 1, "kept for the TTL")
		assert.Equal(t, id, list.Details.Sessions[0].SessionID)

		time.Sleep(time.Until(ended.Add(60*time.Second + time.Millisecond)))
		synctest.Wait()
		list, _ = sc.Process(context.Background(), &ProcessRequest{Action: "list"})
		assert.Empty(t, list.Details.Sessions, "reaped once the TTL passed")
		poll, _ := sc.Process(context.Background(), &ProcessRequest{Action: "poll", SessionID: id})
		assert.Equal(t, "No session found for "+id, poll.Text())

		// A running session is never reaped, however old.
		id = startBackground(t, sc, &ExecRequest{Command: "fake", Timeout: ptr(0.0)})
		f := <-started
		time.Sleep(3 * time.Hour)
		synctest.Wait()
		poll, _ = sc.Process(context.Background(), &ProcessRequest{Action: "poll", SessionID: id})
		assert.Equal(t, StatusRunning, poll.Details.Status)
		f.exit(0)
	})
}
