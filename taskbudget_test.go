//go:build linux

package bgexec

// The host runs in a small pids cgroup, as under systemd's TasksMax: a
// session's fork bomb must not take the threads the host's Go runtime
// needs.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// taskBoxLimit is the pids.max of the box the host runs in.
const taskBoxLimit = 300

// forkBomb fills its session's task limit and keeps it full: each
// instance starts one more, waits for it and starts it again when it
// ends, so the chain grows to the limit. Only its newest instance ever
// meets the limit: dash exits when a fork fails (bash retries), its
// parent then forks again into the task that freed, and the chain stays
// full. A bomb whose instances each start two (b & b & wait) could lose
// its first shell that way: under load the first child's subtree filled
// the limit before the shell's second fork, dash exited with "Cannot
// fork" (code 2) and the session ended with the box nearly empty.
const forkBomb = `b() { while :; do b & wait; done; }; b 2>/dev/null`

// helperTaskBoxHost is the "task-box-host" helper: it moves itself into
// the pids cgroup rest[0], runs a registry with the default limits, starts
// a fork bomb, and while the bomb holds its limit, 8 goroutines call the
// registry (exec, list, poll). It prints what it saw and exits 0 when
// every call returned; a Go runtime that cannot start a thread aborts it.
func helperTaskBoxHost(rest []string) int {
	if err := os.WriteFile(filepath.Join(rest[0], "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		fmt.Fprintln(os.Stderr, "enter the box:", err)
		return 1
	}
	reg, err := NewRegistry(Config{YieldMs: 5000})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	rep := reg.Containment()
	fmt.Println("budget", rep.TaskBudget)
	fmt.Println("session", rep.SessionTasks)
	fmt.Println("source", rep.TaskBudgetSource)
	sc := reg.Scope("bomb")
	res, err := sc.Exec(ctx, &ExecRequest{Command: forkBomb, Background: true})
	if err != nil || res.Details.Status != StatusRunning {
		fmt.Fprintln(os.Stderr, "exec:", err, res)
		return 1
	}
	bomb := res.Details.SessionID
	// Wait until the bomb fills the box as far as the registry lets it.
	box := contain.ReadInt(filepath.Join(rest[0], "pids.current"))
	for box < int64(rep.SessionTasks)*9/10 {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "the bomb never filled its budget; the box holds", box)
			reportTaskBox(rest[0], sc, bomb)
			return 1
		}
		time.Sleep(10 * time.Millisecond)
		box = contain.ReadInt(filepath.Join(rest[0], "pids.current"))
	}
	fmt.Println("box-full", box)

	var (
		mu                     sync.Mutex
		calls, goErrs, execsOK int
		firstErr               error
	)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			call := func(f func(context.Context) error) {
				cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
				defer ccancel()
				err := f(cctx)
				mu.Lock()
				defer mu.Unlock()
				calls++
				if err != nil {
					goErrs++
					if firstErr == nil {
						firstErr = err
					}
				}
			}
			for range 10 {
				call(func(c context.Context) error {
					r, err := reg.Scope(fmt.Sprintf("caller-%d", g)).Exec(c, &ExecRequest{Command: "echo ok"})
					if err == nil && r.Details.Status == StatusCompleted {
						mu.Lock()
						execsOK++
						mu.Unlock()
					}
					return err
				})
				call(func(c context.Context) error {
					_, err := sc.Process(c, &ProcessRequest{Action: "list"})
					return err
				})
				call(func(c context.Context) error {
					_, err := sc.Process(c, &ProcessRequest{Action: "poll", SessionID: bomb, Timeout: ptr(Number(50))})
					return err
				})
			}
		}()
	}
	wg.Wait()
	fmt.Println("calls", calls)
	fmt.Println("go-errors", goErrs, firstErr)
	fmt.Println("execs-completed", execsOK)
	if _, err := sc.Process(ctx, &ProcessRequest{Action: "kill", SessionID: bomb}); err != nil {
		fmt.Fprintln(os.Stderr, "kill:", err)
		return 1
	}
	after, err := sc.Exec(ctx, &ExecRequest{Command: "echo after"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "after:", err)
		return 1
	}
	fmt.Println("after", after.Text())
	if err := reg.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		return 1
	}
	fmt.Println("closed")
	return 0
}

