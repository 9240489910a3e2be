package sshhost

import (
	"bytes"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// chanReader reads one stream of a session channel; Close closes the
// channel, which ends both streams (the engine closes readers only after
// the exit, or when the drain timeout passed).
type chanReader struct {
	r  io.Reader
	ch ssh.Channel
}

func (r chanReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r chanReader) Close() error               { return r.ch.Close() }

// chanStdin is the command's input: Close sends EOF and keeps the
// channel's output open. An SSH channel write cannot be cancelled, so a
// write with a deadline runs on a goroutine of its own in chunks of
// stdinChunk bytes, and stops between chunks once the deadline passed:
// what it reports may fall short of what arrives by at most the one
// chunk in flight. The goroutine ends with that chunk, or when the
// channel closes at the session's end.
type chanStdin struct {
	ch   ssh.Channel
	wg   *sync.WaitGroup
	busy chan struct{} // holds a token while a write is in flight

	mu       sync.Mutex // guards deadline
	deadline time.Time
}

// stdinChunk is how much a bounded write hands the channel at once.
const stdinChunk = 32 << 10

func newChanStdin(ch ssh.Channel, wg *sync.WaitGroup) *chanStdin {
	return &chanStdin{ch: ch, wg: wg, busy: make(chan struct{}, 1)}
}

// SetWriteDeadline bounds the writes that follow; zero means none.
func (w *chanStdin) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	w.deadline = t
	w.mu.Unlock()
	return nil
}

func (w *chanStdin) Write(p []byte) (int, error) {
	w.mu.Lock()
	dl := w.deadline
	w.mu.Unlock()
	var expired <-chan time.Time
	if !dl.IsZero() {
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		expired = t.C
	}
	select {
	case w.busy <- struct{}{}: // an earlier write that timed out is done
	case <-expired:
		return 0, os.ErrDeadlineExceeded
	}
	if expired == nil {
		defer func() { <-w.busy }()
		return w.ch.Write(p)
	}
	var done atomic.Int64
	var stop atomic.Bool
	finished := make(chan error, 1)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.busy }()
		for len(p) > 0 && !stop.Load() {
			n, err := w.ch.Write(p[:min(len(p), stdinChunk)])
			done.Add(int64(n))
			if err != nil {
				finished <- err
				return
			}
			p = p[n:]
		}
		finished <- nil
	}()
	select {
	case err := <-finished:
		return int(done.Load()), err
	case <-expired:
		stop.Store(true)
		return int(done.Load()), os.ErrDeadlineExceeded
	}
}

// TryWrite hands p (a terminal's reply to a query, a few bytes) to the
// channel on a goroutine of its own unless a write is in flight, so the
// output reader that met the query never waits for the node. The
// goroutine ends with the write, or when the channel closes at the
// session's end.
func (w *chanStdin) TryWrite(p []byte) bool {
	select {
	case w.busy <- struct{}{}:
	default:
		return false
	}
	buf := bytes.Clone(p)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.busy }()
		_, _ = w.ch.Write(buf) // best effort, as on a local terminal
	}()
	return true
}

func (w *chanStdin) Close() error { return w.ch.CloseWrite() }
