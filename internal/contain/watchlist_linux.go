//go:build linux

package contain

import (
	"errors"
	"os"
	"strconv"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchList is the list of process groups and cgroup namespaces the
// watchdog processes kill when the host dies, kept in memory they share
// with the host instead of sent to them line by line: listing a session
// then costs a few stores, and no watchdog wakes up for it. The watchdogs
// read the list only when their lifeline ends.
//
// It is a memfd of fixed-size text records, one per line, that the host
// writes only through its own shared mapping. The file is sealed against
// every other write (F_SEAL_FUTURE_WRITE, Linux 5.1, and against resizing):
// sessions run as the host's user and could open it again through
// /proc/<watchdog>/fd, but not change it, so no session can take itself
// off the list. Nor can one map it writable before it is sealed: it is made
// readable by its owner alone (0400) right after its creation, so a
// process of the host's user (without CAP_DAC_OVERRIDE) that opens the
// host's descriptor again through /proc in the moment before the seal
// gets a read-only description; what is left is the moment between
// memfd_create and that fchmod, two system calls apart. A process allowed
// to ptrace the host can do anything with it, as with the lifeline. A
// record is
//
//	"+   <pgid>"  a listed process group,
//	"+n  <inode>" a listed cgroup namespace,
//	"#   ..."     a free slot (never read as an order),
//	".   ..."     the end of the records in use,
//
// padded with spaces to listRecord bytes, the last a newline. Its first
// four bytes are stored last, in one atomic store, so a host killed in the
// middle of a change leaves each record either as it was or as it is to
// be. Slots are used from the start of the file; a freed slot is reused,
// so the records in use stay as many as the most entries listed at once.
//
// Its methods are not safe for concurrent use: the Watchdog's lock guards
// them.
type watchList struct {
	f      *os.File       // the memfd, close-on-exec
	reopen string         // where a watchdog's description is opened: /proc/self/fd/<f>
	mem    []byte         // the host's shared, writable mapping of all of f
	slots  map[string]int // the listed entries ("+ 123", "+n 456") and their slots
	free   []int          // freed slots, reused before the end moves
	end    int            // the slot holding the end mark
}

const (
	// listRecord is the size of one record, in bytes: four for the order,
	// up to 20 digits, spaces, a newline.
	listRecord = 32
	// listSlots is how many records the file holds: 1 MiB of address space,
	// of which only the pages records were written to take memory. Past
	// that, entries go to the watchdogs as lines (see Watchdog.send).
	listSlots = 32768
)

// newWatchList creates the sealed list, or reports why it cannot (memfd or
// the future-write seal are not available): the watchdogs are then sent
// lines.
func newWatchList(slots int) (*watchList, error) {
	fd, err := unix.MemfdCreate("bgexec-watchlist", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	f := os.NewFile(uintptr(fd), "bgexec-watchlist")
	size := slots * listRecord
	fail := func(op string, err error) (*watchList, error) {
		_ = f.Close()
		return nil, os.NewSyscallError(op, err)
	}
	if err := unix.Fchmod(fd, 0o400); err != nil {
		return fail("fchmod", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return fail("ftruncate", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail("mmap", err)
	}
	// A child forked without exec (not os/exec's way) would otherwise
	// share the writable mapping.
	_ = unix.Madvise(mem, unix.MADV_DONTFORK) // Best effort.
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_FUTURE_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		_ = unix.Munmap(mem)
		return fail("fcntl", err)
	}
	l := &watchList{f: f, reopen: "/proc/self/fd/" + strconv.Itoa(fd), mem: mem, slots: make(map[string]int)}
	// Each watchdog reads a description of its own, opened through /proc.
	r, err := l.reader()
	if err != nil {
		l.close()
		return nil, err
	}
	_ = r.Close() // read-only
	l.fill(0, '.')
	return l, nil
}

// record is slot i's bytes.
func (l *watchList) record(i int) []byte { return l.mem[i*listRecord : (i+1)*listRecord] }

// setOrder stores a record's four-byte order in one atomic store.
func (l *watchList) setOrder(i int, order string) {
	var w [4]byte
	copy(w[:], "    ")
	copy(w[:], order)
	p := (*uint32)(unsafe.Pointer(&l.mem[i*listRecord]))
	atomic.StoreUint32(p, *(*uint32)(unsafe.Pointer(&w)))
}

// fill makes slot i a record with no value and order mark ('.' or '#').
func (l *watchList) fill(i int, mark byte) {
	r := l.record(i)
	for j := 4; j < listRecord-1; j++ {
		r[j] = ' '
	}
	r[listRecord-1] = '\n'
	l.setOrder(i, string(mark))
}

// add lists entry (op "+" or "+n", and its number); false when the list
// is full.
func (l *watchList) add(op, value string) bool {
	key := op + " " + value
	if _, ok := l.slots[key]; ok {
		return true
	}
	var i int
	if n := len(l.free); n > 0 {
		i = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		if l.end+1 >= len(l.mem)/listRecord {
			return false
		}
		i = l.end
		// The end moves on first: until slot i's order is stored, the
		// watchdogs would read it as the end, and after, the next one.
		l.fill(i+1, '.')
		l.end = i + 1
	}
	r := l.record(i)
	n := copy(r[4:listRecord-1], value)
	for j := 4 + n; j < listRecord-1; j++ {
		r[j] = ' '
	}
	r[listRecord-1] = '\n'
	l.setOrder(i, op)
	l.slots[key] = i
	return true
}

// remove unlists entry; false when it was not listed here.
func (l *watchList) remove(op, value string) bool {
	key := op + " " + value
	i, ok := l.slots[key]
	if !ok {
		return false
	}
	delete(l.slots, key)
	l.setOrder(i, "#")
	l.free = append(l.free, i)
	return true
}

// empty reports whether nothing is listed.
func (l *watchList) empty() bool { return len(l.slots) == 0 }

// reader opens the list anew, read-only and at its start, for one
// watchdog process: a description of its own, whose offset no other
// process moves. A process of the host's user may have changed the file's
// mode (no seal stops a chmod) to keep a restarted watchdog from reading
// it: the host, its owner, makes it 0400 again and tries once more. When
// that fails too, the watchdog gets lines instead (see Watchdog).
func (l *watchList) reader() (*os.File, error) {
	f, err := os.Open(l.reopen)
	if errors.Is(err, os.ErrPermission) {
		if cerr := unix.Fchmod(int(l.f.Fd()), 0o400); cerr == nil {
			f, err = os.Open(l.reopen)
		}
	}
	return f, err
}

// close unmaps and closes the list; the watchdogs keep their own
// descriptors.
func (l *watchList) close() {
	_ = unix.Munmap(l.mem)
	_ = l.f.Close()
}
