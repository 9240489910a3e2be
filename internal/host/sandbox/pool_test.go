package sandbox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeStarter counts starts and discards of ints: value n is the n-th
// start. fail makes the next starts fail.
type fakeStarter struct {
	mu        sync.Mutex
	started   int
	discarded []int
	fail      int // how many of the next starts fail
}

func (f *fakeStarter) start() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		return 0, errors.New("cannot start")
	}
	f.started++
	return f.started, nil
}

func (f *fakeStarter) discard(v int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.discarded = append(f.discarded, v)
}

func (f *fakeStarter) counts() (started int, discarded []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started, append([]int(nil), f.discarded...)
}

func use(int) Verdict { return Use }

func TestPoolFillsTakesAndRefillsWhenQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStarter{}
		p := NewPool(2, f.start, f.discard)
		defer p.Close()
		require.NoError(t, p.AwaitFull(t.Context()))
		v, ok := p.Take(use)
		require.True(t, ok)
		assert.Equal(t, 1, v, "the oldest first")
		assert.Equal(t, 1, p.Ready())
		// No refill until no Take came for RefillDelay.
		time.Sleep(RefillDelay / 2)
		synctest.Wait()
		started, _ := f.counts()
		assert.Equal(t, 2, started, "no start right after a take")
		_, _ = p.Take(func(int) Verdict { return Keep }) // a call that does not fit: the delay starts again
		time.Sleep(RefillDelay * 3 / 4)
		synctest.Wait()
		started, _ = f.counts()
		assert.Equal(t, 2, started, "still no start: a call came since")
		time.Sleep(RefillDelay)
		synctest.Wait()
		started, _ = f.counts()
		assert.Equal(t, 3, started)
		assert.Equal(t, 2, p.Ready())
		assert.Equal(t, 1, p.Taken())
	})
}

func TestPoolTakeFilters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStarter{}
		p := NewPool(3, f.start, f.discard)
		require.NoError(t, p.AwaitFull(t.Context()))
		// 1 is dropped, 2 kept, 3 taken.
		v, ok := p.Take(func(v int) Verdict {
			switch v {
			case 1:
				return Drop
			case 2:
				return Keep
			}
			return Use
		})
		require.True(t, ok)
		assert.Equal(t, 3, v)
		time.Sleep(RefillDelay * 2)
		synctest.Wait()
		_, discarded := f.counts()
		assert.Equal(t, []int{1}, discarded, "the dropped one is discarded in the background")
		// Nothing fits: nothing is handed out.
		_, ok = p.Take(func(int) Verdict { return Keep })
		assert.False(t, ok)
		p.Close()
		_, discarded = f.counts()
		assert.ElementsMatch(t, []int{1, 2, 4, 5}, discarded, "Close discards every value not taken")
		_, ok = p.Take(use)
		assert.False(t, ok, "a closed pool hands out nothing")
		p.Close() // again: a no-op
	})
}

// Shed discards what is ready at once, and the refill waits as after a
// Take.
func TestPoolShed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStarter{}
		p := NewPool(2, f.start, f.discard)
		require.NoError(t, p.AwaitFull(t.Context()))
		assert.Equal(t, 2, p.Shed())
		_, discarded := f.counts()
		assert.Equal(t, []int{1, 2}, discarded, "discarded before Shed returns")
		assert.Zero(t, p.Ready())
		_, ok := p.Take(use)
		assert.False(t, ok, "nothing left to hand out")
		time.Sleep(RefillDelay / 2)
		synctest.Wait()
		started, _ := f.counts()
		assert.Equal(t, 2, started, "no start right after a shed")
		require.NoError(t, p.AwaitFull(t.Context()), "the pool refills")
		assert.Zero(t, p.Taken(), "shed values are not taken")
		p.Close()
		assert.Zero(t, p.Shed(), "a closed pool has nothing to shed")
		var nilPool *Pool[int]
		assert.Zero(t, nilPool.Shed())
	})
}

func TestPoolBacksOffAfterFailedStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStarter{fail: 3}
		start := time.Now()
		p := NewPool(1, f.start, f.discard)
		defer p.Close()
		require.NoError(t, p.AwaitFull(t.Context()))
		// Three failures: waits of 100, 200 and 400 ms before the 4th try.
		assert.Equal(t, 700*time.Millisecond, time.Since(start))
	})
}

func TestPoolCloseWaitsForTheStartUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var mu sync.Mutex
		var discarded []int
		p := NewPool(1, func() (int, error) {
			<-release
			return 7, nil
		}, func(v int) {
			mu.Lock()
			defer mu.Unlock()
			discarded = append(discarded, v)
		})
		synctest.Wait() // the refill is blocked in start
		closed := make(chan struct{})
		go func() {
			p.Close()
			close(closed)
		}()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while a start was under way")
		default:
		}
		close(release)
		<-closed
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []int{7}, discarded, "the value started during Close is discarded")
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		assert.ErrorIs(t, p.AwaitFull(ctx), context.Canceled, "a closed pool never fills")
	})
}

func TestPoolNil(t *testing.T) {
	var p *Pool[int]
	_, ok := p.Take(use)
	assert.False(t, ok)
	assert.Zero(t, p.Ready())
	assert.Zero(t, p.Size())
	assert.Zero(t, p.Taken())
	p.Close()
}
