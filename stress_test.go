//go:build linux

package bgexec

// Concurrent use: random calls from many workers, and Close while they
// run. The figures they log go into RELIABILITY.md.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// endRecord is the end state first observed for a session.
type endRecord struct {
	status   Status
	code     string // "" when no exit code, else the number
	signal   string
	reason   ExitReason // "" until a result that carries it was seen
	seenSeq  int64      // seq at which the first observing call returned
	observed int
}

// stressBook records every observation of every session. Session ids are
// reissued once a session is forgotten, so a session is an incarnation of
// an id: the n-th exec that returned it running. Every call is stamped with
// sequence numbers taken before and after it; an observation is attributed
// to the incarnation whose exec returned before the call began, and skipped
// when the call overlaps an exec that returned the same id (it may have
// seen either incarnation).
type stressBook struct {
	seq atomic.Int64

	mu           sync.Mutex
	ended        map[string]*endRecord // by incarnation key "<id>#<n>"
	ids          []string
	incarnations map[string][][2]int64 // id → [start, end] of each exec that returned it
	ambiguous    int
	reissued     int
	violations   []string
	counts       map[string]int
}

// incarnation names the session a call from start to end observed, or ""
// when that is ambiguous.
func (b *stressBook) incarnationLocked(id string, start, end int64) string {
	n := 0
	for _, iv := range b.incarnations[id] {
		if iv[0] < end && iv[1] > start {
			b.ambiguous++
			return ""
		}
		if iv[1] < start {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return id + "#" + strconv.Itoa(n)
}

func (b *stressBook) violate(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.violations) < 50 {
		b.violations = append(b.violations, fmt.Sprintf(format, args...))
	}
}

func (b *stressBook) addID(id string, start, end int64) {
	b.mu.Lock()
	if len(b.incarnations[id]) > 0 {
		b.reissued++
	}
	b.incarnations[id] = append(b.incarnations[id], [2]int64{start, end})
	b.ids = append(b.ids, id)
	b.mu.Unlock()
}

func (b *stressBook) randomID(rng *rand.Rand) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.ids) == 0 || rng.IntN(20) == 0 {
		return "no-such-session"
	}
	// Favour recent sessions: they are the ones still running.
	n := len(b.ids)
	return b.ids[n-1-rng.IntN(min(n, 12))]
}

func (b *stressBook) count(action string) {
	b.mu.Lock()
	b.counts[action]++
	b.mu.Unlock()
}

