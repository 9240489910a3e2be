//go:build linux

package bgexec

// A real OpenSSH server on loopback for the node tests: keys made with
// ssh-keygen in the test's temp dir, a config of its own, started with
// -D -e and stopped in Cleanup.

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

type testSSHD struct {
	addr       string
	port       int
	user       string
	knownHosts string // holds the server's real host key
	wrongHosts string // holds another key for the same address
	clientKey  string // authorized
	otherKey   string // not authorized
	pid        int

	logMu sync.Mutex
	log   strings.Builder
}

func keygen(t testing.TB, path string) {
	t.Helper()
	out, err := exec.Command(needTool(t, "ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-C", "bgexec-test", "-f", path).CombinedOutput()
	require.NoError(t, err, string(out))
}

// startSSHD starts sshd on a free loopback port for this test.
func startSSHD(t testing.TB) *testSSHD {
	t.Helper()
	sshd := needTool(t, "sshd", "/usr/sbin/sshd")
	if os.Geteuid() != 0 {
		t.Skip("the node tests log in as root to the test's own sshd")
	}
	dir := t.TempDir()
	for _, k := range []string{"host", "host2", "client", "other"} {
		keygen(t, filepath.Join(dir, k))
	}
	pub := func(k string) string {
		b, err := os.ReadFile(filepath.Join(dir, k+".pub"))
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	d := &testSSHD{
		addr: "127.0.0.1:" + strconv.Itoa(port), port: port, user: "root",
		knownHosts: filepath.Join(dir, "known_hosts"), wrongHosts: filepath.Join(dir, "wrong_hosts"),
		clientKey: filepath.Join(dir, "client"), otherKey: filepath.Join(dir, "other"),
	}
	host := fmt.Sprintf("[127.0.0.1]:%d", port)
	require.NoError(t, os.WriteFile(d.knownHosts, []byte(host+" "+pub("host")+"\n"), 0o600))
	require.NoError(t, os.WriteFile(d.wrongHosts, []byte(host+" "+pub("host2")+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "authorized_keys"), []byte(pub("client")+"\n"), 0o600))
	cfg := filepath.Join(dir, "sshd_config")
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Join([]string{
		"ListenAddress 127.0.0.1",
		"Port " + strconv.Itoa(port),
		"HostKey " + filepath.Join(dir, "host"),
		"PidFile none",
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"PermitRootLogin prohibit-password",
		"StrictModes no",
		"UsePAM no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"AllowTcpForwarding yes",
		"PrintMotd no",
		"LogLevel VERBOSE",
		"",
	}, "\n")), 0o600))
	// Debian's sshd needs its privilege separation directory.
	require.NoError(t, os.MkdirAll("/run/sshd", 0o755))

	cmd := sshdCommand(sshd, cfg)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	d.pid = cmd.Process.Pid
	ready := make(chan struct{})
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			d.logMu.Lock()
			d.log.WriteString(line + "\n")
			d.logMu.Unlock()
			if strings.Contains(line, "Server listening on") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sshd's log:\n%s", d.logText())
		}
		d.signalSessions(unix.SIGKILL)
		_ = cmd.Process.Kill()
		<-logDone
		_ = cmd.Wait()
	})
	select {
	case <-ready:
	case <-logDone:
		t.Fatalf("sshd exited at start:\n%s", d.logText())
	case <-time.After(30 * time.Second):
		t.Fatalf("sshd did not start listening:\n%s", d.logText())
	}
	return d
}

// sshdCommand starts sshd as a clean node. Each session's shell runs the
// login user's ~/.bashrc (bash reads it for commands sshd starts), and on
// this kind of machine root's runs `pyenv init`: a rehash under a lock
// file, which a session killed during its login leaves behind, after
// which every login waits for pyenv's 60 s lock timeout. So, where
// unshare(1) is there, sshd runs in a mount namespace of its own in which
// the user's shell rc files are empty (the rest of the file system, and
// the pid namespace, stay shared, so the tests still see every process).
func sshdCommand(sshd, cfg string) *exec.Cmd {
	args := []string{"-D", "-e", "-f", cfg}
	unshare, err := exec.LookPath("unshare")
	home, herr := os.UserHomeDir()
	if err != nil || herr != nil || os.Geteuid() != 0 {
		return exec.Command(sshd, args...)
	}
	mask := `for f in "$HOME_RC"/.bashrc "$HOME_RC"/.bash_profile "$HOME_RC"/.bash_login "$HOME_RC"/.profile; do ` +
		`if [ -f "$f" ]; then mount --bind /dev/null "$f" || exit 1; fi; done; exec "$@"`
	cmd := exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", mask, "sh", sshd}, args...)...)
	cmd.Env = append(os.Environ(), "HOME_RC="+home)
	return cmd
}

func (d *testSSHD) logText() string {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	return d.log.String()
}

// node returns a Node entry for this server with the authorized key.
func (d *testSSHD) node() Node {
	return Node{Addr: d.addr, User: d.user, KeyFile: d.clientKey, KnownHostsFile: d.knownHosts}
}

func (d *testSSHD) descends(all map[int]psEntry, pid int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		e, ok := all[pid]
		if !ok {
			return false
		}
		if e.ppid == d.pid {
			return true
		}
		pid = e.ppid
	}
	return false
}

// signalSessions signals every per-connection sshd process: SIGKILL drops
// every connection at once, SIGSTOP makes them hang.
func (d *testSSHD) signalSessions(sig unix.Signal) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	all := map[int]psEntry{}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if ps, ok := readPS(pid); ok {
				all[pid] = ps
			}
		}
	}
	for pid := range all {
		if pid == d.pid || !d.descends(all, pid) {
			continue
		}
		comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(comm)), "sshd") {
			_ = unix.Kill(pid, sig)
		}
	}
}

// nodeRegistry returns a registry running every exec on this server as
// node "n1", closed at the end of the test.
func nodeRegistry(t *testing.T, d *testSSHD, cfg Config, edit func(*Node)) *Registry {
	t.Helper()
	n := d.node()
	if edit != nil {
		edit(&n)
	}
	cfg.Host = "node"
	cfg.Nodes = map[string]Node{"n1": n}
	return newTestRegistry(t, cfg)
}
