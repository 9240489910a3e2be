//go:build linux

package bgexec

// Processes that leave the process group (setsid, setpgid, a double fork):
// which of them each way of ending a session reaches, with and without
// cgroups. The figures it logs go into RELIABILITY.md.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// escaperScript starts three escapers, each of which prints "<kind> <pid>"
// once it has escaped, then waits for a line on stdin (so the test decides
// how the session ends).
func escaperScript() string {
	return "setsid sh -c 'echo setsid $$; exec sleep 300' &\n" +
		helper("setpgid-sleep") + " &\n" +
		"( sh -c 'echo double $$; exec sleep 300' & ) &\n" +
		"read x\n"
}

var escaperKinds = []string{"setsid", "setpgid", "double"}

// escaperWays are the ends the escaper test applies (natural exit too).
var escaperWays = []endWay{endExit3, endKill, endTimeout, endRemove, endClose}

// It runs beside other tests (each mode has its own registry, and its
// processes carry its own tag); the modes run beside each other too, as
// each waits out a 12 s timeout.
func TestContainmentEscapers(t *testing.T) {
	t.Parallel()
	skipInSandboxSuite(t, "the test reads pids the command printed, which are those of its pid namespace")
	haveCgroups := cgroupsAvailable(t)
	type tally struct {
		survivors, total int
	}
	for _, mode := range []struct {
		name string
		c    Containment
	}{{"auto", ContainmentAuto}, {"off", ContainmentOff}} {
		t.Run("with containment "+mode.name+" every escaper is accounted for", func(t *testing.T) {
			t.Parallel()
			if mode.c == ContainmentAuto && !haveCgroups {
				t.Skip("cgroup v2 containment is not available here")
			}
			res := runEscapers(t, mode.c)
			summary := map[string]tally{} // kind → tally
			for _, r := range res {
				for kind, alive := range r.survived {
					tl := summary[kind]
					tl.total++
					if alive {
						tl.survivors++
					}
					summary[kind] = tl
				}
			}
			for _, kind := range escaperKinds {
				tl := summary[kind]
				t.Logf("containment %s: %-7s survivors %d of %d", mode.name, kind, tl.survivors, tl.total)
			}
			for _, r := range res {
				t.Logf("containment %s: %-11s pty=%-5v survivors %v", mode.name, r.way, r.pty, r.survivorKinds())
			}
			if mode.c == ContainmentAuto {
				for _, kind := range escaperKinds {
					assert.Zero(t, summary[kind].survivors, "no %s escaper survives with cgroups", kind)
				}
			} else {
				// Without cgroups only the process group is signalled: the
				// double fork stays in it, setsid and setpgid leave it.
				assert.Zero(t, summary["double"].survivors, "a double fork stays in the group")
				assert.Positive(t, summary["setsid"].survivors, "setsid escapes the process group")
				assert.Positive(t, summary["setpgid"].survivors, "setpgid escapes the process group")
			}
		})
	}
}

type escaperResult struct {
	way      endWay
	pty      bool
	survived map[string]bool
}

func (r escaperResult) survivorKinds() []string {
	var out []string
	for _, k := range escaperKinds {
		if r.survived[k] {
			out = append(out, k)
		}
	}
	return out
}

