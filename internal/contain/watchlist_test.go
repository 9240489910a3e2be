//go:build linux

package contain

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// listText reads the list as a watchdog would, record by record up to the
// end mark, and returns the records in use, trimmed.
func listText(t *testing.T, l *watchList) []string {
	t.Helper()
	f, err := l.reader()
	require.NoError(t, err)
	defer f.Close()
	var out []string
	buf := make([]byte, listRecord)
	for {
		n, err := f.Read(buf)
		require.NoError(t, err)
		require.Equal(t, listRecord, n)
		require.Equal(t, byte('\n'), buf[listRecord-1], "every record is a line")
		rec := strings.TrimRight(string(buf[:listRecord-1]), " ")
		if strings.HasPrefix(rec, ".") {
			return out
		}
		out = append(out, rec)
	}
}

// The list's records are lines a shell reads: listed entries, free slots
// reused before the end moves, and the end mark after the last slot used.
func TestWatchListRecords(t *testing.T) {
	l, err := newWatchList(4)
	if err != nil {
		t.Skipf("no sealed list on this kernel: %v", err)
	}
	defer l.close()
	st, err := l.f.Stat()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o400), st.Mode().Perm(), "only its owner may open it, and only to read, before it is sealed")
	assert.Empty(t, listText(t, l))
	require.True(t, l.add("+", "1234"))
	require.True(t, l.add("+n", "4026532000"))
	assert.Equal(t, []string{"+   1234", "+n  4026532000"}, listText(t, l))
	require.True(t, l.remove("+", "1234"))
	assert.False(t, l.remove("+", "1234"), "not listed any more")
	assert.Equal(t, []string{"#   1234", "+n  4026532000"}, listText(t, l), "a freed slot is skipped")
	require.True(t, l.add("+", "77"))
	assert.Equal(t, []string{"+   77", "+n  4026532000"}, listText(t, l), "and reused")
	require.True(t, l.add("+", "78"))
	assert.False(t, l.add("+", "79"), "four slots hold three entries and the end mark")
	assert.Equal(t, []string{"+   77", "+n  4026532000", "+   78"}, listText(t, l))
	assert.False(t, l.empty())
}

// No process but the host can change the list, not even one of the host's
// own user that opens it again through /proc: otherwise a session could
// take itself off it and outlive a host that died. The attack here runs
// in the test process, as the host's user, against each watchdog's list
// descriptor; the watchdogs must still kill the listed group.
func TestWatchListCannotBeChanged(t *testing.T) {
	t.Parallel()
	sleeper := proctest.StartSleeper(t, nil)
	w, err := StartWatchdog("")
	require.NoError(t, err)
	if w.list == nil {
		w.Close()
		t.Skip("no sealed list on this kernel: the watchdogs get lines")
	}
	closed := false
	defer func() {
		if !closed {
			w.Close()
		}
	}()
	w.Watch(sleeper)
	mine := []byte("#   " + strconv.Itoa(sleeper))
	for i := range WatchdogCount {
		path := "/proc/" + strconv.Itoa(w.PidOf(i)) + "/fd/3"
		target, err := os.Readlink(path)
		require.NoError(t, err)
		require.Contains(t, target, "bgexec-watchlist", "fd 3 is the list")
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		require.NoError(t, err, "opening it again is allowed; changing it is not")
		fd := int(f.Fd())
		_, err = unix.Pwrite(fd, mine, 0)
		assert.ErrorIs(t, err, unix.EPERM, "pwrite over the record")
		_, err = unix.Write(fd, mine)
		assert.ErrorIs(t, err, unix.EPERM, "write over the record")
		assert.ErrorIs(t, unix.Ftruncate(fd, 0), unix.EPERM, "truncate the list")
		assert.ErrorIs(t, unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, listRecord), unix.EPERM, "punch out the record")
		_, err = unix.Mmap(fd, 0, listRecord, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		assert.ErrorIs(t, err, unix.EPERM, "map it writable")
		_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE)
		assert.ErrorIs(t, err, unix.EPERM, "no more seals: F_SEAL_SEAL")
		_, err = os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		assert.Error(t, err, "open it truncating")
		require.NoError(t, f.Close())
	}
	w.Close()
	closed = true
	assert.True(t, proctest.PidGone(t, sleeper), "the listed group was killed")
}

