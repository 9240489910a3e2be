//go:build linux

package bgexec

// Memory under floods of output: the heap stays within the caps whatever
// the child prints. The figures it logs go into RELIABILITY.md.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// floodLongBlock is 1 MiB of text without a newline: ASCII, valid multi-byte
// code points and invalid UTF-8 (stray continuation bytes, truncated
// sequences, encoded surrogates, 0xff).
var floodLongBlock = sync.OnceValue(func() []byte {
	unit := "plain ascii 0123456789 \xff é \xc3 € \xed\xa0\x80 😀 \x80\x80 漢字 \xf0\x9f z\t"
	b := make([]byte, 0, 1<<20)
	for len(b)+len(unit) <= 1<<20 {
		b = append(b, unit...)
	}
	return b
})

// floodControlBlock is about 1 MiB of escape sequences and controls that a
// terminal would not show as text; every sequence is whole.
var floodControlBlock = sync.OnceValue(func() []byte {
	seqs := []string{
		"\x1b[31m", "\x1b[0m", "\x1b[2J", "\x1b[H", "\x1b[?25l", "\x1b[?1049h", "\x1b[1;2;3;4;5m",
		"\x1b]0;a window title\x07", "\x1b]8;;http://example.com\x1b\\", "\x1bP1$r0m\x1b\\",
		"\x07", "\x08", "\x00", "\x01", "\x7f", "\x0e", "\x0f", "\x1b(B", "\x1b=", "\x1b7", "\x1b8",
		"\xc2\x9b31m", "\xe2\x80\x8b", "\xc2\x85", "\x1b[>c", "\x1b_app\x1b\\", "\x1b[38;5;200m",
	}
	b := make([]byte, 0, 1<<20+64)
	for i := 0; len(b) < 1<<20; i++ {
		b = append(b, seqs[i%len(seqs)]...)
	}
	return b
})

