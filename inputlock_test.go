//go:build linux

package bgexec

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pipeQueued reports how many bytes wait unread in the session's stdin
// pipe, through a read end of its own opened via /proc (it reads nothing:
// FIONREAD only counts). The pipe is fd 0 of pid or, where pid is a
// wrapper whose own fd 0 is /dev/null (a pooled sandbox's bwrap), of the
// first of its descendants whose fd 0 is a pipe.
func pipeQueued(t *testing.T, pid int) int {
	t.Helper()
	for next := []int{pid}; len(next) > 0; {
		p := next[0]
		next = next[1:]
		dir := "/proc/" + strconv.Itoa(p)
		if f, err := os.OpenFile(dir+"/fd/0", os.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
			st, err := f.Stat()
			if err == nil && st.Mode()&os.ModeNamedPipe != 0 {
				n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ)
				_ = f.Close()
				require.NoError(t, err)
				return n
			}
			_ = f.Close()
		}
		b, _ := os.ReadFile(dir + "/task/" + strconv.Itoa(p) + "/children") // gone: nothing below
		for _, c := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(c); err == nil {
				next = append(next, n)
			}
		}
	}
	return 0 // not started yet: the caller looks again
}

// TestInputWaitsAtMostItsDeadline attacks the input lock: a write that
// queues behind another write (one blocked on a child that never reads)
// must return when its own call's context ends, saying nothing was
// written, instead of waiting out the other write and then its own bound.
//
// Each case holds a write blocked for WriteBound on a session of its own
// and counts no process-wide resource, so the cases run side by side and
// beside other tests.
func TestInputWaitsAtMostItsDeadline(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")
	cases := []struct {
		name string
		req  ProcessRequest
	}{
		{"a write", ProcessRequest{Action: "write", Data: "x"}},
		{"a send-keys", ProcessRequest{Action: "send-keys", Keys: []string{"Enter"}}},
		{"a submit", ProcessRequest{Action: "submit"}},
		{"a paste", ProcessRequest{Action: "paste", Text: "x"}},
		{"a write with eof", ProcessRequest{Action: "write", Data: "x", EOF: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name+" behind a blocked write returns at its deadline", func(t *testing.T) {
			t.Parallel()
			res := mustExec(t, sc, &ExecRequest{Command: helper("no-read"), Stdin: "pipe", Background: true})
			id, pid := res.Details.SessionID, res.Details.Pid
			waitFor(t, sc, id, "^ready$")
			first := make(chan *Result, 1)
			go func() {
				r, _ := sc.Process(context.Background(), &ProcessRequest{Action: "write", SessionID: id, Data: strings.Repeat("y", 1<<20)})
				first <- r
			}()
			// The first write holds the input once its bytes reach the pipe.
			require.Eventually(t, func() bool { return pipeQueued(t, pid) > 0 }, 10*time.Second, 5*time.Millisecond)
			select {
			case r := <-first:
				require.FailNow(t, "the first write ended before the second began", r.Text())
			default:
			}

			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			req := tc.req
			req.SessionID = id
			start := time.Now()
			r, err := sc.Process(ctx, &req)
			elapsed := time.Since(start)
			require.NoError(t, err)
			// The first write holds the input for WriteBound (5 s); the
			// second must not wait for it.
			assert.Less(t, elapsed, WriteBound/2, "the queued call waited out the other write")
			assert.Equal(t, StatusFailed, r.Details.Status)
			assert.True(t, r.IsError)
			assert.Equal(t, "Nothing was written to session "+id+": another write to it was still in progress when this call's deadline came. Retry once it has finished.", r.Text())

			select {
			case r := <-first:
				assert.Regexp(t, `^Wrote \d+ of 1048576 bytes to session `+id, r.Text())
			case <-time.After(WriteBound + 10*time.Second):
				require.FailNow(t, "the first write never returned")
			}
			mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		})
	}
}
