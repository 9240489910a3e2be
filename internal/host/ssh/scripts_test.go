//go:build linux

package sshhost

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The kill after a lost connection must never reach a process that only
// got the lost session's pid: the attacker here is an unrelated process
// group leader with that pid and no tag.
func TestNodeKillAfterLossSparesOtherProcesses(t *testing.T) {
	t.Parallel()
	// A tag of its own: the scripts also signal every process carrying it.
	other := exec.Command("sleep", "1000")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, other.Start())
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	assert.Equal(t, 2, shExitCode(t, killLostScript(other.Process.Pid, "fedcba9876543210", "")))
	assert.NoError(t, other.Process.Signal(syscall.Signal(0)), "the unrelated process must still run")

	tagged := exec.Command("sleep", "1000")
	tagged.Env = append(os.Environ(), nodeTagKey+"=fedcba9876543210")
	tagged.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, tagged.Start())
	done := make(chan struct{})
	go func() { _ = tagged.Wait(); close(done) }()
	assert.Equal(t, 0, shExitCode(t, killLostScript(tagged.Process.Pid, "fedcba9876543210", "")))
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the tagged group was not killed")
	}
}

// A group whose leader has exited keeps its id only while members are
// left; once it is free, another group can get it. A session's signal, its
// alive check and its kill after a loss go by group id, so each must first
// find a member that carries the session's tag. The attacker here is a
// group of another session (its leader gone, a member left) with the id a
// stale session still holds; it must survive every script.
func TestNodeSignalsSpareAGroupThatReusedTheID(t *testing.T) {
	t.Parallel()
	const tag = "0123456789abcde2" // each test its own: the kill tests kill every process with theirs
	orphanGroup := func(env []string) (pgid, member int) {
		t.Helper()
		c := exec.Command("/bin/sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo $!")
		c.Env = env
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := c.Output() // the leader exits; its sleep stays in the group
		require.NoError(t, err)
		member, err = strconv.Atoi(strings.TrimSpace(string(out)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = syscall.Kill(member, syscall.SIGKILL) })
		return c.Process.Pid, member
	}
	alive := func(pid int) bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err == nil && !strings.Contains(string(b), ") Z ")
	}

	g, member := orphanGroup(os.Environ())
	assert.Equal(t, 0, shExitCode(t, signalScript("KILL", g, tag, "")), "nothing of the session is left")
	assert.Equal(t, 1, shExitCode(t, aliveScript(g, tag, "")), "the other group is not the session's")
	assert.Equal(t, 2, shExitCode(t, killLostScript(g, tag, "")))
	assert.True(t, alive(member), "the other session's process must still run")

	g, member = orphanGroup(append(os.Environ(), nodeTagKey+"="+tag))
	assert.Equal(t, 0, shExitCode(t, aliveScript(g, tag, "")), "the session's member is found without its leader")
	assert.Equal(t, 0, shExitCode(t, signalScript("KILL", g, tag, "")))
	assert.True(t, proctest.PidGone(t, member), "the session's own member is killed")
}

// shExitCode runs script with /bin/sh on this machine (the test node) and
// returns its exit code.
func shExitCode(t *testing.T, script string) int {
	t.Helper()
	err := exec.Command("/bin/sh", "-c", script).Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}