// helperFlood writes at least n bytes as whole blocks: block repeated, with
// every fourth block on stderr; for text, a newline after every eighth
// block, so lines are about 8 MiB long.
func helperFlood(rest []string, block []byte, newlines bool) int {
	n, err := strconv.ParseInt(rest[0], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for i := int64(0); i*int64(len(block)) < n; i++ {
		w := os.Stdout
		if i%4 == 3 {
			w = os.Stderr
		}
		if _, err := w.Write(block); err != nil {
			return 1
		}
		if newlines && i%8 == 7 {
			_, _ = w.Write([]byte("\nshort line\n"))
		}
	}
	return 0
}

// collectedHeap is the heap in use after a collection. Buffers parked in a
// sync.Pool survive one collection and count: they are memory the
// session's readers use.
func collectedHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// settledHeap is the live heap once pools have been emptied too.
func settledHeap() uint64 {
	runtime.GC()
	return collectedHeap()
}

// memoryCaseEnv names the one flood of TestBoundedMemory that a re-executed
// test binary measures.
const memoryCaseEnv = "BGEXEC_MEMORY_CASE"

// TestBoundedMemory measures each flood in a test binary of its own: the
// heap belongs to the whole process, so nothing else may run where it is
// measured, while the other tests run beside it here.
func TestBoundedMemory(t *testing.T) {
	only := os.Getenv(memoryCaseEnv)
	if only == "" {
		t.Parallel()
	}
	// 64 MiB, seven times the bound below (the caps and the slack, about
	// 9 MiB): a buffer that kept more than a seventh of the flood fails. At the race
	// detector's 3 MiB/s, 256 MiB took each flood 100 s of two busy
	// processes, the longest run of the suite; BGEXEC_HEAVY=1 floods 2 GiB.
	volume := int64(64 << 20)
	if os.Getenv("BGEXEC_HEAVY") == "1" {
		volume = 2 << 30
	}
	const (
		slack = 8 << 20
		// The caps, as UTF-8 at 4 bytes per code point: the aggregate and
		// one pending buffer per stream.
		caps = DefaultMaxOutputChars*4 + 2*DefaultPendingMaxOutputChars*4
	)
	cases := []struct {
		name, helper string
		text         bool
	}{
		{"long lines with invalid UTF-8", "flood-text", true},
		// C0 controls stay visible as \xNN, so they fill the aggregate too.
		{"control characters and escape sequences only", "flood-controls", true},
	}
	isolated := map[string]*isolatedRun{}
	if only == "" {
		for _, c := range cases {
			isolated[c.helper] = startIsolated(t, memoryCaseEnv+"="+c.helper)
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s: %d MiB keep the heap within the caps", c.name, volume>>20), func(t *testing.T) {
			if only == "" {
				isolated[c.helper].report(t)
				return
			}
			if c.helper != only {
				t.Skip("measured by another process")
			}
			reg := newTestRegistry(t, Config{})
			sc := reg.Scope("mem")
			base := settledHeap()
			began := time.Now()
			id := startBackground(t, sc, &ExecRequest{Command: helper(c.helper, strconv.FormatInt(volume, 10))})

			// Sample the live heap while the flood runs.
			var peak atomic.Uint64
			samplerDone := make(chan struct{})
			stopSampling := make(chan struct{})
			go func() {
				defer close(samplerDone)
				// Each sample is a full collection: under -race it costs
				// enough to slow the flood, so sample ten times a second.
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for {
					if h := collectedHeap(); h > peak.Load() {
						peak.Store(h)
					}
					select {
					case <-stopSampling:
						return
					case <-tick.C:
					}
				}
			}()
			// A pattern waiter that never matches follows the long lines.
			ctx, cancel := context.WithTimeout(context.Background(), MaxWaitTimeoutMs*time.Millisecond)
			defer cancel()
			w, err := sc.Process(ctx, &ProcessRequest{Action: "wait", SessionID: id, Pattern: "^never matches$", Timeout: ptr(Number(MaxWaitTimeoutMs))})
			require.NoError(t, err)
			close(stopSampling)
			<-samplerDone
			took := time.Since(began)
			require.Equal(t, "exit", w.Details.Condition, w.Text())
			require.NotNil(t, w.Details.ExitCode, w.Text())
			require.Equal(t, 0, *w.Details.ExitCode)
			if c.text {
				assert.True(t, utf8.ValidString(w.Text()), "the drained output is valid UTF-8")
				assert.LessOrEqual(t, utf8.RuneCountInString(w.Text()), 2*DefaultPendingMaxOutputChars+1000, "pending output is capped per stream")
			}
			w = nil // measure the session, not our copy of its output

			kept := int64(settledHeap()) - int64(base)
			lg := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0)})
			require.NotNil(t, lg.Details.TotalChars)
			totalChars := *lg.Details.TotalChars
			if c.text {
				assert.Equal(t, int64(DefaultMaxOutputChars), totalChars, "the aggregate is full")
				assert.True(t, *lg.Details.Truncated)
				assert.True(t, utf8.ValidString(lg.Text()), "the log is valid UTF-8")
			} else {
				assert.Zero(t, totalChars, "no visible character was produced")
				assert.Equal(t, "(no output recorded)", lg.Text())
			}
			lg = nil
			mustProcess(t, sc, &ProcessRequest{Action: "clear", SessionID: id})
			cleared := int64(settledHeap()) - int64(base)
			growth := int64(peak.Load()) - int64(base)
			t.Logf("%d MiB in %v (%.0f MiB/s): peak heap growth %d KiB, retained after exit %d KiB, after clear %d KiB; bound %d KiB; totalChars %d",
				volume>>20, took.Round(time.Millisecond), float64(volume)/(1<<20)/took.Seconds(),
				growth>>10, kept>>10, cleared>>10, (caps+slack)>>10, totalChars)
			assert.LessOrEqual(t, growth, int64(caps+slack), "peak heap growth")
			assert.LessOrEqual(t, kept, int64(caps+slack), "heap growth with the finished session kept")
			assert.LessOrEqual(t, cleared, int64(slack), "heap growth once the session is cleared")
		})
	}
}

// isolatedRun is a test run again, alone, in a test binary of its own.
type isolatedRun struct {
	done chan struct{}
	out  []byte
	err  error
}

// startIsolated re-executes the test binary to run t's test alone, with env
// added to its environment, and returns at once. The run ends by the test
// binary's deadline, and is killed at the end of t if it is still going.
func startIsolated(t *testing.T, env string) *isolatedRun {
	t.Helper()
	deadline := time.Now().Add(30 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-30 * time.Second) // leave time to report
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	args := []string{"-test.run=^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count=1", "-test.v",
		"-test.timeout=" + time.Until(deadline).Round(time.Second).String()}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), env)
	cmd.WaitDelay = 10 * time.Second
	r := &isolatedRun{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.out, r.err = cmd.CombinedOutput()
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// report waits for the run, which its deadline bounds, and passes on its
// output and verdict. Each line of the output is marked, so that its
// "--- PASS" lines are not taken for this binary's own results.
func (r *isolatedRun) report(t *testing.T) {
	t.Helper()
	<-r.done
	t.Logf("the isolated run:\n| %s", strings.ReplaceAll(strings.TrimSpace(string(r.out)), "\n", "\n| "))
	require.NoError(t, r.err, "the isolated run failed")
}