// runEscapers starts one session per end way, over pipes and a PTY, each
// with three escapers; ends them; and reports which escapers survived. It
// kills every survivor itself afterwards.
func runEscapers(t *testing.T, c Containment) []escaperResult {
	tag := newTag(t)
	reg, err := NewRegistry(sandboxed(Config{YieldMs: MaxYieldMs, Containment: c, KillGrace: 500 * time.Millisecond, DrainTimeout: 300 * time.Millisecond}))
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = reg.Close(context.Background())
		}
	})
	if c == ContainmentAuto {
		require.NotNil(t, cgroupRoot(reg), "cgroups are available, so Auto uses them")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc := reg.Scope("escapers")

	type run struct {
		escaperResult
		id      string
		s       *session.Session
		watches map[string]*pidWatch
		cgDir   string // the session's cgroup ("" without cgroups)
	}
	var runs []*run
	t.Cleanup(func() {
		for _, r := range runs {
			for _, w := range r.watches {
				w.kill()
				w.close()
			}
		}
	})
	for _, way := range escaperWays {
		for _, pty := range []bool{false, true} {
			req := &ExecRequest{Command: escaperScript(), PTY: pty, Stdin: "pipe", Env: map[string]string{tagEnv: tag}}
			if way == endTimeout {
				req.Timeout = ptr(12.0) // long enough for the escapers to report under load
			}
			id := startBackground(t, sc, req)
			runs = append(runs, &run{escaperResult: escaperResult{way: way, pty: pty, survived: map[string]bool{}}, id: id, s: sessionOf(reg, id), watches: map[string]*pidWatch{}})
		}
	}
	for _, r := range runs {
		pids, err := awaitKeys(ctx, sc, r.id, escaperKinds...)
		require.NoError(t, err)
		leader, _ := readPS(r.s.Pid())
		for _, kind := range escaperKinds {
			w, err := watchPid(pids[kind])
			require.NoError(t, err)
			r.watches[kind] = w
			st, ok := readPS(pids[kind])
			require.True(t, ok, "%s escaper %d is running", kind, pids[kind])
			switch kind {
			case "setsid":
				assert.Equal(t, st.pid, st.sid, "the setsid escaper leads its own session")
			case "setpgid":
				assert.Equal(t, st.pid, st.pgid, "the setpgid escaper leads its own group")
			case "double":
				assert.Equal(t, leader.pgid, st.pgid, "the double fork stays in the group")
			}
			if cgroupRoot(reg) != nil {
				dir := sessionCgroupOf(t, reg, pids[kind])
				require.NotEmpty(t, dir, "%s escaper %d is in a session cgroup", kind, pids[kind])
				if r.cgDir == "" {
					r.cgDir = dir
				}
				assert.Equal(t, r.cgDir, dir, "all escapers share the session's cgroup")
			}
		}
	}

	// End every session but the Close ones, concurrently, then Close.
	bound := 10 * time.Second // escapers must be gone by then (cgroups)
	if cgroupRoot(reg) == nil {
		bound = 2 * time.Second // how long a survivor is given to end on its own
	}
	check := func(r *run) {
		deadline := time.Now().Add(bound)
		for kind, w := range r.watches {
			r.survived[kind] = !w.goneBy(deadline)
		}
		if r.cgDir != "" {
			if _, err := os.Stat(r.cgDir); err == nil {
				// An emptied cgroup that was never killed may be kept for reuse.
				assert.Contains(t, spareCgroups(cgroupRoot(reg)), r.cgDir, "the session cgroup of %s (%s) is removed or kept as a spare", r.id, r.way)
				pop, err := contain.Populated(r.cgDir)
				assert.NoError(t, err)
				assert.False(t, pop, "the spare cgroup of %s (%s) is empty", r.id, r.way)
			}
		}
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		if r.way == endClose {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := endEscaperSession(ctx, sc, r.s, r.way); err != nil {
				t.Errorf("%s pty=%v: %v", r.way, r.pty, err)
				return
			}
			check(r)
		}()
	}
	wg.Wait()
	cgRoot := ""
	if cgroupRoot(reg) != nil {
		cgRoot = cgroupRoot(reg).Dir()
	}
	require.NoError(t, reg.Close(ctx))
	closed = true
	for _, r := range runs {
		if r.way == endClose {
			wg.Add(1)
			go func() {
				defer wg.Done()
				check(r)
			}()
		}
	}
	wg.Wait()
	if cgRoot != "" {
		assert.NoDirExists(t, cgRoot, "the registry cgroup is removed by Close")
	}

	// Clean up the survivors ourselves and prove nothing is left.
	deadline := time.Now().Add(10 * time.Second)
	out := make([]escaperResult, 0, len(runs))
	ours := map[int]bool{} // this test's processes: other tests have children too
	for _, r := range runs {
		ours[r.s.Pid()] = true
		for kind, w := range r.watches {
			ours[w.pid] = true
			w.kill()
			assert.True(t, w.goneBy(deadline), "%s escaper %d ends on SIGKILL", kind, w.pid)
			w.close()
		}
		out = append(out, r.escaperResult)
	}
	assert.Empty(t, taggedProcesses(t, tag), "no tagged process is left")
	var left []int
	for _, pid := range children(t) {
		if ours[pid] {
			left = append(left, pid)
		}
	}
	assert.Empty(t, left, "no child process (not even a zombie) is left")
	return out
}

// sessionCgroupOf returns the session cgroup directory pid is in, or "".
func sessionCgroupOf(t *testing.T, reg *Registry, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		rel, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		if filepath.Base(filepath.Dir(rel)) == filepath.Base(cgroupRoot(reg).Dir()) {
			return filepath.Join(cgroupRoot(reg).Dir(), filepath.Base(rel))
		}
	}
	return ""
}

// endEscaperSession ends s in the given way and checks the reported reason.
func endEscaperSession(ctx context.Context, sc *Scope, s *session.Session, way endWay) error {
	var want ExitReason
	switch way {
	case endExit3:
		want = ExitReasonExit
		if _, err := sc.Process(ctx, &ProcessRequest{Action: "write", SessionID: s.ID(), Data: "\n"}); err != nil {
			return err
		}
		// What the shell leaves running (the escapers that stayed in its
		// cgroup or process group) is kept as the session, so the agent
		// ends it; if nothing was left, the session ends with the shell.
		select {
		case <-s.LeftBehind():
			want = ExitReasonKilled
			if _, err := sc.Process(ctx, &ProcessRequest{Action: "kill", SessionID: s.ID()}); err != nil {
				return err
			}
		case <-s.Done():
		case <-ctx.Done():
			return fmt.Errorf("session %s: the shell did not exit: %w", s.ID(), ctx.Err())
		}
	case endKill:
		want = ExitReasonKilled
		if _, err := sc.Process(ctx, &ProcessRequest{Action: "kill", SessionID: s.ID()}); err != nil {
			return err
		}
	case endTimeout:
		want = ExitReasonTimeout
	case endRemove:
		want = ExitReasonKilled
		if _, err := sc.Process(ctx, &ProcessRequest{Action: "remove", SessionID: s.ID()}); err != nil {
			return err
		}
	}
	if err := awaitEnd(ctx, s); err != nil {
		return err
	}
	got := reasonOf(s.Snapshot(0).Exit.Reason)
	if got != want {
		return fmt.Errorf("session %s ended with reason %q, want %q", s.ID(), got, want)
	}
	return nil
}
