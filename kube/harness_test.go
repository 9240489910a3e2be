package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/rest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// The test cluster: the kubelet's own streaming server code
// (k8s.io/cri-streaming) on loopback, behind a small handler that takes
// the API server's pods/exec URLs (as bgexec builds them) and hands each
// to the streaming server under a fresh token, as the API server and the
// kubelet do between them. Its runtime runs real processes on this
// machine: a "container" is a directory, an exec is the command run there
// with os/exec, on a real terminal when asked, resized as the stream says.

// testCluster is a loopback "API server" with its runtime.
type testCluster struct {
	t       testing.TB
	rt      *testRuntime
	stream  streaming.Server
	srv     *http.Server
	ln      net.Listener
	pods    map[string]string // pod name -> its container directory
	host    string            // "http://127.0.0.1:port"
	serveWG sync.WaitGroup

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	upgrades []string // each exec request's Upgrade header, in order
}

// newTestCluster serves pods (each a directory of its own) until the
// test's cleanup.
func newTestCluster(t testing.TB, pods ...string) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, rt: &testRuntime{dirs: map[string]string{}, procs: map[*exec.Cmd]struct{}{}}, pods: map[string]string{}, conns: map[net.Conn]struct{}{}}
	for _, p := range pods {
		d := filepath.Join(t.TempDir(), p)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		tc.pods[p] = d
		tc.rt.dirs[p] = d
	}
	cfg := streaming.DefaultConfig
	cfg.Addr = "127.0.0.1:0"
	cfg.BaseURL = &url.URL{Scheme: "http", Host: "streaming.invalid"}
	var err error
	if tc.stream, err = streaming.NewServer(cfg, tc.rt); err != nil {
		t.Fatal(err)
	}
	if tc.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	tc.host = "http://" + tc.ln.Addr().String()
	tc.srv = &http.Server{Handler: http.HandlerFunc(tc.serve), ReadHeaderTimeout: 10 * time.Second, ConnState: tc.connState}
	tc.serveWG.Add(1)
	go func() {
		defer tc.serveWG.Done()
		_ = tc.srv.Serve(tc.ln) // ends with stop
	}()
	t.Cleanup(tc.close)
	return tc
}

// rest is a client configuration for the test cluster.
func (tc *testCluster) rest() *rest.Config {
	return &rest.Config{Host: tc.host, Timeout: 0}
}

func (tc *testCluster) connState(c net.Conn, s http.ConnState) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	switch s {
	case http.StateNew:
		tc.conns[c] = struct{}{}
	case http.StateClosed:
		delete(tc.conns, c)
	}
}

// stop makes the API server go away: its listener and every connection,
// the upgraded exec streams too, are closed at once.
func (tc *testCluster) stop() {
	_ = tc.srv.Close()
	tc.mu.Lock()
	for c := range tc.conns {
		_ = c.Close()
	}
	tc.mu.Unlock()
	tc.serveWG.Wait()
}

// removePod makes pod go away: the API server no longer lists it, and
// an exec into it is refused as not found.
func (tc *testCluster) removePod(pod string) {
	tc.mu.Lock()
	delete(tc.pods, pod)
	tc.mu.Unlock()
}

// dropConns closes every connection open now, the exec streams among
// them, and keeps the API server listening.
func (tc *testCluster) dropConns() {
	tc.mu.Lock()
	for c := range tc.conns {
		_ = c.Close()
	}
	tc.mu.Unlock()
}

func (tc *testCluster) close() {
	tc.stop()
	tc.rt.close()
}

