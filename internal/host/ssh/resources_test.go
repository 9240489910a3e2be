//go:build linux

package sshhost

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The resource script, run on this machine's /proc as on a node's: a
// session's processes are its group and those carrying its tag, and its
// ports are the sockets they listen on.
func TestNodeResourceScript(t *testing.T) {
	t.Parallel()
	const tag = "0123456789abcde1" // each test its own: the kill tests kill every process with theirs
	exe, err := os.Executable()
	require.NoError(t, err)
	leader := exec.Command(exe)
	leader.Env = append(os.Environ(), helperEnv+"=listen")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := leader.StdinPipe()
	require.NoError(t, err)
	stdout, err := leader.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, leader.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = leader.Wait() })
	portLine := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		portLine <- strings.TrimSpace(l)
	}()
	var port int
	select {
	case l := <-portLine:
		port, err = strconv.Atoi(l)
		require.NoError(t, err, "the helper said %q", l)
	case <-time.After(20 * time.Second):
		t.Fatal("the helper did not listen")
	}

	// A process that left the group but carries the tag counts; one of
	// another group without it does not.
	escaper := exec.Command("sleep", "1000")
	escaper.Env = append(os.Environ(), nodeTagKey+"="+tag)
	escaper.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, escaper.Start())
	t.Cleanup(func() { _ = escaper.Process.Kill(); _ = escaper.Wait() })
	stranger := exec.Command("sleep", "1000")
	stranger.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, stranger.Start())
	t.Cleanup(func() { _ = stranger.Process.Kill(); _ = stranger.Wait() })

	groups := []int{leader.Process.Pid, stranger.Process.Pid}
	read := func() ([]byte, map[int]*host.Usage) {
		out, err := exec.Command("/bin/sh", "-c", nodeResourceScript(nodeProcRoot, groups, []string{tag, "fedcba9876543210"})).Output()
		require.NoError(t, err)
		got, ok := parseNodeResources(strings.Split(strings.TrimRight(string(out), "\n"), "\n"), groups)
		require.True(t, ok, string(out))
		require.NotNil(t, got[leader.Process.Pid])
		return out, got
	}
	out, got := read()
	s := got[leader.Process.Pid]
	assert.Equal(t, 2, s.Tasks, "the leader and the tagged escaper; the script said:\n%s", out)
	assert.Equal(t, []host.Listener{{Port: port, Address: "127.0.0.1"}}, s.Ports)
	assert.Positive(t, s.MemoryBytes)
	o := got[stranger.Process.Pid]
	require.NotNil(t, o)
	assert.Equal(t, 1, o.Tasks)
	assert.Empty(t, o.Ports)

	out, err = exec.Command("/bin/sh", "-c", nodeResourceScript(t.TempDir(), groups, []string{tag, "x"})).Output()
	assert.Error(t, err, "no procfs: the script exits 3")
	_, ok := parseNodeResources(strings.Split(string(out), "\n"), groups)
	assert.False(t, ok)
}

func TestParseNodeResources(t *testing.T) {
	t.Parallel()
	lines := []string{
		"H 4096 100",
		"T 10 30",
		"P 10 10 150 100",
		"P 11 10 50 28",
		"P 30 30 100 0",
		"P 20 20 7 1",
		"D 11",
		"F 555",
		"F 556",
		"D 30",
		"F 557",
		"N    0: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 555 1 0 100 0 0 10 0",
		"N    1: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 557 1 0 100 0 0 10 0",
		"N    2: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 999 1 0 100 0 0 10 0",
	}
	got, ok := parseNodeResources(lines, []int{10, 20})
	require.True(t, ok)
	assert.Equal(t, &host.Usage{
		CPUMs: 3000, MemoryBytes: 128 * 4096, Tasks: 3,
		Ports: []host.Listener{{Port: 80, Address: "0.0.0.0"}, {Port: 3000, Address: "127.0.0.1"}},
	}, got[10])
	assert.Equal(t, &host.Usage{CPUMs: 70, MemoryBytes: 4096, Tasks: 1, Ports: []host.Listener{}}, got[20])
	assert.Equal(t, []string{":80", ":3000"}, host.PortNames(got[10].Ports))

	_, ok = parseNodeResources([]string{"login noise"}, []int{10})
	assert.False(t, ok, "no header: nothing usable")
}
