//go:build linux

package bgexec

// Leaks over a thousand sessions: no goroutine, descriptor, process or
// cgroup outlives a session, whichever way it ends. The figures it logs
// go into RELIABILITY.md.

import (
	"context"
	"errors"
	"fmt"
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

func TestLeakSuite(t *testing.T) {
	// It counts the whole process's goroutines, descriptors and children.
	if !runsHere(t) {
		return
	}
	total := 1000
	if testing.Short() {
		total = 200
	}
	const (
		registries = 5
		batch      = 50
	)
	perReg := total / registries
	start := time.Now()

	// Warm up what the runtime and the library create once per process
	// (netpoller descriptors, pools, os/exec lookups), so the baseline is
	// the steady state.
	{
		reg, err := NewRegistry(sandboxed(Config{YieldMs: MaxYieldMs}))
		require.NoError(t, err)
		sc := reg.Scope("warm")
		mustExec(t, sc, &ExecRequest{Command: "true"})
		mustExec(t, sc, &ExecRequest{Command: "true", PTY: true})
		id := startBackground(t, sc, &ExecRequest{Command: "sleep 30"})
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
		require.NoError(t, reg.Close(testCtx(t)))
	}
	ignore := goleak.IgnoreCurrent()
	fdsBefore := openFDs(t)
	require.Empty(t, children(t), "no child processes before the suite")
	threadsBefore := threadCount(t)
	tag := newTag(t)

	var (
		ended   [numEndWays][2]atomic.Int64 // [way][pty]
		notes   = &countingNotifier{}
		cgDirs  []string
		closeMs []int64
	)
	for r := range registries {
		t.Run(fmt.Sprintf("registry %d of %d ends %d sessions in mixed ways", r+1, registries, perReg), func(t *testing.T) {
			reg, err := NewRegistry(sandboxed(Config{YieldMs: MaxYieldMs, KillGrace: 300 * time.Millisecond, Notifier: notes}))
			require.NoError(t, err)
			closed := false
			t.Cleanup(func() {
				if !closed {
					_ = reg.Close(context.Background())
				}
			})
			if cgroupRoot(reg) != nil {
				cgDirs = append(cgDirs, cgroupRoot(reg).Dir())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			sc := reg.Scope("leak")
			env := map[string]string{tagEnv: tag}

			// All batches but the last end in the five per-session ways; the
			// last batch is left running for Close.
			for b := 0; b < perReg; b += batch {
				last := b+batch >= perReg
				var wg sync.WaitGroup
				for i := b; i < min(b+batch, perReg); i++ {
					way := endWay(i % int(endClose))
					if last {
						way = endClose
					}
					pty := (r*perReg+i)%4 == 0
					stubborn := i%7 == 3 && way >= endKill // ignores SIGTERM: needs the SIGKILL escalation
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := leakSession(ctx, reg, sc, way, pty, stubborn, env); err != nil {
							t.Errorf("%s, pty=%v, stubborn=%v: %v", way, pty, stubborn, err)
							return
						}
						if way != endClose {
							ended[way][boolIndex(pty)].Add(1)
						}
					}()
				}
				wg.Wait()
			}
			closeStart := time.Now()
			require.NoError(t, reg.Close(ctx))
			closed = true
			closeMs = append(closeMs, time.Since(closeStart).Milliseconds())
			for i := range batch {
				ended[endClose][boolIndex((r*perReg+perReg-batch+i)%4 == 0)].Add(1)
			}
		})
	}

	t.Run("nothing is left behind", func(t *testing.T) {
		var sum int64
		for w := range numEndWays {
			n := ended[w][0].Load() + ended[w][1].Load()
			sum += n
			t.Logf("ended by %-12s %4d (pipes %d, PTYs %d)", w, n, ended[w][0].Load(), ended[w][1].Load())
		}
		assert.Equal(t, int64(total), sum, "every session ended as planned")

		// goleak retries until the goroutines of the last Close are gone.
		leakErr := goleak.Find(ignore)
		assert.NoError(t, leakErr, "no goroutine outlives the registries")
		fdsAfter := openFDs(t)
		assert.Equal(t, fdsBefore, fdsAfter, "no descriptor leaks")
		kids := children(t)
		assert.Empty(t, kids, "no child process (or zombie) is left")
		desc := ourDescendants(t)
		assert.Empty(t, desc, "no descendant is left")
		orphans := taggedProcesses(t, tag)
		assert.Empty(t, orphans, "no tagged process survives anywhere (reparented orphans included)")
		for _, d := range cgDirs {
			assert.NoDirExists(t, d, "the registry cgroup is removed")
		}
		events, _ := notes.snapshot()
		extraGoroutines := 0
		if leakErr != nil {
			extraGoroutines = strings.Count(leakErr.Error(), "Goroutine ")
		}
		t.Logf("%d sessions over %d registries (cgroups: %v) in %v; Close took %v ms",
			total, registries, len(cgDirs) == registries, time.Since(start).Round(time.Millisecond), closeMs)
		t.Logf("extra goroutines %d, fds %d → %d (extra %d), zombies %d, child processes %d, descendants %d, tagged survivors %d, registry cgroups left %d, OS threads %d → %d, exit events %d",
			extraGoroutines, fdsBefore, fdsAfter, fdsAfter-fdsBefore, zombieChildren(t), len(kids), len(desc), len(orphans),
			countExisting(cgDirs), threadsBefore, threadCount(t), events)
	})
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func countExisting(dirs []string) int {
	n := 0
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			n++
		}
	}
	return n
}

