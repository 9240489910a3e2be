//go:build linux

package bgexec

// A gateway session that moves itself out of its session cgroup, into the
// host's own cgroup in every hierarchy that contains it, must still end
// with its session, with Close and with its host.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// hostCgroupDirs lists this process's own cgroup directory in the v2
// hierarchy and in the v1 pids and memory hierarchies, those that exist.
func hostCgroupDirs() []string {
	var dirs []string
	if d, err := contain.Cgroup2Dir(); err == nil {
		dirs = append(dirs, d)
	}
	for _, ctrl := range []string{"pids", "memory"} {
		if mnt, rel, err := contain.V1Mount(ctrl); err == nil {
			dirs = append(dirs, filepath.Join(mnt, rel))
		}
	}
	return dirs
}

// cgroupEscapePayload is the attack: a setsid child that writes itself
// into the host's cgroup.procs in each of $HOST_CGS, reports its pid and
// where it ended up, then sleeps.
const cgroupEscapePayload = `setsid sh -c 'for d in $HOST_CGS; do echo $$ > "$d/cgroup.procs" 2>/dev/null && echo "moved $d"; done; echo escaper $$; exec sleep 300' &
exec sleep 300`

// cgroupEscapeExitPayload is the attack in a session whose shell then
// exits on its own: once a line comes on its stdin, after the escaper
// moved.
const cgroupEscapeExitPayload = `setsid sh -c 'for d in $HOST_CGS; do echo $$ > "$d/cgroup.procs" 2>/dev/null && echo "moved $d"; done; echo escaper $$; exec sleep 300' </dev/null &
read line; exit 0`

// helperCgroupEscapeHost is the "cgroup-escape-host" helper: a host whose
// session runs cgroupEscapePayload with the tag rest[1] in its
// environment. With rest[0] "close" it closes its registry once the
// escaper has moved and exits; with "kill" it prints ready and waits to be
// SIGKILLed; with "exit" the session runs cgroupEscapeExitPayload, and the
// helper tells its shell to exit, prints "ended" once the end is reported
// and waits, its registry open, to be SIGKILLed. It prints "nocgroup" and
// exits when it has no session cgroups.
func helperCgroupEscapeHost(rest []string) int {
	mode, tag := rest[0], rest[1]
	reg, err := NewRegistry(Config{YieldMs: MaxYieldMs})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if cgroupRoot(reg) == nil {
		fmt.Println("nocgroup")
		_ = reg.Close(ctx)
		return 0
	}
	rep := reg.Containment()
	fmt.Println("namespace", rep.CgroupNamespace)
	fmt.Println("refused", rep.MigrationRefused, rep.Migration)
	sc := reg.Scope("host")
	payload, stdin := cgroupEscapePayload, ""
	if mode == "exit" {
		payload, stdin = cgroupEscapeExitPayload, "pipe"
	}
	res, err := sc.Exec(ctx, &ExecRequest{Command: payload, Background: true, Stdin: stdin,
		Env: map[string]string{tagEnv: tag, "HOST_CGS": strings.Join(hostCgroupDirs(), " ")}})
	if err != nil || res.Details.Status != StatusRunning {
		fmt.Fprintln(os.Stderr, "exec:", err, res)
		return 1
	}
	pids, err := awaitKeys(ctx, sc, res.Details.SessionID, "escaper")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	log, _ := sc.Process(ctx, &ProcessRequest{Action: "log", SessionID: res.Details.SessionID, Offset: ptr(0)})
	for _, line := range strings.Split(log.Text(), "\n") {
		if strings.HasPrefix(line, "moved ") {
			fmt.Println(line)
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pids["escaper"])); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			fmt.Println("cgroup", line)
		}
	}
	fmt.Println("escaper", pids["escaper"])
	if mode == "exit" {
		id := res.Details.SessionID
		if w, err := sc.Process(ctx, &ProcessRequest{Action: "write", SessionID: id, Data: "exit\n"}); err != nil || w.Details.Status == StatusFailed {
			fmt.Fprintln(os.Stderr, "write:", err, w)
			return 1
		}
		for {
			w, err := sc.Process(ctx, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(1000))})
			if err != nil {
				fmt.Fprintln(os.Stderr, "wait:", err)
				return 1
			}
			if w.Details.Status != StatusRunning {
				fmt.Println("ended", w.Details.Status)
				break
			}
		}
		fmt.Println("ended")
		time.Sleep(10 * time.Minute)
		return 0
	}
	if mode == "close" {
		if err := reg.Close(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
			return 1
		}
		fmt.Println("closed")
		return 0
	}
	fmt.Println("ready")
	time.Sleep(10 * time.Minute)
	return 0
}

