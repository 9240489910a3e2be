//go:build linux

package bgexec

// Memory under floods of output: the heap stays within the caps whatever
// the child prints. The figures it logs go into RELIABILITY.md.

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	// 32 MiB, three and a half times the bound below (the caps and the
	// slack, about 9 MiB): a buffer that kept more than a third of the
	// flood fails. At the race detector's few MiB/s each flood costs two
	// busy processes about 5 s of CPU per 32 MiB, the most of any test in
	// the suite; BGEXEC_HEAVY=1 (run by .ci/run without the race detector)
	// floods 2 GiB.
	volume := int64(32 << 20)
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