func threadCount(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// leakSession runs one session of the leak suite to its planned end and
// checks the reported end state.
func leakSession(ctx context.Context, reg *Registry, sc *Scope, way endWay, pty, stubborn bool, env map[string]string) error {
	command := "sleep 30"
	if stubborn {
		command = "trap '' TERM HUP; sleep 30"
	}
	req := &ExecRequest{Command: command, Background: true, PTY: pty, Env: env}
	switch way {
	case endExit0:
		req = &ExecRequest{Command: "true", PTY: pty, Env: env}
	case endExit3:
		req.Command = "exit 3"
	case endTimeout:
		req.Timeout = ptr(0.2)
	}
	res, err := sc.Exec(ctx, req)
	if err != nil {
		return err
	}
	if res == nil {
		return errors.New("exec returned neither a result nor an error")
	}
	if way == endExit0 {
		if res.Details.Status != StatusCompleted || res.Details.ExitCode == nil || *res.Details.ExitCode != 0 {
			return fmt.Errorf("foreground true: %+v %q", res.Details, res.Text())
		}
		return nil
	}
	if res.Details.Status != StatusRunning {
		// A very fast command may end before it is marked backgrounded.
		if way == endExit3 && res.Details.ExitCode != nil && *res.Details.ExitCode == 3 {
			return nil
		}
		return fmt.Errorf("background exec: %+v %q", res.Details, res.Text())
	}
	id := res.Details.SessionID
	var want ExitReason
	switch way {
	case endExit3, endTimeout:
		want = ExitReasonExit
		if way == endTimeout {
			want = ExitReasonTimeout
		}
		w, err := sc.Process(ctx, &ProcessRequest{Action: "wait", SessionID: id, Timeout: ptr(Number(20000))})
		if err != nil {
			return err
		}
		if w.Details.Condition != "exit" || w.Details.ExitReason != want {
			return fmt.Errorf("wait: %+v %q", w.Details, w.Text())
		}
		if way == endExit3 {
			if w.Details.ExitCode == nil || *w.Details.ExitCode != 3 {
				return fmt.Errorf("exit 3 reported as %+v", w.Details)
			}
			if c, err := sc.Process(ctx, &ProcessRequest{Action: "clear", SessionID: id}); err != nil || c.Text() != "Cleared session "+id+"." {
				return fmt.Errorf("clear: %v %v", err, c)
			}
		}
	case endKill:
		s := sessionOf(reg, id)
		if s == nil {
			return fmt.Errorf("session %s is not registered", id)
		}
		k, err := sc.Process(ctx, &ProcessRequest{Action: "kill", SessionID: id})
		if err != nil {
			return err
		}
		// A kill answers with the end when it came within the grace period,
		// the drain timeout and a second; a loaded machine may take longer
		// to end a process that ignores SIGTERM, and the documented answer
		// is then "Termination requested". Either way the end must follow,
		// as a kill.
		switch k.Text() {
		case "Killed session " + id + ".":
			if k.Details.ExitReason != ExitReasonKilled {
				return fmt.Errorf("kill: %+v %q", k.Details, k.Text())
			}
		case "Termination requested for session " + id + ".":
			if err := awaitEnd(ctx, s); err != nil {
				return err
			}
			if reason := reasonOf(s.Snapshot(0).Exit.Reason); reason != ExitReasonKilled {
				return fmt.Errorf("killed session ended with reason %q", reason)
			}
		default:
			return fmt.Errorf("kill: %+v %q", k.Details, k.Text())
		}
	case endRemove:
		s := sessionOf(reg, id)
		if s == nil {
			return fmt.Errorf("session %s is not registered", id)
		}
		rm, err := sc.Process(ctx, &ProcessRequest{Action: "remove", SessionID: id})
		if err != nil {
			return err
		}
		if rm.Text() != "Removed session "+id+"." {
			return fmt.Errorf("remove: %q", rm.Text())
		}
		if err := awaitEnd(ctx, s); err != nil {
			return err
		}
		reason := reasonOf(s.Snapshot(0).Exit.Reason)
		if reason != ExitReasonKilled {
			return fmt.Errorf("removed session ended with reason %q", reason)
		}
	case endClose:
		// Left running; Close ends it.
	}
	return nil
}
