package session

import (
	"context"
	"regexp"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPTYLineEndsBecomeLF(t *testing.T) {
	t.Run("CRLF and lone CR are LF everywhere, also split across reads", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, ended := start(t, Options{PTY: true})
			// Each write is one read: the CRLF after "a" is split.
			for _, chunk := range []string{"a\r", "\r\nb\rc", "\r\n"} {
				_, _ = f.out.Write([]byte(chunk))
			}
			f.exit(0)
			<-ended
			agg, sn := s.Aggregated()
			assert.Equal(t, "a\nb\nc\n", agg)
			assert.Equal(t, int64(len(agg)), sn.TotalChars, "counts are of the text kept")
			assert.Equal(t, "a\nb\nc\n", s.Poll(context.Background(), 0).Text)
			p, _ := s.Page(ptr64(0), nil, 200)
			assert.Equal(t, []string{"a", "b", "c"}, p.Lines)
		})
	})
	t.Run("a pattern matches a line ended by a lone CR", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, _ := start(t, Options{PTY: true})
			got := make(chan Waited)
			go func() {
				got <- s.Wait(context.Background(), WaitSpec{Pattern: regexp.MustCompile(`^b$`), Timeout: time.Minute})
			}()
			synctest.Wait()
			_, _ = f.out.Write([]byte("a\rb\r"))
			w := <-got
			require.Equal(t, CondPattern, w.Condition)
			assert.Equal(t, "b", w.Matched)
		})
	})
	t.Run("a pipe keeps its bytes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, f, _, ended := start(t, Options{})
			_, _ = f.out.Write([]byte("a\r\nb\rc\n"))
			f.exit(0)
			<-ended
			agg, _ := s.Aggregated()
			assert.Equal(t, "a\r\nb\rc\n", agg)
			p, _ := s.Page(ptr64(0), nil, 200)
			assert.Equal(t, []string{"a", "b\rc"}, p.Lines, "log drops only the CR of CRLF")
		})
	})
}