// reportTaskBox prints to stderr what a test that failed needs to know:
// the bomb session's state and output, and every pids cgroup below box
// with its counters and the processes in it.
func reportTaskBox(box string, sc *Scope, bomb string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := sc.Process(ctx, &ProcessRequest{Action: "poll", SessionID: bomb}); err == nil {
		fmt.Fprintf(os.Stderr, "bomb: %s: %s\n", r.Details.Status, r.Text())
	}
	_ = filepath.WalkDir(box, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		procs, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		var who []string
		for _, f := range strings.Fields(string(procs)) {
			comm, _ := os.ReadFile("/proc/" + f + "/comm")
			stat, _ := os.ReadFile("/proc/" + f + "/stat")
			state := ""
			if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
				state = string(stat[i+2 : i+3])
			}
			who = append(who, f+":"+strings.TrimSpace(string(comm))+":"+state)
		}
		fmt.Fprintf(os.Stderr, "%s: pids.current %d pids.max %s events %q procs %v\n", p,
			contain.ReadInt(filepath.Join(p, "pids.current")), readTrim(filepath.Join(p, "pids.max")),
			readTrim(filepath.Join(p, "pids.events")), who)
		return nil
	})
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// newTaskBox creates a pids cgroup of taskBoxLimit tasks below this
// process's own: in the cgroup v1 pids hierarchy, else in the v2 tree
// when this cgroup hands the pids controller to its children. It removes
// the box, and kills whatever is left in it, at the end of the test.
func newTaskBox(t *testing.T) string {
	t.Helper()
	var parent string
	if mnt, rel, err := contain.V1Mount("pids"); err == nil {
		parent = filepath.Join(mnt, rel)
	} else if d, err := contain.Cgroup2Dir(); err == nil {
		if b, err := os.ReadFile(filepath.Join(d, "cgroup.subtree_control")); err == nil && slices.Contains(strings.Fields(string(b)), "pids") {
			parent = d
		}
	}
	if parent == "" {
		t.Skip("no pids controller to build a box with here")
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	box := filepath.Join(parent, "bgexec-test-box-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(box, 0o755); err != nil {
		t.Skip("cannot create a pids cgroup here:", err)
	}
	t.Cleanup(func() { removeTaskBox(t, box) })
	require.NoError(t, contain.WriteFile(filepath.Join(box, "pids.max"), strconv.Itoa(taskBoxLimit)))
	return box
}

// removeTaskBox kills every process left below box and removes its
// directories, deepest first.
func removeTaskBox(t *testing.T, box string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var dirs []string
		_ = filepath.WalkDir(box, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		left := 0
		for i := len(dirs) - 1; i >= 0; i-- {
			b, _ := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = unix.Kill(pid, unix.SIGKILL)
					left++
				}
			}
			_ = unix.Rmdir(dirs[i])
		}
		if _, err := os.Stat(box); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the task box %s could not be removed (%d processes were left)", box, left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLimitsTaskBudgetKeepsTheHostAlive(t *testing.T) {
	skipInSandboxSuite(t, "it is about the host's own pids cgroup")
	if os.Geteuid() != 0 {
		t.Skip("creating a pids cgroup needs root")
	}
	box := newTaskBox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "task-box-host", box)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err, "the host survived the fork bomb in its %d-task box", taskBoxLimit)
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		got[k] = v
	}
	budget, err := strconv.Atoi(got["budget"])
	require.NoError(t, err)
	reserve := contain.HostTaskReserve(taskBoxLimit)
	assert.Positive(t, budget)
	assert.LessOrEqual(t, budget, taskBoxLimit-int(reserve), "the host keeps its reserve")
	session, err := strconv.Atoi(got["session"])
	require.NoError(t, err)
	assert.Equal(t, budget/2, session, "the default task limit is half the budget")
	execs, err := strconv.Atoi(got["execs-completed"])
	require.NoError(t, err)
	assert.Positive(t, execs, "other sessions still run beside the bomb")
	assert.Equal(t, "240", got["calls"], "8 callers × 10 rounds × 3 calls all returned")
	assert.Equal(t, "0 <nil>", got["go-errors"])
	assert.Equal(t, "after", got["after"], "a session runs once the bomb is killed")
	assert.Contains(t, got, "closed")
}
