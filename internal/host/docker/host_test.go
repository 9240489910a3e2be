package dockerhost

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deadline bounds every wait of these tests.
const deadline = 60 * time.Second

// newTestHost returns a host on the test daemon, closed (and checked to
// leave no container) at the end of the test. The tests that are not
// about the spare container turn it off: each spare is a container the
// daemon starts and removes for nothing, about a second of its CPU.
func newTestHost(t *testing.T, cfg Config) *Host {
	t.Helper()
	daemon, image := testDaemon(t)
	if cfg.Daemon == "" {
		cfg.Daemon = daemon
	}
	cfg.Image = image
	h, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, h.Close())
		assert.Empty(t, h.listContainers(t), "containers left after Close")
	})
	return h
}

// awaitSpare waits until a spare container is ready, at most d.
func (h *Host) awaitSpare(d time.Duration) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		h.mu.Lock()
		ok := h.spare != ""
		h.mu.Unlock()
		if ok {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// listContainers lists the containers the daemon has with h's label.
func (h *Host) listContainers(t *testing.T) []string {
	t.Helper()
	api, err := client.New(client.WithHost(h.cfg.Daemon))
	require.NoError(t, err)
	defer api.Close()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	res, err := api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", Label+"="+h.id)})
	require.NoError(t, err)
	var ids []string
	for _, c := range res.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

// readAll reads each output to its end, concurrently, within the deadline.
func readAll(t *testing.T, st *host.Started) []string {
	t.Helper()
	out := make([]bytes.Buffer, len(st.Outputs))
	var wg sync.WaitGroup
	for i, r := range st.Outputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(&out[i], r) // the end of the stream ends it
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(deadline):
		t.Fatal("outputs did not end")
	}
	texts := make([]string, len(out))
	for i := range out {
		texts[i] = out[i].String()
	}
	return texts
}

// awaitExit calls AwaitExit within the deadline and reaps.
func awaitExit(t *testing.T, p session.Process) (syscall.WaitStatus, error) {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = p.AwaitExit(); close(done) }()
	select {
	case <-done:
	case <-time.After(deadline):
		t.Fatal("the exec did not end")
	}
	return p.Reap()
}

func start(t *testing.T, h *Host, spec *host.Spec) *host.Started {
	t.Helper()
	return startOn(t, h, spec)
}

func TestExitCodesAndSeparateStreams(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true})
	for _, code := range []int{0, 3, 127} {
		t.Run(fmt.Sprintf("exit %d keeps stdout and stderr apart", code), func(t *testing.T) {
			st := start(t, h, &host.Spec{Command: fmt.Sprintf("echo out; echo err >&2; echo out2; exit %d", code)})
			require.Len(t, st.Outputs, 2)
			assert.Nil(t, st.Stdin, "a command without a stdin pipe reads EOF")
			texts := readAll(t, st)
			ws, err := awaitExit(t, st.Process)
			require.NoError(t, err)
			require.NoError(t, st.Process.Release())
			assert.Equal(t, "out\nout2\n", texts[0])
			assert.Equal(t, "err\n", texts[1])
			require.True(t, ws.Exited())
			assert.Equal(t, code, ws.ExitStatus())
		})
	}
}

func TestStdinWriteAndEOF(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true})
	st := start(t, h, &host.Spec{Command: "cat; echo done", StdinPipe: true})
	require.NotNil(t, st.Stdin)
	_, err := st.Stdin.Write([]byte("hello\n"))
	require.NoError(t, err)
	require.NoError(t, st.Stdin.(io.Closer).Close(), "eof")
	texts := readAll(t, st)
	ws, err := awaitExit(t, st.Process)
	require.NoError(t, err)
	require.NoError(t, st.Process.Release())
	assert.Equal(t, "hello\ndone\n", texts[0])
	assert.Equal(t, 0, ws.ExitStatus())
}

// readUntil reads r until its text contains want; at the deadline the
// stream is closed, which ends a blocked read.
func readUntil(t *testing.T, r io.Reader, buf *bytes.Buffer, want string) {
	t.Helper()
	timer := time.AfterFunc(deadline, func() { _ = r.(io.Closer).Close() })
	defer timer.Stop()
	b := make([]byte, 4096)
	for !strings.Contains(buf.String(), want) {
		n, err := r.Read(b)
		buf.Write(b[:n])
		require.NoError(t, err, "reading for %q, got %q", want, buf.String())
	}
}

