//go:build linux

package bgexec

import (
	"context"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/host/hosttest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeChild is a process that exists only in memory, so yield, timeout,
// grace and TTL logic can run under testing/synctest with a fake clock.
type fakeChild = hosttest.Process

// fakeRegistry returns a registry whose sessions are fakeChild processes;
// started receives each fake as it is spawned.
func fakeRegistry(t *testing.T, cfg Config, configure func(*fakeChild)) (*Registry, <-chan *fakeChild) {
	reg, err := NewRegistry(cfg)
	require.NoError(t, err)
	started := make(chan *fakeChild, 16)
	setHost(reg, &hosttest.Host{StartFunc: func(context.Context, *host.Spec) (*host.Started, error) {
		f, sp := hosttest.Started()
		if configure != nil {
			configure(f)
		}
		started <- f
		return sp, nil
	}})
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
		(<-started).Exit(0)

		// A run that ends inside the window returns at that moment.
		go func() {
			f := <-started
			time.Sleep(300 * time.Millisecond)
			_, _ = f.Write([]byte("done\n"))
			f.Exit(0)
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
		(<-started).Exit(0)
	})
}

func TestTimeoutAndGraceUnderFakeClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		reg, started := fakeRegistry(t, Config{KillGrace: 3 * time.Second}, func(f *fakeChild) { f.IgnoreTerm = true })
		defer reg.Close(context.Background())
		sc := reg.Scope("a")

		start := time.Now()
		res, err := sc.Exec(context.Background(), &ExecRequest{Command: "fake", Timeout: ptr(2.0), YieldMs: ptr(60000.0)})
		require.NoError(t, err)
		f := <-started
		assert.Equal(t, ExitReasonTimeout, res.Details.ExitReason)
		assert.Equal(t, 5*time.Second, time.Since(start), "SIGTERM at 2 s, SIGKILL 3 s later")
		assert.Equal(t, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL, syscall.SIGKILL}, f.Signals(),
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
		(<-started).Exit(0)
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
		f.Exit(0)
	})
}