// observe records what a call that ran from seq start to seq end saw of
// session id. hasReason says whether the result carries exitReason.
func (b *stressBook) observe(id string, start, end int64, status Status, code *int, signal string, reason ExitReason, hasReason bool, via string) {
	switch status {
	case StatusRunning, StatusCompleted, StatusFailed:
	default:
		b.violate("%s of %s: status %q", via, id, status)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	key := b.incarnationLocked(id, start, end)
	if key == "" {
		return
	}
	id = key
	rec := b.ended[id]
	if status == StatusRunning {
		if rec != nil && start > rec.seenSeq {
			b.violations = append(b.violations, fmt.Sprintf("%s of %s: running after it was seen %s", via, id, rec.status))
		}
		return
	}
	if hasReason && reason == "" {
		b.violations = append(b.violations, fmt.Sprintf("%s of %s: ended without exitReason", via, id))
	}
	if rec == nil {
		rec = &endRecord{status: status, code: codeString(code), signal: signal, seenSeq: end}
		b.ended[id] = rec
	}
	rec.observed++
	rec.seenSeq = min(rec.seenSeq, end)
	if rec.status != status || rec.code != codeString(code) || rec.signal != signal {
		b.violations = append(b.violations, fmt.Sprintf("%s of %s: end state changed from %s/%q/%q to %s/%q/%q",
			via, id, rec.status, rec.code, rec.signal, status, codeString(code), signal))
	}
	if hasReason {
		if rec.reason == "" {
			rec.reason = reason
		} else if rec.reason != reason {
			b.violations = append(b.violations, fmt.Sprintf("%s of %s: exitReason changed from %s to %s", via, id, rec.reason, reason))
		}
	}
}

var stressCommands = []struct {
	cmd   string
	stdin string
	pty   bool
}{
	{"true", "", false},
	{"exit 7", "", false},
	{"echo hello; echo oops >&2", "", false},
	{"sleep 0.2; echo done", "", false},
	{"sleep 30", "", false},
	{"cat", "pipe", false},
	{"yes | head -n 3000", "", false},
	{"trap '' TERM; sleep 30", "", false},
	{"read x; echo got $x", "", true},
	{"sleep 0.1; exit 3", "", true},
	{"printf 'a\\033[31mb\\n'; sleep 30", "", true},
	{"kill -9 $$", "", false},
}

// stressAction runs one random call and records what it saw.
func stressAction(ctx context.Context, rng *rand.Rand, scopes []*Scope, book *stressBook) {
	sc := scopes[rng.IntN(len(scopes))]
	var timeout *Number
	if rng.IntN(2) == 0 {
		timeout = ptr(Number(rng.IntN(150)))
	}
	actions := []string{"exec", "exec-bg", "poll", "log", "write", "kill", "remove", "clear", "list", "wait"}
	action := actions[rng.IntN(len(actions))]
	book.count(action)
	start := book.seq.Add(1)
	var (
		res *Result
		err error
		id  string
	)
	switch action {
	case "exec", "exec-bg":
		c := stressCommands[rng.IntN(len(stressCommands))]
		req := &ExecRequest{Command: c.cmd, Stdin: c.stdin, PTY: c.pty, Background: action == "exec-bg", YieldMs: ptr(float64(10 + rng.IntN(150)))}
		if rng.IntN(3) == 0 {
			req.Timeout = ptr(0.05 + rng.Float64()/2)
		}
		res, err = sc.Exec(ctx, req)
	case "list":
		res, err = sc.Process(ctx, &ProcessRequest{Action: "list"})
	default:
		id = book.randomID(rng)
		req := &ProcessRequest{Action: action, SessionID: id, Timeout: timeout}
		switch action {
		case "log":
			if rng.IntN(2) == 0 {
				req.Offset = ptr(rng.IntN(5))
			}
			if rng.IntN(2) == 0 {
				req.Limit = ptr(1 + rng.IntN(5))
			}
		case "write":
			req.Data, req.EOF = "line\n", rng.IntN(3) == 0
		case "wait":
			req.Timeout = ptr(Number(rng.IntN(150))) // the default wait is 30 s
			if rng.IntN(2) == 0 {
				req.Pattern = "done|got"
			}
		}
		res, err = sc.Process(ctx, req)
	}
	end := book.seq.Add(1)
	if err != nil {
		book.violate("%s: Go error %v", action, err)
		return
	}
	if res == nil {
		book.violate("%s: nil result without an error", action)
		return
	}
	d := &res.Details
	switch action {
	case "exec", "exec-bg":
		switch d.Status {
		case StatusRunning:
			if d.SessionID == "" || d.Pid <= 0 {
				book.violate("exec: running without a session id or pid: %+v", d)
				return
			}
			book.addID(d.SessionID, start, end)
		case StatusFailed, StatusCompleted:
			if d.Status == StatusFailed && res.IsError && strings.HasPrefix(res.Text(), "Too many running sessions") {
				// Random kills and removes may not keep up with the
				// long sleeps: the quota refuses, and nothing ran.
				book.count("refused")
				return
			}
			if d.ExitReason == "" {
				book.violate("exec: finished without exitReason: %+v %q", d, res.Text())
			}
			if d.Status == StatusCompleted && (d.ExitCode == nil || d.ExitReason != ExitReasonExit) {
				book.violate("exec: completed without an exit code: %+v", d)
			}
		default:
			book.violate("exec: status %q: %q", d.Status, res.Text())
		}
	case "list":
		for _, s := range d.Sessions {
			book.observe(s.SessionID, start, end, s.Status, s.ExitCode, s.ExitSignal, "", false, "list")
		}
	case "poll", "wait", "kill":
		if d.SessionID == id {
			book.observe(id, start, end, d.Status, d.ExitCode, d.ExitSignal, d.ExitReason, true, action)
		}
	case "log":
		if d.SessionID == id {
			book.observe(id, start, end, d.Status, d.ExitCode, d.ExitSignal, "", false, action)
		}
	}
}

func TestStress(t *testing.T) {
	// It counts the whole process's goroutines, descriptors and children.
	if !runsHere(t) {
		return
	}
	const workers = 8
	dur := 5 * time.Second
	notes := &countingNotifier{}
	reg, err := NewRegistry(sandboxed(Config{YieldMs: 100, KillGrace: 200 * time.Millisecond, DrainTimeout: 300 * time.Millisecond, Notifier: notes}))
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = reg.Close(context.Background())
		}
	})
	scopes := []*Scope{reg.Scope("agent:a"), reg.Scope("agent:b")}
	book := &stressBook{ended: map[string]*endRecord{}, counts: map[string]int{}, incarnations: map[string][][2]int64{}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var calls atomic.Int64
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					book.violate("worker %d panicked: %v", w, p)
				}
			}()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for time.Now().Before(stop) {
				stressAction(ctx, rng, scopes, book)
				calls.Add(1)
			}
		}()
	}
	wg.Wait()

	t.Run("every observation is consistent", func(t *testing.T) {
		book.mu.Lock()
		defer book.mu.Unlock()
		assert.Empty(t, book.violations)
		t.Logf("%d calls by %d workers in %v; %d sessions backgrounded (%d under a reissued id), %d seen ended, %d observations skipped as ambiguous; actions %v",
			calls.Load(), workers, dur, len(book.ids), book.reissued, len(book.ended), book.ambiguous, book.counts)
	})

	t.Run("the recorded end state is the one first observed", func(t *testing.T) {
		book.mu.Lock()
		defer book.mu.Unlock()
		checked := 0
		for key, rec := range book.ended {
			id, _, _ := strings.Cut(key, "#")
			s := sessionOf(reg, id)
			if s == nil || key != id+"#"+strconv.Itoa(len(book.incarnations[id])) {
				continue // cleared or removed, or a later incarnation holds the id
			}
			sn := s.Snapshot(0)
			ended, e := sn.Ended, sn.Exit
			if assert.True(t, ended, "session %s was seen ended", id) {
				assert.Equal(t, rec.status, statusOf(e.Status()), "session %s", id)
				assert.Equal(t, rec.code, codeString(e.Code), "session %s", id)
				assert.Equal(t, rec.signal, e.Signal, "session %s", id)
				if rec.reason != "" {
					assert.Equal(t, rec.reason, reasonOf(e.Reason), "session %s", id)
				}
				checked++
			}
		}
		t.Logf("%d ended sessions still registered match their first observation", checked)
	})

	t.Run("no session is notified more than once", func(t *testing.T) {
		events, beats := notes.snapshot()
		book.mu.Lock()
		defer book.mu.Unlock()
		for id, n := range beats {
			// A reissued id may name several sessions, each notified once.
			assert.LessOrEqual(t, n, max(1, len(book.incarnations[id])), "heartbeats for %s", id)
		}
		t.Logf("%d exit events, %d sessions woken", events, len(beats))
	})

	t.Run("Close returns within its deadline and ends everything", func(t *testing.T) {
		closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		began := time.Now()
		require.NoError(t, reg.Close(closeCtx))
		closed = true
		took := time.Since(began)
		t.Logf("Close took %v", took.Round(time.Millisecond))
		assert.Less(t, took, 10*time.Second)
		_, err := scopes[0].Exec(ctx, &ExecRequest{Command: "true"})
		assert.ErrorIs(t, err, ErrClosed)
		assert.Empty(t, children(t), "no child process is left")
	})
}