// serve is the API server's part: pods/exec by URL parameters, and the
// pod list the selector reads.
func (tc *testCluster) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// api v1 namespaces NS pods [POD exec]
	if len(parts) < 5 || parts[0] != "api" || parts[1] != "v1" || parts[2] != "namespaces" || parts[4] != "pods" {
		http.NotFound(w, r)
		return
	}
	if len(parts) == 5 {
		tc.servePods(w)
		return
	}
	if len(parts) != 7 || parts[6] != "exec" {
		http.NotFound(w, r)
		return
	}
	tc.mu.Lock()
	tc.upgrades = append(tc.upgrades, r.Header.Get("Upgrade"))
	tc.mu.Unlock()
	pod := parts[5]
	tc.mu.Lock()
	_, ok := tc.pods[pod]
	tc.mu.Unlock()
	if !ok {
		http.Error(w, `pods "`+pod+`" not found`, http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	resp, err := tc.stream.GetExec(&runtimeapi.ExecRequest{
		ContainerId: pod, Cmd: q["command"],
		Tty: q.Get("tty") == "true", Stdin: q.Get("stdin") == "true", Stdout: q.Get("stdout") == "true", Stderr: q.Get("stderr") == "true",
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	u, err := url.Parse(resp.Url)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	r.URL.Path, r.URL.RawQuery = u.Path, ""
	tc.stream.ServeHTTP(w, r)
}

func (tc *testCluster) servePods(w http.ResponseWriter) {
	type item struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	}
	var list struct {
		Items []item `json:"items"`
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for p := range tc.pods {
		var it item
		it.Metadata.Name, it.Status.Phase = p, "Running"
		list.Items = append(list.Items, it)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&list)
}

// testRuntime runs each exec as a real process of this machine, in the
// pod's directory, in a session of its own (as a container runtime's
// exec is). A signal's end is reported as exit code 128+n, as runc and
// containerd report it.
type testRuntime struct {
	dirs map[string]string // read-only after setup

	wg    sync.WaitGroup
	mu    sync.Mutex
	procs map[*exec.Cmd]struct{}
}

func (rt *testRuntime) add(c *exec.Cmd) {
	rt.mu.Lock()
	rt.procs[c] = struct{}{}
	rt.mu.Unlock()
}

func (rt *testRuntime) remove(c *exec.Cmd) {
	rt.mu.Lock()
	delete(rt.procs, c)
	rt.mu.Unlock()
}

// close kills what is still running (a lost session's processes) and
// waits for every exec.
func (rt *testRuntime) close() {
	rt.mu.Lock()
	for c := range rt.procs {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	rt.mu.Unlock()
	rt.wg.Wait()
}

func (rt *testRuntime) Exec(ctx context.Context, containerID string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	rt.wg.Add(1)
	defer rt.wg.Done()
	dir, ok := rt.dirs[containerID]
	if !ok || len(cmd) == 0 {
		return fmt.Errorf("no container %q", containerID)
	}
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Dir = dir
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	c.WaitDelay = 2 * time.Second
	var err error
	if tty {
		err = rt.runTTY(c, in, out, resize)
	} else {
		err = rt.runPipes(c, in, out, errw)
	}
	if err != nil {
		return err
	}
	ws := c.ProcessState.Sys().(syscall.WaitStatus)
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command exited with code %d", code), Code: code}
	}
	return nil
}

func (rt *testRuntime) runPipes(c *exec.Cmd, in io.Reader, out, errw io.WriteCloser) error {
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if out != nil {
		c.Stdout = out
	}
	if errw != nil {
		c.Stderr = errw
	}
	var stdinW *os.File
	if in != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		c.Stdin, stdinW = r, w
		defer r.Close()
	}
	if err := c.Start(); err != nil {
		if stdinW != nil {
			_ = stdinW.Close()
		}
		return err
	}
	rt.add(c)
	defer rt.remove(c)
	if stdinW != nil {
		rt.wg.Add(1)
		go func() { // ends when the stream's stdin ends (EOF, or the stream closed)
			defer rt.wg.Done()
			_, _ = io.Copy(stdinW, in)
			_ = stdinW.Close()
		}()
	}
	if err := c.Wait(); c.ProcessState == nil {
		return err
	}
	return nil
}

func (rt *testRuntime) runTTY(c *exec.Cmd, in io.Reader, out io.WriteCloser, resize <-chan remotecommandserver.TerminalSize) error {
	size := &pty.Winsize{Cols: 80, Rows: 24}
	t := time.NewTimer(5 * time.Second) // the client sends the first size with the stream
	select {
	case s, ok := <-resize:
		if ok {
			size = &pty.Winsize{Cols: s.Width, Rows: s.Height}
		}
	case <-t.C:
	}
	t.Stop()
	master, err := pty.StartWithSize(c, size)
	if err != nil {
		return err
	}
	rt.add(c)
	defer rt.remove(c)
	stop := make(chan struct{})
	var copies sync.WaitGroup
	copies.Add(1)
	go func() {
		defer copies.Done()
		_, _ = io.Copy(out, master) // ends with EIO once the terminal is closed everywhere
	}()
	var resizer sync.WaitGroup
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		if in != nil {
			_, _ = io.Copy(master, in) // ends when the stream's stdin ends, or the master closes
		}
	}()
	resizer.Go(func() {
		for {
			select {
			case s, ok := <-resize:
				if !ok {
					return
				}
				setSize(master, s.Width, s.Height)
			case <-stop:
				return
			}
		}
	})
	werr := c.Wait()
	close(stop)
	resizer.Wait()
	done := make(chan struct{})
	go func() { copies.Wait(); close(done) }()
	t = time.NewTimer(2 * time.Second) // a background job may hold the terminal
	select {
	case <-done:
	case <-t.C:
	}
	t.Stop()
	_ = master.Close()
	<-done
	if c.ProcessState == nil {
		return werr
	}
	return nil
}

func (rt *testRuntime) Attach(context.Context, string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan remotecommandserver.TerminalSize) error {
	return errors.New("attach is not supported by the test runtime")
}

func (rt *testRuntime) PortForward(context.Context, string, int32, io.ReadWriteCloser) error {
	return errors.New("port forwarding is not supported by the test runtime")
}

// setSize sets the terminal's size without os.File.Fd, which would make
// the master blocking (and race with its Close).
func setSize(master *os.File, cols, rows uint16) {
	rc, err := master.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
	})
}
