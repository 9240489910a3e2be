//go:build linux

package session

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func newTestSpill(t *testing.T, maxBytes, quotaBytes int64) (*spill, *SpillQuota, string) {
	t.Helper()
	dir := t.TempDir()
	q := &SpillQuota{}
	return newSpill(&SpillSpec{Dir: dir, MaxBytes: maxBytes, Quota: q, QuotaBytes: quotaBytes}, "s1"), q, dir
}

func write(p *spill, text string) {
	p.queue([]byte(text))
	p.flush()
}

func TestSpillFile(t *testing.T) {
	t.Run("nothing written makes no file", func(t *testing.T) {
		p, _, dir := newTestSpill(t, 100, 100)
		p.flush()
		p.finish()
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, ents)
		assert.Equal(t, SpillState{On: true}, p.snapshot())
	})
	t.Run("the session quota keeps the first bytes", func(t *testing.T) {
		p, q, _ := newTestSpill(t, 5, 100)
		write(p, "abc")
		write(p, "defgh")
		write(p, "ijk")
		p.finish()
		st := p.snapshot()
		assert.Equal(t, SpillSessionQuota, st.Stop)
		assert.Equal(t, int64(5), st.Bytes)
		b, err := os.ReadFile(st.Path)
		require.NoError(t, err)
		assert.Equal(t, "abcde", string(b))
		assert.Equal(t, int64(5), q.Used())
		assert.True(t, strings.HasPrefix(filepath.Base(st.Path), "s1-"))
		p.remove()
		_, err = os.Stat(st.Path)
		assert.ErrorIs(t, err, os.ErrNotExist)
		assert.Zero(t, q.Used())
	})
	t.Run("a write error stops the file and is kept as the reason", func(t *testing.T) {
		p, q, _ := newTestSpill(t, 100, 100)
		write(p, "abc")
		st := p.snapshot()
		ro, err := os.Open(st.Path) // read-only: the next write fails
		require.NoError(t, err)
		p.mu.Lock()
		good := p.f
		p.f = ro
		p.mu.Unlock()
		require.NoError(t, good.Close())
		write(p, "def")
		write(p, "ghi") // after the stop: not even queued
		st = p.snapshot()
		assert.Contains(t, st.Stop, "writing it failed: ")
		assert.Equal(t, int64(3), st.Bytes)
		assert.Equal(t, int64(3), q.Used(), "the failed write's grant is given back")
		assert.Empty(t, p.queued)
		p.finish()
		p.remove()
		assert.Zero(t, q.Used())
	})
	t.Run("a directory that vanished is reported", func(t *testing.T) {
		p, q, dir := newTestSpill(t, 100, 100)
		require.NoError(t, os.Remove(dir))
		write(p, "abc")
		st := p.snapshot()
		assert.Contains(t, st.Stop, "it could not be created: ")
		assert.Empty(t, st.Path)
		assert.Zero(t, q.Used())
		p.remove()
	})
	t.Run("removal during writes from two streams leaves no file and no quota", func(t *testing.T) {
		for range 50 {
			p, q, dir := newTestSpill(t, 1<<20, 1<<20)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for range 200 {
						write(p, "0123456789\n")
					}
				}()
			}
			close(start)
			p.remove()
			wg.Wait()
			p.finish()
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, ents)
			require.Zero(t, q.Used())
			require.True(t, p.snapshot().Removed)
		}
	})
	t.Run("the registry quota is shared", func(t *testing.T) {
		q := &SpillQuota{}
		dir := t.TempDir()
		a := newSpill(&SpillSpec{Dir: dir, MaxBytes: 100, Quota: q, QuotaBytes: 8}, "a")
		b := newSpill(&SpillSpec{Dir: dir, MaxBytes: 100, Quota: q, QuotaBytes: 8}, "b")
		write(a, "12345")
		write(b, "12345")
		assert.Empty(t, a.snapshot().Stop)
		assert.Equal(t, SpillRegistryQuota, b.snapshot().Stop)
		assert.Equal(t, int64(3), b.snapshot().Bytes)
		a.remove()
		assert.Equal(t, int64(3), q.Used())
		b.remove()
		assert.Zero(t, q.Used())
	})
}

// A spill write that cannot finish (a disk that hangs) holds up only the
// reader that makes it: the session's lock is free, so a poll, a log or a
// kill still answer, and the output read before is already in them.
func TestSpillSlowDiskHoldsNoLock(t *testing.T) {
	q := &SpillQuota{}
	s, f, _, ended := start(t, Options{ID: "slow", Spill: &SpillSpec{Dir: t.TempDir(), MaxBytes: 1 << 30, Quota: q, QuotaBytes: 1 << 30}})
	_, err := f.out.Write([]byte("first\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.Spill().Bytes == 6 }, 10*time.Second, time.Millisecond)

	// The "disk" is now a pipe nobody reads: a write past its capacity waits.
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	p := s.spill
	p.mu.Lock()
	real := p.f
	p.f = pw
	p.mu.Unlock()
	require.NoError(t, real.Close())

	const flood = 200 << 10
	wrote := make(chan error, 1)
	go func() {
		_, err := f.out.Write([]byte(strings.Repeat("x", flood-1) + "\n"))
		wrote <- err
	}()
	rc, err := pr.SyscallConn()
	require.NoError(t, err)
	size := 0
	require.NoError(t, rc.Control(func(fd uintptr) {
		_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 4096) // Best effort: the size is read back.
		size, err = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
	}))
	require.NoError(t, err)
	require.Less(t, size, flood)
	pending := func() int {
		n := 0
		_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
		return n
	}
	require.Eventually(t, func() bool { return pending() == size }, 10*time.Second, time.Millisecond, "the spill write fills the pipe and waits")

	answered := make(chan string, 1)
	go func() {
		agg, _ := s.Aggregated()
		_ = s.Spill()
		answered <- agg
	}()
	select {
	case agg := <-answered:
		assert.GreaterOrEqual(t, strings.Count(agg, "x"), size, "what was read is in the log already")
	case <-time.After(10 * time.Second):
		t.Fatal("the session's lock is held during a spill write")
	}

	// The disk recovers: everything reaches the file, and the session ends.
	got := make(chan int, 1)
	go func() {
		b, _ := io.ReadAll(pr)
		got <- len(b)
	}()
	require.NoError(t, <-wrote)
	f.exit(0)
	<-ended
	select {
	case n := <-got:
		assert.Equal(t, flood, n)
	case <-time.After(10 * time.Second):
		t.Fatal("the spill file was not closed at the end")
	}
	assert.Equal(t, int64(6+flood), s.Spill().Bytes)
	s.RemoveSpill()
	assert.Zero(t, q.Used())
}