func TestPTYAndResize(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true})
	st := start(t, h, &host.Spec{Command: "stty size; read x; stty size; tty -s && echo isatty", PTY: true, Cols: 80, Rows: 24})
	require.Len(t, st.Outputs, 1)
	var buf bytes.Buffer
	readUntil(t, st.Outputs[0], &buf, "24 80\r\n")
	require.NoError(t, st.Process.(host.Resizer).Resize(100, 30))
	_, err := st.Stdin.Write([]byte("\r"))
	require.NoError(t, err)
	readUntil(t, st.Outputs[0], &buf, "30 100\r\nisatty\r\n")
	readAll(t, st) // the session's reader reads to the end, which AwaitExit waits for
	ws, err := awaitExit(t, st.Process)
	require.NoError(t, err)
	assert.Equal(t, 0, ws.ExitStatus())
	require.NoError(t, st.Process.Release())
}

// A resize made at once after the start sticks: the terminal's first size
// must not land after it and undo it.
func TestResizeRightAfterStart(t *testing.T) {
	t.Parallel()
	// One container for the five rounds: the race is between an exec's
	// start and its resize, whatever container the exec runs in.
	h := newTestHost(t, Config{PerScope: true})
	sc := h.ForScope("resize")
	for range 5 {
		st := startOn(t, sc, &host.Spec{Command: "read x; stty size", PTY: true, Cols: 80, Rows: 24})
		require.NoError(t, st.Process.(host.Resizer).Resize(101, 37))
		_, err := st.Stdin.Write([]byte("\r"))
		require.NoError(t, err)
		out := readAll(t, st)
		assert.Contains(t, out[0], "37 101\r\n")
		_, err = awaitExit(t, st.Process)
		require.NoError(t, err)
		require.NoError(t, st.Process.Release())
	}
}

// processes lists the processes of a container but its init and the
// listing itself, as "pid args" lines.
func (p *process) processes(t *testing.T) []string {
	t.Helper()
	out, code, err := p.h.run(p.cid, `for d in /proc/[0-9]*; do n=${d#/proc/}; [ "$n" = 1 ] || [ "$n" = $$ ] && continue; [ -r $d/cmdline ] || continue; a=$(tr '\0' ' ' <$d/cmdline); [ -n "$a" ] && echo "$n $a"; done; exit 0`)
	require.NoError(t, err)
	require.Equal(t, 0, code)
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(out)), " ", "_"))
}

// The attack: a command starts processes that leave its process group
// (setsid into a new session, nohup into the background) and then is
// killed. Every one of them must be gone after the kill, before the
// container is removed.
func TestKillReachesProcessesThatLeftTheGroup(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true})
	st := start(t, h, &host.Spec{Command: "setsid sleep 1001 </dev/null >/dev/null 2>&1 & (setsid sh -c 'sleep 1002' </dev/null >/dev/null 2>&1 &) ; echo started; sleep 1000"})
	p := st.Process.(*process)
	var buf bytes.Buffer
	readUntil(t, st.Outputs[0], &buf, "started\n")
	require.Eventually(t, func() bool {
		ps := strings.Join(p.processes(t), " ")
		return strings.Contains(ps, "sleep_1001") && strings.Contains(ps, "sleep_1002")
	}, deadline, 50*time.Millisecond, "the sleeps did not start")
	require.NoError(t, p.SignalGroup(syscall.SIGTERM))
	texts := readAll(t, st)
	ws, err := awaitExit(t, p)
	require.NoError(t, err)
	assert.Equal(t, "started\n", buf.String()+texts[0][:0])
	require.True(t, ws.Signaled(), "status %v", ws)
	assert.Equal(t, syscall.SIGTERM, ws.Signal())
	assert.Empty(t, p.processes(t), "processes survived the kill")
	require.NoError(t, p.Release())
}

