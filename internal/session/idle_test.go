package session

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIdleWaitsTiming(t *testing.T) {
	t.Run("PollIdle returns idle after the last of a burst", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, _ := start(t, Options{ID: "a-b", Background: true})
			go func() {
				time.Sleep(time.Second)
				_, _ = f.out.Write([]byte("one "))
				time.Sleep(200 * time.Millisecond)
				_, _ = f.out.Write([]byte("two"))
			}()
			begin := time.Now()
			dr := s.PollIdle(context.Background(), time.Minute, 500*time.Millisecond)
			assert.Equal(t, "one two", dr.Text)
			assert.Equal(t, 1700*time.Millisecond, time.Since(begin), "1 s to the first bytes, 200 ms to the last, 500 ms of quiet")
			assert.True(t, dr.PartialLine)
			assert.Equal(t, 500*time.Millisecond, dr.Quiet)
		})
	})
	t.Run("PollIdle without new output waits only for d", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, _, _, _ := start(t, Options{ID: "a-b", Background: true})
			begin := time.Now()
			dr := s.PollIdle(context.Background(), 3*time.Second, 100*time.Millisecond)
			assert.Empty(t, dr.Text)
			assert.Equal(t, 3*time.Second, time.Since(begin))
		})
	})
	t.Run("a busy child keeps an idle poll waiting until d, which bounds it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, _ := start(t, Options{ID: "a-b", Background: true})
			stop := make(chan struct{})
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
						_, _ = f.out.Write([]byte("tick\n"))
					}
				}
			}()
			begin := time.Now()
			dr := s.PollIdle(context.Background(), 2*time.Second, time.Second)
			close(stop)
			assert.Equal(t, 2*time.Second, time.Since(begin))
			assert.Contains(t, dr.Text, "tick\n")
		})
	})
	t.Run("Wait with Idle ends with the idle condition", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, _ := start(t, Options{ID: "a-b", Background: true})
			go func() {
				time.Sleep(time.Second)
				_, _ = f.out.Write([]byte("ready\n"))
			}()
			begin := time.Now()
			w := s.Wait(context.Background(), WaitSpec{Timeout: time.Minute, Idle: 300 * time.Millisecond})
			assert.Equal(t, CondIdle, w.Condition)
			assert.Equal(t, "ready\n", w.Text)
			assert.Equal(t, 1300*time.Millisecond, time.Since(begin))
		})
	})
	t.Run("an end ends an idle wait, which then reports it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, _ := start(t, Options{ID: "a-b", Background: true, NotifyOnExit: true})
			go func() {
				time.Sleep(time.Second)
				_, _ = f.out.Write([]byte("bye\n"))
				f.exit(0)
			}()
			dr := s.PollIdle(context.Background(), time.Minute, 10*time.Second)
			require.True(t, dr.Snap.Ended)
			_, due := s.BeginEvent()
			assert.False(t, due, "the poll reported the end")
		})
	})
}
