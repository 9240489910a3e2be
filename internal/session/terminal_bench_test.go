package session

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkTerminalWrite feeds 4 MiB of 100-byte lines in 4 KiB writes (a
// PTY read's size) to a 120×30 terminal: through the skipper (the
// terminal's write, as sessions do), and, as the baseline, every byte to
// the emulator. Both end with the same screen (TestSkipperMatchesFullEmulation).
func BenchmarkTerminalWrite(b *testing.B) {
	for _, kind := range []string{"plain", "colored"} {
		b.Run(kind, func(b *testing.B) {
			var sb strings.Builder
			for i := 0; sb.Len() < 4<<20; i++ {
				if kind == "colored" {
					fmt.Fprintf(&sb, "\x1b[32m%-89d\x1b[0m\r\n", i)
				} else {
					fmt.Fprintf(&sb, "%-98d\r\n", i)
				}
			}
			data := []byte(sb.String())
			chunks := func(f func([]byte)) {
				for i := 0; i < len(data); i += 4096 {
					f(data[i:min(i+4096, len(data))])
				}
			}
			for _, side := range []string{"skipper", "every-byte"} {
				b.Run(side, func(b *testing.B) {
					term, _ := startTerminal(b, 120, 30)
					b.SetBytes(int64(len(data)))
					b.ReportAllocs()
					for b.Loop() {
						if side == "skipper" {
							chunks(func(p []byte) { term.write(p) })
							term.screen(false)
						} else {
							chunks(func(p []byte) { term.mu.Lock(); term.feed(p); term.mu.Unlock() })
						}
					}
				})
			}
		})
	}
}
