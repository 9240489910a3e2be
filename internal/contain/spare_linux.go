//go:build linux

package contain

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A spare is an emptied session cgroup, or set of cgroup v1 session
// directories, kept for the next session. Nothing runs in it until then,
// so what that session needs at its start (where its counters start, the
// descriptors it forks and reads through, a reset peak) is prepared just
// after the last session's end was reported, off the path that reports
// it, and handed to the next session as it starts. Either may come first:
// a session that takes a spare not prepared yet sets it up itself, as
// before a spare had ever been prepared, and what is prepared for a spare
// already taken is closed. A prepared spare holds a few descriptors
// (there are MaxSpares of each kind at most), which a host process short
// of descriptors takes back (Root.ShedPrepared, Limiter.ShedPrepared):
// a spare is a cache, and a session comes first. A session closes what it
// took once it no longer needs it: the directory's after the clone, the
// tasks files' after the fork. It keeps the memory counters', the peak
// (as every session does) and, from a prepared spare, the OOM counter,
// which its end then reads without opening it.

// spareCgroup is an emptied session cgroup kept for reuse.
type spareCgroup struct {
	dir  string
	prep prepared[*cgroupPrep]
}

// prepared holds what a spare prepared for its next session until that
// session takes it; once the spare is taken (or dropped with the
// registry) whatever is offered is closed.
type prepared[P interface{ close() }] struct {
	mu    sync.Mutex
	taken bool
	p     P
	ok    bool // p was offered and not taken yet
}

// offer keeps p for the session that takes the spare, or closes it when
// that session came first.
func (h *prepared[P]) offer(p P) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.taken {
		p.close()
		return
	}
	h.p, h.ok = p, true
}

// take hands over what was offered (ok false when nothing was); anything
// offered later is closed.
func (h *prepared[P]) take() (p P, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.taken = true
	p, ok = h.p, h.ok
	var zero P
	h.p, h.ok = zero, false
	return p, ok
}

// drop closes what was offered, and anything offered later, for a spare
// nobody will take or whose descriptors the host needs back; it reports
// whether something was offered.
func (h *prepared[P]) drop() bool {
	p, ok := h.take()
	if ok {
		p.close()
	}
	return ok
}

// shedPrepared drops what each spare in *spares (guarded by mu)
// prepared and returns how many had something prepared (see
// Root.ShedPrepared). The descriptors are closed outside mu: each spare's
// own lock orders a shed with a session taking it.
func shedPrepared[S interface{ dropPrepared() bool }](mu *sync.Mutex, spares *[]S) int {
	mu.Lock()
	list := slices.Clone(*spares)
	mu.Unlock()
	n := 0
	for _, sp := range list {
		if sp.dropPrepared() {
			n++
		}
	}
	return n
}

func (sp *spareCgroup) dropPrepared() bool { return sp.prep.drop() }

func (set *v1Spare) dropPrepared() bool { return set.prep.drop() }

// cgroupPrep is what a v2 spare prepares for its next session.
type cgroupPrep struct {
	cpuUsec int64 // cpu.stat usage_usec; -1 unknown
	dirFD   int   // O_DIRECTORY descriptor for clone3; -1 none
	mem     memoryFiles
}

// v1Spare is an emptied set of v1 session directories kept for reuse.
type v1Spare struct {
	dirs []string
	prep prepared[*v1Prep]
}

// v1Prep is what a v1 spare prepares for its next session.
type v1Prep struct {
	tasks []int // O_WRONLY descriptors of each directory's tasks file, in order; nil unless all opened
	mem   memoryFiles
}

// memoryFiles are a session's memory counters, opened for it: the peak,
// reset for the session, and the file whose oom_kill counts the OOM
// killer's kills, with the count at the session's start. A file that
// could not be opened (or reset) is nil; the count is -1 when unknown.
type memoryFiles struct {
	peak    *os.File
	oom     *os.File
	oomKill int64
}

