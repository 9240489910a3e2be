package session

import (
	"bytes"
	"testing"

	"github.com/bgexec/bgexec/internal/termtext"
)

// BenchmarkIngestReads is the reader's work for a flood of 100-byte text
// lines in ReadChunk reads, without the reads: clean each read and add it to
// a session's buffers at the default caps. "cleaner" runs every read
// through the cleaner (the way before plain reads); "plain" is readStream's
// way. The ratio of the two is what the plain test saves.
func BenchmarkIngestReads(b *testing.B) {
	line := append(bytes.Repeat([]byte("0123456789"), 10)[:99], '\n')
	chunk := bytes.Repeat(line, ReadChunk/len(line)+1)[:ReadChunk]
	const reads = 64
	b.Run("cleaner", func(b *testing.B) {
		o := newOutput(200000, 30000)
		var cl termtext.Cleaner
		buf := make([]byte, 0, ReadChunk)
		b.SetBytes(reads * ReadChunk)
		for b.Loop() {
			for range reads {
				text, n, _ := cl.Append(buf[:0], chunk)
				o.add(Stdout, text, n)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		o := newOutput(200000, 30000)
		var sc streamCleaner
		buf := make([]byte, 0, ReadChunk)
		b.SetBytes(reads * ReadChunk)
		for b.Loop() {
			for range reads {
				if ok, lfs := sc.plain(chunk); ok {
					o.addLines(Stdout, chunk, len(chunk), lfs)
					continue
				}
				text, n, _ := sc.clean(buf[:0], chunk)
				o.add(Stdout, text, n)
			}
		}
	})
}
