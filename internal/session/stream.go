package session

import (
	"io"
	"os"
	"sync"
	"syscall"
)

const (
	// ReadChunk is the size of one read. It is lent from the pool for that
	// read only, so it costs nothing while a session is idle.
	ReadChunk = 128 << 10
	// DefaultPipe is Linux's default pipe capacity: a read that returns this
	// much found the pipe full, so the child writes faster than we read.
	DefaultPipe = 64 << 10
	// BusyPipe is the capacity a pipe gets once found full. The child can
	// then keep writing while we process the last read, and each wakeup
	// moves four times as much: on a flood this cuts the context switches,
	// which cost more than anything else on the path (BENCHMARKS.md).
	BusyPipe = 256 << 10
)

// ChunkPool lends read buffers only for the duration of one read, so an
// idle session holds no buffer while its reader is parked in the poller.
type ChunkPool struct{ p sync.Pool }

func (c *ChunkPool) get() *[]byte {
	if b, ok := c.p.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, ReadChunk)
	return &b
}

func (c *ChunkPool) put(b *[]byte) { c.p.Put(b) }

// pumpFile reads f until EOF (EIO from a PTY master counts as EOF) and hands
// each chunk to sink, which must not keep it. When a read deadline stops the
// wait (the drain timeout), whatever is already buffered is still taken.
func pumpFile(f *os.File, pool *ChunkPool, sink func([]byte)) {
	rc, err := f.SyscallConn()
	if err != nil {
		pumpReader(f, pool, sink)
		return
	}
	eof := false
	grown := false
	read := func(fd uintptr) bool {
		for {
			bp := pool.get()
			n, err := syscall.Read(int(fd), *bp)
			if n >= DefaultPipe && !grown {
				// Once, for a busy pipe. It fails harmlessly on a PTY (never
				// this full) and for an unprivileged user over the pipe
				// quota (fs.pipe-user-pages-soft).
				grown = true
				growPipe(fd)
			}
			if n > 0 {
				sink((*bp)[:n])
			}
			pool.put(bp)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return false
			case err != nil || n == 0:
				eof = true
				return true
			}
		}
	}
	for !eof {
		if err := rc.Read(read); err != nil {
			_ = rc.Control(func(fd uintptr) { read(fd) })
			return
		}
	}
}

// pumpReader is pumpFile for readers that are not pollable files (fakes).
func pumpReader(r io.Reader, pool *ChunkPool, sink func([]byte)) {
	for {
		bp := pool.get()
		n, err := r.Read(*bp)
		if n > 0 {
			sink((*bp)[:n])
		}
		pool.put(bp)
		if err != nil {
			return // EOF, closed or failed: the stream ends either way
		}
	}
}