func TestContainmentCgroupMigration(t *testing.T) {
	skipInSandboxSuite(t, "the sandbox's cgroupfs is read-only; this is about gateway sessions")
	if os.Geteuid() != 0 {
		t.Skip("the attack writes the host's cgroup.procs, which needs root")
	}
	t.Parallel()
	for _, mode := range []string{"close", "kill", "exit"} {
		name := map[string]string{"close": "a session that moved to the host's cgroups ends with Close",
			"kill": "a session that moved to the host's cgroups ends when the host is SIGKILLed",
			"exit": "a session that moved to the host's cgroups ends when its shell exits"}[mode]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tag := newTag(t)
			t.Cleanup(func() {
				for _, pid := range taggedProcesses(t, tag) {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			})
			cmd := exec.Command(os.Args[0], "cgroup-escape-host", mode, tag)
			cmd.Env = append(os.Environ(), helperEnv+"=1")
			cmd.Stderr = os.Stderr
			stdout, w, err := os.Pipe()
			require.NoError(t, err)
			cmd.Stdout = w
			err = cmd.Start()
			_ = w.Close()
			if err != nil {
				_ = stdout.Close()
				require.NoError(t, err)
			}
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
				_ = stdout.SetReadDeadline(time.Now())
				for range lines {
				}
				<-readerDone
				_ = stdout.Close()
			})
			want := map[string]string{"close": "closed", "kill": "ready", "exit": "ended"}[mode]
			seen := map[string]bool{}
			timeout := time.NewTimer(60 * time.Second)
			defer timeout.Stop()
		read:
			for {
				select {
				case line, ok := <-lines:
					require.True(t, ok, "the helper exited before %q", want)
					t.Log(line)
					seen[line] = true
					if line == "nocgroup" {
						t.Skip("the helper's registry has no session cgroups here")
					}
					if mode == "exit" && strings.HasPrefix(line, "refused true") {
						// The escaper cannot leave its v2 cgroup: it lingers
						// in the session, which runs on after its shell.
						t.Skip("cgroup2 has nsdelegate: TestNamespaceListedOnlyWithoutNSDelegate covers the refused move")
					}
					if line == want {
						break read
					}
				case <-timeout.C:
					t.Fatalf("the helper did not print %q within 60s", want)
				}
			}
			assert.True(t, seen["namespace true"], "a root host gives each gateway session a cgroup namespace, and Containment says so")
			if mode == "exit" {
				// The host still runs, its registry open: only the
				// session's end can have killed the escaper.
				assert.True(t, seen["ended completed"], "the shell exited 0")
				awaitNoTagged(t, tag)
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			}
			if mode == "kill" {
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			}
			err = cmd.Wait()
			waited = true
			if mode == "close" {
				assert.NoError(t, err, "the helper closed its registry")
			}
			awaitNoTagged(t, tag)
		})
	}
}

// watchListRecords reads the list of sessions a watchdog process keeps
// (its fd 3), as any process of the host's user could, and returns the
// records in use, trimmed; nil when the watchdog has no list.
func watchListRecords(t *testing.T, wd int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fd/3", wd))
	if err != nil {
		return nil
	}
	var recs []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, ".") {
			break
		}
		if strings.HasPrefix(line, "+") {
			recs = append(recs, line)
		}
	}
	return recs
}

// Where cgroup2 is mounted with nsdelegate, the kernel keeps every process
// of a session's cgroup namespace in its cgroup: a root session's move to
// the host's cgroup is refused, the cgroup's kill ends it, and the
// namespace is neither held nor listed with the watchdogs, so no session
// end scans the host's processes. Without nsdelegate the move succeeds and
// the namespace is listed. .ci/run runs this test a second time with the
// mount remounted with nsdelegate (BGEXEC_TEST_NSDELEGATE=1, which makes
// nsdelegate required).
func TestNamespaceListedOnlyWithoutNSDelegate(t *testing.T) {
	skipInSandboxSuite(t, "the sandbox's cgroupfs is read-only; this is about gateway sessions")
	if os.Geteuid() != 0 {
		t.Skip("a cgroup namespace per session needs CAP_SYS_ADMIN")
	}
	reg, err := NewRegistry(Config{YieldMs: MaxYieldMs})
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	if cgroupRoot(reg) == nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no session cgroups under CI")
		}
		t.Skip("no session cgroups here")
	}
	rep := reg.Containment()
	require.True(t, rep.CgroupNamespace, "a root host gives each gateway session a cgroup namespace")
	nsdelegate := rep.MigrationRefused
	if os.Getenv("BGEXEC_TEST_NSDELEGATE") == "1" {
		require.True(t, nsdelegate, "BGEXEC_TEST_NSDELEGATE=1, but the cgroup2 mount has no nsdelegate")
	}
	t.Logf("nsdelegate: %v", nsdelegate)
	tag := newTag(t)
	v2 := hostCgroupDirs()[0]
	sc := reg.Scope("ns")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := sc.Exec(ctx, &ExecRequest{Command: cgroupEscapePayload, Background: true,
		Env: map[string]string{tagEnv: tag, "HOST_CGS": v2}})
	require.NoError(t, err)
	require.Equal(t, StatusRunning, res.Details.Status, res.Text())
	id := res.Details.SessionID
	pids, err := awaitKeys(ctx, sc, id, "escaper")
	require.NoError(t, err)
	log, err := sc.Process(ctx, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0)})
	require.NoError(t, err)
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pids["escaper"]))
	require.NoError(t, err)
	var records []string
	for i := range contain.WatchdogCount {
		records = append(records, watchListRecords(t, watchdogOf(reg).PidOf(i))...)
	}
	if nsdelegate {
		assert.NotContains(t, log.Text(), "moved "+v2, "the kernel refused the move")
		assert.NotContains(t, string(cg), "0::/\n", "the escaper stayed in its session's cgroup")
		for _, r := range records {
			assert.False(t, strings.HasPrefix(r, "+n"), "no namespace is listed with the watchdogs: %q", r)
		}
	} else {
		assert.Contains(t, log.Text(), "moved "+v2, "without nsdelegate the move succeeds")
		if watchListRecords(t, watchdogOf(reg).PidOf(0)) != nil {
			assert.Contains(t, strings.Join(records, "\n"), "+n", "the namespace is listed with the watchdogs")
		}
	}
	kill, err := sc.Process(ctx, &ProcessRequest{Action: "kill", SessionID: id})
	require.NoError(t, err)
	require.Contains(t, kill.Text(), "Killed session", kill.Text())
	awaitNoTagged(t, tag)
}