// With the list full, entries go to the watchdogs as lines, and a
// restarted watchdog reads the list and is sent the lines again: at the
// end, every group still listed either way is killed, and none forgotten
// either way is. Without a list at all, everything goes by line.
func TestWatchListOverflowsIntoLines(t *testing.T) {
	t.Parallel()
	for _, slots := range []int{3, 0} {
		t.Run("slots="+strconv.Itoa(slots), func(t *testing.T) {
			t.Parallel()
			s := make([]int, 5)
			for i := range s {
				s[i] = proctest.StartSleeper(t, nil)
			}
			w, err := startWatchdog("", slots)
			require.NoError(t, err)
			closed := false
			defer func() {
				if !closed {
					w.Close()
				}
			}()
			if slots > 0 && w.list == nil {
				t.Skip("no sealed list on this kernel")
			}
			w.KeepAlive()
			w.Watch(s[0])  // list
			w.Watch(s[1])  // list: full now
			w.Watch(s[2])  // line
			w.Forget(s[0]) // list
			w.Watch(s[3])  // list, in s[0]'s slot
			w.Forget(s[2]) // line
			w.Watch(s[4])  // line
			if w.list != nil {
				assert.Equal(t, []string{"+   " + strconv.Itoa(s[3]), "+   " + strconv.Itoa(s[1])}, listText(t, w.list))
				// Listed by line, s[4] stays there even when a slot frees:
				// watched again, and then forgotten once, it is gone.
				w.Forget(s[3])
				w.Watch(s[4])
				w.Forget(s[4])
				w.Watch(s[3])
				w.Watch(s[4])
				assert.Equal(t, []string{"+   " + strconv.Itoa(s[3]), "+   " + strconv.Itoa(s[1])}, listText(t, w.list), "s[4] never went to the list")
			}
			// Both watchdogs killed and replaced, one after the other.
			restartWatchdogs(t, w)
			w.Close()
			closed = true
			for _, i := range []int{1, 3, 4} {
				assert.True(t, proctest.PidGone(t, s[i]), "listed group %d was killed", i)
			}
			for _, i := range []int{0, 2} {
				assert.True(t, proctest.Untouched(t, s[i]), "forgotten group %d was not", i)
			}
		})
	}
}

// The shell reads the list's records as it reads lines: it stops at the
// end mark, skips free slots, and obeys only a well-formed record, never
// running one as code. The list here is a plain file written by the test,
// as a host killed in the middle of a change could leave it.
func TestWatchdogReadsTheListSafely(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "injected")
	victim, freed, after := proctest.StartSleeper(t, nil), proctest.StartSleeper(t, nil), proctest.StartSleeper(t, nil)
	sibling := proctest.StartSleeper(t, nil)
	rec := func(order, value string) string {
		r := order + strings.Repeat(" ", 4-len(order)) + value
		return r + strings.Repeat(" ", max(0, listRecord-1-len(r))) + "\n" // an injection may be longer
	}
	var b strings.Builder
	for _, bad := range []string{"1;touch " + marker + ";:", "$(touch " + marker + ")", "`touch " + marker + "`", "1", "0", "0" + strconv.Itoa(sibling), "-" + strconv.Itoa(sibling), strconv.Itoa(sibling) + "x"} {
		b.WriteString(rec("+", bad))
	}
	b.WriteString(rec("+n", "$(touch "+marker+")"))
	b.WriteString(rec("q", ""))
	b.WriteString(rec("#", strconv.Itoa(freed)))
	b.WriteString(rec("+", strconv.Itoa(victim)))
	b.WriteString(rec(".", ""))
	b.WriteString(rec("+", strconv.Itoa(after)))
	path := filepath.Join(t.TempDir(), "list")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	list, err := os.Open(path)
	require.NoError(t, err)
	defer list.Close()

	_, end := runWatchdog(t, "", list, nil)
	end(10 * time.Second)
	assert.NoFileExists(t, marker, "no injected command ran")
	assert.True(t, proctest.PidGone(t, victim), "the listed group was killed")
	for name, pid := range map[string]int{"a freed slot's": freed, "one after the end mark": after, "a malformed record's": sibling} {
		assert.True(t, proctest.Untouched(t, pid), "%s group was not", name)
	}
}