// TestStressCloseDuringCalls closes the registry while workers are still
// starting and driving sessions: Close must end everything it started,
// including runs whose spawn raced with it.
func TestStressCloseDuringCalls(t *testing.T) {
	// It counts the whole process's goroutines, descriptors and children.
	if !runsHere(t) {
		return
	}
	const workers = 8
	stressRounds := 3
	if n, err := strconv.Atoi(os.Getenv("BGEXEC_CLOSE_ROUNDS")); err == nil && n > 0 {
		stressRounds = n
	}
	for round := range stressRounds {
		t.Run(fmt.Sprintf("round %d leaves no process, goroutine or cgroup behind", round+1), func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			tag := newTag(t)
			reg, err := NewRegistry(sandboxed(Config{YieldMs: 50, KillGrace: 200 * time.Millisecond, DrainTimeout: 300 * time.Millisecond}))
			require.NoError(t, err)
			cgRoot := ""
			if cgroupRoot(reg) != nil {
				cgRoot = cgroupRoot(reg).Dir()
			}
			sc := reg.Scope("a")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			var started, refused, asResult atomic.Int64
			quit := make(chan struct{})
			going := make(chan struct{})
			var goingOnce sync.Once
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-quit:
							return
						default:
						}
						res, err := sc.Exec(ctx, &ExecRequest{Command: "sleep 30", Background: true, PTY: (w+i)%4 == 0, Env: map[string]string{tagEnv: tag}})
						switch {
						case errors.Is(err, ErrClosed):
							refused.Add(1)
							return
						case err != nil || res == nil:
							t.Errorf("exec during Close: %v %v", err, res)
						case res.Details.Status == StatusRunning:
							if started.Add(1) == 20 {
								goingOnce.Do(func() { close(going) })
							}
						default:
							// Refused with a result (spawn-error) rather than ErrClosed.
							if asResult.Add(1) == 1 {
								t.Logf("refused with a result: %+v %q", res.Details, res.Text())
							}
							if !strings.Contains(res.Text(), "closed") && !strings.Contains(res.Text(), "cgroup") {
								t.Errorf("exec during Close: %+v %q", res.Details, res.Text())
							}
						}
					}
				}()
			}
			// Close once some sessions run.
			select {
			case <-going:
			case <-ctx.Done():
				t.Fatal("no sessions started")
			}
			closeCtx, cancelClose := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancelClose()
			require.NoError(t, reg.Close(closeCtx))
			close(quit)
			wg.Wait()
			t.Logf("%d started, %d refused with ErrClosed, %d refused with a spawn-error result", started.Load(), refused.Load(), asResult.Load())
			assert.Empty(t, children(t), "no child process is left")
			assert.Empty(t, taggedProcesses(t, tag), "no session process is left anywhere")
			if cgRoot != "" {
				assert.NoDirExists(t, cgRoot, "the registry cgroup is removed")
			}
			assert.NoError(t, goleak.Find(ignore))
		})
	}
}
