//go:build linux

package bgexec

// The host dies: a SIGKILLed host takes its sessions, their grandchildren
// and its watchdog with it. The figures it logs go into RELIABILITY.md.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// helperOwnRegistry is the "own-registry" helper: it runs a registry of its
// own (containment as in rest[0]: "auto" or "off") with a pipe session and
// a PTY session that both start a grandchild (the pipe session also a
// setsid escaper), prints "<name> <pid>" lines, prints ready and blocks
// until it is killed.
func helperOwnRegistry(rest []string) int {
	cfg := Config{YieldMs: MaxYieldMs}
	if len(rest) > 0 && rest[0] == "off" {
		cfg.Containment = ContainmentOff
	}
	reg, err := NewRegistry(sandboxed(cfg))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc := reg.Scope("host")
	sessions := []struct {
		name string
		req  ExecRequest
		keys []string
	}{
		{"pipe", ExecRequest{Command: "sleep 300 & echo grandchild $!\nsetsid sh -c 'echo escaper $$; exec sleep 300' &\nsleep 300", Background: true}, []string{"grandchild", "escaper"}},
		{"pty", ExecRequest{Command: "sleep 300 & echo grandchild $!\nsleep 300", Background: true, PTY: true}, []string{"grandchild"}},
	}
	for _, s := range sessions {
		res, err := sc.Exec(ctx, &s.req)
		if err != nil || res.Details.Status != StatusRunning {
			fmt.Fprintln(os.Stderr, "exec:", err, res)
			return 1
		}
		pids, err := awaitKeys(ctx, sc, res.Details.SessionID, s.keys...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("%s-leader %d\n", s.name, res.Details.Pid)
		for _, k := range s.keys {
			fmt.Printf("%s-%s %d\n", s.name, k, pids[k])
		}
	}
	if len(rest) > 1 && rest[1] == "kill-watchdog" {
		// Someone kills the watchdog: the registry must start another one
		// that knows every group.
		old := watchdogOf(reg).Pid()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			fmt.Fprintln(os.Stderr, "kill watchdog:", err)
			return 1
		}
		for p := watchdogOf(reg).Pid(); p == old || p == 0; p = watchdogOf(reg).Pid() {
			if ctx.Err() != nil {
				fmt.Fprintln(os.Stderr, "no new watchdog")
				return 1
			}
			time.Sleep(time.Millisecond)
		}
	}
	fmt.Printf("watchdog %d\n", watchdogOf(reg).Pid())
	if cgroupRoot(reg) != nil {
		fmt.Printf("cgroup %s\n", cgroupRoot(reg).Dir())
	}
	fmt.Println("ready")
	if len(rest) > 1 && strings.HasPrefix(rest[1], killWatchdogThenHost) {
		// The watchdog is killed, and gap ms later the host: the
		// registry has had no time to start another watchdog.
		gap, _ := strconv.Atoi(strings.TrimPrefix(rest[1], killWatchdogThenHost))
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_ = syscall.Kill(watchdogOf(reg).Pid(), syscall.SIGKILL)
		if gap > 0 {
			time.Sleep(time.Duration(gap) * time.Millisecond)
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	time.Sleep(10 * time.Minute)
	return 0
}

// killWatchdogThenHost, followed by a gap in milliseconds, makes the
// own-registry helper kill its watchdog and then itself once a line
// arrives on its stdin.
const killWatchdogThenHost = "kill-watchdog-then-host-"

func TestParentDeathRightAfterTheWatchdog(t *testing.T) {
	skipInSandboxSuite(t, "the test reads pids the command printed, which are those of its pid namespace")
	t.Parallel()
	haveCgroups := cgroupsAvailable(t)
	for _, mode := range []string{"auto", "off"} {
		for _, gap := range []int{0, 1, 5} {
			t.Run(fmt.Sprintf("with containment %s, the host killed %d ms after the watchdog", mode, gap), func(t *testing.T) {
				if mode == "auto" && !haveCgroups {
					t.Skip("cgroup v2 containment is not available here")
				}
				parentDeath(t, mode, killWatchdogThenHost+strconv.Itoa(gap))
			})
		}
	}
}

func TestParentDeathKillsSessions(t *testing.T) {
	skipInSandboxSuite(t, "the test reads pids the command printed, which are those of its pid namespace")
	// The host that dies, and the watchdog killed, are a helper process's
	// own; nothing here counts this process's children or descriptors.
	t.Parallel()
	haveCgroups := cgroupsAvailable(t)
	for _, mode := range []string{"auto", "off"} {
		t.Run("with containment "+mode, func(t *testing.T) {
			if mode == "auto" && !haveCgroups {
				t.Skip("cgroup v2 containment is not available here")
			}
			parentDeath(t, mode)
		})
		t.Run("with containment "+mode+", after the watchdog was killed", func(t *testing.T) {
			if mode == "auto" && !haveCgroups {
				t.Skip("cgroup v2 containment is not available here")
			}
			parentDeath(t, mode, "kill-watchdog")
		})
	}
}

// parentDeath runs the own-registry helper, SIGKILLs it once its sessions
// run, and checks what outlives it.
func parentDeath(t *testing.T, mode string, extra ...string) {
	cmd := exec.Command(os.Args[0], append([]string{"own-registry", mode}, extra...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	suicide := len(extra) > 0 && strings.HasPrefix(extra[0], killWatchdogThenHost)
	var trigger *os.File
	if suicide {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		cmd.Stdin, trigger = r, w
		t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	}
	// Our own pipe, not StdoutPipe: Wait must not close it under the reader.
	stdout, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = w
	err = cmd.Start()
	_ = w.Close()
	if err != nil {
		_ = stdout.Close()
		require.NoError(t, err)
	}

	// Read the helper's report in a goroutine that ends at EOF, once the
	// helper and the processes that share its stdout are gone.
	lines := make(chan string)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		// Unblock the reader even if an escaper still holds the pipe.
		_ = stdout.SetReadDeadline(time.Now())
		for range lines {
		}
		<-readerDone
		_ = stdout.Close()
	})
	pids := map[string]int{}
	cgroup := ""
	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
read:
	for {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "the helper exited before it was ready")
			if line == "ready" {
				break read
			}
			k, v, _ := strings.Cut(line, " ")
			if k == "cgroup" {
				cgroup = v
				continue
			}
			pids[k], err = strconv.Atoi(v)
			require.NoError(t, err, line)
		case <-timeout.C:
			t.Fatal("the helper did not get ready within 60s")
		}
	}
	for _, k := range []string{"pipe-leader", "pipe-grandchild", "pipe-escaper", "pty-leader", "pty-grandchild", "watchdog"} {
		require.Contains(t, pids, k)
	}
	if mode == "auto" {
		require.NotEmpty(t, cgroup, "the helper's registry uses cgroups")
	}
	watches := map[string]*pidWatch{}
	t.Cleanup(func() {
		for _, w := range watches {
			w.kill()
			w.close()
		}
	})
	for k, pid := range pids {
		w, err := watchPid(pid)
		require.NoError(t, err)
		require.GreaterOrEqual(t, w.fd, 0, "%s %d is alive before the host dies", k, pid)
		watches[k] = w
	}

	killedAt := time.Now()
	if suicide {
		_, err := trigger.Write([]byte("go\n"))
		require.NoError(t, err)
	} else {
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	}
	_ = cmd.Wait()
	waited = true
	eof := time.NewTimer(10 * time.Second)
	defer eof.Stop()
drain:
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				break drain
			}
		case <-eof.C:
			t.Fatal("the helper's stdout did not reach EOF")
		}
	}

	deadline := time.Now().Add(10 * time.Second)
	t.Run("every session process and grandchild ends when the host is SIGKILLed", func(t *testing.T) {
		for _, k := range []string{"pipe-leader", "pipe-grandchild", "pty-leader", "pty-grandchild"} {
			assert.True(t, watches[k].goneBy(deadline), "%s %d outlived its host", k, pids[k])
		}
	})
	t.Run("the watchdog ends too", func(t *testing.T) {
		assert.True(t, watches["watchdog"].goneBy(deadline), "watchdog %d outlived its host", pids["watchdog"])
	})
	gone := time.Since(killedAt)
	if cgroup != "" {
		t.Run("a setsid escaper is killed through the cgroup", func(t *testing.T) {
			assert.True(t, watches["pipe-escaper"].goneBy(deadline), "escaper %d outlived its host", pids["pipe-escaper"])
			// The watchdog removes the cgroups before it exits (when it
			// was killed before, its successor, whose end is not watched
			// here: wait for the directory to go).
			for {
				if _, err := os.Stat(cgroup); os.IsNotExist(err) || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			assert.NoDirExists(t, cgroup)
		})
		t.Logf("containment %s: host SIGKILLed; 6 of 6 watched processes gone after %v", mode, gone.Round(time.Millisecond))
		return
	}
	// Without cgroups nothing reaches a process that left the group.
	survived := !watches["pipe-escaper"].goneBy(time.Now().Add(2 * time.Second))
	watches["pipe-escaper"].kill()
	assert.True(t, watches["pipe-escaper"].goneBy(time.Now().Add(10*time.Second)))
	t.Logf("containment %s: host SIGKILLed; 5 of 5 group processes gone after %v; setsid escaper survived: %v", mode, gone.Round(time.Millisecond), survived)
}