func noMemoryFiles() memoryFiles { return memoryFiles{oomKill: -1} }

// openMemoryFiles opens and resets the peak (writing reset) and opens the
// OOM counter, reading where it stands.
func openMemoryFiles(peakPath, reset, oomPath string) memoryFiles {
	m := memoryFiles{peak: openPeak(peakPath, reset), oomKill: -1}
	if f, err := os.Open(oomPath); err == nil {
		m.oom = f
		m.oomKill = readKeyFile(f, "oom_kill")
	}
	return m
}

// openPeak opens a peak memory counter and resets it (memory.peak, whose
// view Linux 6.12 resets per descriptor, with "reset"; v1's
// memory.max_usage_in_bytes, for everyone, with "0"); nil when either
// fails.
func openPeak(path, reset string) *os.File {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	if _, err := f.WriteString(reset); err != nil {
		_ = f.Close() // Best effort: opened for this session only.
		return nil
	}
	return f
}

// close closes the files. It leaves the fields set, so a reader that
// raced with it gets os.ErrClosed from the file rather than a data race
// on the field; closing twice is harmless.
func (m *memoryFiles) close() {
	for _, f := range []*os.File{m.peak, m.oom} {
		if f != nil {
			_ = f.Close() // read only
		}
	}
}

// oomKills reads the OOM killer's count through the open file, or at
// path when there is none; -1 when it cannot.
func (m *memoryFiles) oomKills(path string) int64 {
	if m.oom != nil {
		if n := readKeyFile(m.oom, "oom_kill"); n >= 0 {
			return n
		}
	}
	return ReadKey(path, "oom_kill")
}

func newSpareCgroup(dir string) *spareCgroup { return &spareCgroup{dir: dir} }

// prepare opens and reads what the next session in sp needs.
func (sp *spareCgroup) prepare(v2Memory bool) {
	p := &cgroupPrep{cpuUsec: ReadKey(filepath.Join(sp.dir, "cpu.stat"), "usage_usec"), dirFD: -1, mem: noMemoryFiles()}
	if fd, err := unix.Open(sp.dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		p.dirFD = fd
	}
	if v2Memory {
		p.mem = openMemoryFiles(filepath.Join(sp.dir, "memory.peak"), "reset\n", filepath.Join(sp.dir, "memory.events"))
	}
	sp.prep.offer(p)
}

func (p *cgroupPrep) close() {
	if p.dirFD >= 0 {
		_ = unix.Close(p.dirFD)
		p.dirFD = -1
	}
	p.mem.close()
}

// prepare opens what the next session in set needs: each directory's
// tasks file, and, when memDir is set (the set's memory directory), the
// memory counters.
func (set *v1Spare) prepare(memDir string) {
	p := &v1Prep{mem: noMemoryFiles()}
	for _, dir := range set.dirs {
		fd, err := unix.Open(filepath.Join(dir, "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			closeAll(p.tasks)
			p.tasks = nil
			break
		}
		p.tasks = append(p.tasks, fd)
	}
	if memDir != "" {
		p.mem = openMemoryFiles(filepath.Join(memDir, "memory.max_usage_in_bytes"), "0\n", filepath.Join(memDir, "memory.oom_control"))
	}
	set.prep.offer(p)
}

func (p *v1Prep) close() {
	closeAll(p.tasks)
	p.tasks = nil
	p.mem.close()
}

func closeAll(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// readKeyFile reads the value of "key N" from a flat-keyed cgroup file
// open in f, from its start; -1 when it cannot.
func readKeyFile(f *os.File, key string) int64 {
	var b [512]byte
	n, err := f.ReadAt(b[:], 0)
	if n == 0 && err != nil {
		return -1
	}
	return parseKey(b[:n], key)
}

// parseKey finds "key N" among the lines of b; -1 when it is not there.
func parseKey(b []byte, key string) int64 {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}