func TestReleaseAndCloseLeaveNoContainers(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true}) // counts without a spare
	st := start(t, h, &host.Spec{Command: "true"})
	readAll(t, st)
	_, err := awaitExit(t, st.Process)
	require.NoError(t, err)
	require.Len(t, h.listContainers(t), 1)
	require.NoError(t, st.Process.Release())
	assert.Empty(t, h.listContainers(t), "Release removes the session's container")

	// Sessions still running when the host closes, with output nobody
	// reads: Close must not wait for a reader.
	for range 2 {
		start(t, h, &host.Spec{Command: "echo unread; echo unread >&2; sleep 1000"})
	}
	require.Len(t, h.listContainers(t), 2)
	closed := make(chan error, 1)
	go func() { closed <- h.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(deadline):
		t.Fatal("Close did not return")
	}
	assert.Empty(t, h.listContainers(t), "Close removes every container")
	_, err = h.Start(context.Background(), &host.Spec{Command: "true"})
	assert.ErrorIs(t, err, ErrClosed)
}

func TestSpareContainerServesTheNextSession(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{})
	st := start(t, h, &host.Spec{Command: "echo one"})
	readAll(t, st)
	_, err := awaitExit(t, st.Process)
	require.NoError(t, err)
	require.NoError(t, st.Process.SignalGroup(syscall.SIGKILL))
	require.NoError(t, st.Process.Release())
	require.True(t, h.awaitSpare(deadline), "no spare was made")
	h.mu.Lock()
	spare := h.spare
	h.mu.Unlock()
	st = start(t, h, &host.Spec{Command: "echo two"})
	assert.Equal(t, spare, st.Process.(*process).cid, "the next session runs in the spare")
	texts := readAll(t, st)
	_, err = awaitExit(t, st.Process)
	require.NoError(t, err)
	assert.Equal(t, "two\n", texts[0])
	require.NoError(t, st.Process.SignalGroup(syscall.SIGKILL))
	require.NoError(t, st.Process.Release())
	// Close waits for the background removals and the spare being made.
}

func TestWorkdirOnlyInsideMounts(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(ws, "sub"), 0o755))
	h := newTestHost(t, Config{NoSpare: true, Mounts: []Mount{{Source: ws, Target: "/work"}}})

	t.Run("a directory outside every mount is refused before anything starts", func(t *testing.T) {
		outside := t.TempDir()
		assert.Contains(t, h.Place(outside), "is not mounted in the Docker container")
		assert.Contains(t, h.Prepare(&host.Spec{Dir: outside}), ws)
		_, err := h.Start(context.Background(), &host.Spec{Command: "true", Dir: outside})
		require.Error(t, err)
		assert.Empty(t, h.listContainers(t))
	})
	t.Run("a directory inside a mount runs there, read-write", func(t *testing.T) {
		assert.Empty(t, h.Place(filepath.Join(ws, "sub")))
		st := start(t, h, &host.Spec{Command: "pwd; echo hi > f", Dir: filepath.Join(ws, "sub")})
		texts := readAll(t, st)
		_, err := awaitExit(t, st.Process)
		require.NoError(t, err)
		require.NoError(t, st.Process.Release())
		assert.Equal(t, "/work/sub\n", texts[0], texts[1])
		data, err := os.ReadFile(filepath.Join(ws, "sub", "f"))
		require.NoError(t, err)
		assert.Equal(t, "hi\n", string(data))
	})
	t.Run("no workdir starts in the first mount", func(t *testing.T) {
		st := start(t, h, &host.Spec{Command: "pwd"})
		texts := readAll(t, st)
		_, err := awaitExit(t, st.Process)
		require.NoError(t, err)
		require.NoError(t, st.Process.Release())
		assert.Equal(t, "/work\n", texts[0])
	})
}

func TestEnvironmentLayers(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, Config{NoSpare: true})
	st := start(t, h, &host.Spec{Command: "echo $A $B $C $D", Env: host.Env{
		Defaults: []string{"A=default", "B=default"}, Overrides: map[string]string{"B": "override"},
		Forced: []string{"C=forced"}, Added: []string{"D=added", "C=added"},
	}})
	texts := readAll(t, st)
	_, err := awaitExit(t, st.Process)
	require.NoError(t, err)
	require.NoError(t, st.Process.Release())
	assert.Equal(t, "default override added added\n", texts[0])
}