// A watchdog that cannot open the list (someone changed its mode, or
// /proc is gone) is sent every entry as a line: those listed before its
// start, and every change after it. With both watchdogs restarted so, at
// the end every group still listed is killed and none forgotten is.
func TestWatchListFallsBackToLines(t *testing.T) {
	t.Parallel()
	s := make([]int, 3)
	for i := range s {
		s[i] = proctest.StartSleeper(t, nil)
	}
	w, err := StartWatchdog("")
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			w.Close()
		}
	}()
	if w.list == nil {
		t.Skip("no sealed list on this kernel: the watchdogs get lines anyway")
	}
	w.KeepAlive()
	w.Watch(s[0]) // in the list before the restarts
	w.mu.Lock()
	w.list.reopen = filepath.Join(t.TempDir(), "gone")
	w.mu.Unlock()
	for i, pid := range restartWatchdogs(t, w) {
		_, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/3")
		assert.Error(t, err, "the restarted watchdog %d has no list", i)
	}
	w.Watch(s[1])  // in the list, and a line to both
	w.Watch(s[2])  // the same
	w.Forget(s[2]) // out of the list, and a line to both
	require.Len(t, w.list.slots, 2, "s[0] and s[1] are in the list")
	w.Close()
	closed = true
	assert.True(t, proctest.PidGone(t, s[0]), "the group listed before the restarts was killed")
	assert.True(t, proctest.PidGone(t, s[1]), "the group listed after them was killed")
	assert.True(t, proctest.Untouched(t, s[2]), "the group forgotten was not")
}

// restartWatchdogs SIGKILLs each watchdog process in turn and waits, with
// a deadline, for its replacement to run its script, whose pids it
// returns.
func restartWatchdogs(t *testing.T, w *Watchdog) []int {
	t.Helper()
	var pids []int
	for i := range WatchdogCount {
		old := w.PidOf(i)
		require.NoError(t, unix.Kill(old, unix.SIGKILL))
		deadline := time.Now().Add(10 * time.Second)
		for w.PidOf(i) == 0 || w.PidOf(i) == old {
			require.True(t, time.Now().Before(deadline), "watchdog %d was not restarted", i)
			time.Sleep(5 * time.Millisecond)
		}
		proctest.AwaitIgnored(t, w.PidOf(i), unix.SIGTERM)
		pids = append(pids, w.PidOf(i))
	}
	return pids
}

// runWatchdog starts a watchdog process on a lifeline of its own (cg its
// registry's cgroup, list its fd 3 when not nil), lets setup change its
// command first, and returns the host's end and a function that ends the
// lifeline and waits, at most d, for the watchdog to exit.
func runWatchdog(t *testing.T, cg string, list *os.File, setup func(*exec.Cmd)) (host *os.File, end func(d time.Duration)) {
	t.Helper()
	host, child, err := newLifeline()
	require.NoError(t, err)
	t.Cleanup(func() { _ = host.Close() })
	cmd := watchdogCommand(cg, child, list)
	if setup != nil {
		setup(cmd)
	}
	err = cmd.Start()
	_ = child.Close()
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-waited
	})
	return host, func(d time.Duration) {
		t.Helper()
		require.NoError(t, host.Close())
		select {
		case <-waited:
			waited <- nil // for the cleanup
		case <-time.After(d):
			t.Fatal("the watchdog did not exit at the end of its lifeline")
		}
	}
}

// A line wakes every watchdog process. Forgetting what was never watched
// (a cgroup session's group, forgotten at its end) sends none; forgetting
// what was watched still tells each watchdog process that was told of it.
// The watchdog processes here are pipes the test reads: one that reads
// the list and one that is sent every entry as a line.
func TestWatchdogForgetsTheUnwatchedSilently(t *testing.T) {
	t.Parallel()
	l, err := newWatchList(8)
	if err != nil {
		t.Skipf("no sealed list on this kernel: %v", err)
	}
	defer l.close()
	w := &Watchdog{list: l, stop: make(chan struct{}), lined: make(map[string]struct{})}
	var reads [WatchdogCount]int
	for i := range w.procs {
		r, wr, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer wr.Close()
		reads[i] = int(r.Fd()) // Fd makes it blocking: then non-blocking again
		require.NoError(t, unix.SetNonblock(reads[i], true))
		w.procs[i] = &watchdogProc{lifeline: wr, list: i == 0}
	}
	sent := func(i int) string {
		buf := make([]byte, 4096)
		n, _ := unix.Read(reads[i], buf) // EAGAIN: nothing was sent
		return string(buf[:max(n, 0)])
	}
	w.Forget(4242)
	w.ForgetNamespace(&Cgroup{ns: &namespace{ino: 4026539999}})
	assert.Empty(t, sent(0), "the list reader")
	assert.Empty(t, sent(1), "the line reader")
	assert.Empty(t, listText(t, l))

	w.Watch(4343)
	w.Forget(4343)
	assert.Empty(t, sent(0), "the list reader found it on the list")
	assert.Equal(t, "+ 4343\n- 4343\n", sent(1), "the line reader was told of it and then told to forget it")
}
