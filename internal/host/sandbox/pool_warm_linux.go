//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A warm sandbox is bubblewrap started ahead of time, in the default
// workdir, with every namespace, mount and the seccomp filter of a cold
// one, running a stub: a POSIX shell that says it is ready (one byte on
// the session's stdout) and then sources its control pipe (fd 3), which
// is empty until the sandbox is taken. The session's stdin, stdout and
// stderr are the stub's fds 5, 6 and 7 (local.Wrap.MoveStdio), not
// bwrap's own fds 0 to 2, which are /dev/null: bwrap's pid 1 keeps its
// own until the sandbox's namespaces are torn down, and would hold the
// session's output open that long after the command ended. Taking the
// sandbox writes one brace group to the control pipe: close it, move fds
// 5 to 7 into place (stdin from /dev/null unless the session writes to
// it), close the state file (fd 4) unless the shell's state is kept, and
// exec the command's shell with exactly the session's environment. Where
// /bin/sh is dash, whose environment is empty but for the PWD it adds
// (bwrap starts the stub with none), the group unsets PWD and exports each
// variable, and the exec needs no other program; an exec costs several
// milliseconds in a fresh user namespace under load, so this saves one.
// Elsewhere, or for a variable whose name is no shell identifier, it
// execs the shell through `env -i`. Either way the command's shell gets
// the same variables a cold sandbox gives it; their order may differ,
// which only the shell itself could see (it builds the environment of
// what it runs from its own table). Nothing runs before the group is
// complete: a pipe that ends early is a syntax error, not a part of the
// command.
//
// Each warm sandbox serves one session and ends with it: namespaces,
// /tmp, the session's cgroup (created with it) are the session's own,
// and nothing carries over from one session to the next. What it cannot
// serve starts cold: a terminal session (the terminal is chosen at the
// call), a command long enough to be handed over as a script, a workdir
// other than the default, and a call whose environment or shell path
// `env` could not pass on exactly (a NUL byte, an entry without a name,
// a shell path with "=").

// stubScript is the warm sandbox's shell script.
const stubScript = "printf . >&6; . /dev/fd/3"

// stubShell and envPaths are where the stub's shell and env(1) are looked
// for, on the host, which the sandbox shows read-only.
var (
	stubShells = []string{"/bin/sh", "/usr/bin/sh"}
	envPaths   = []string{"/usr/bin/env", "/bin/env"}
)

// Warm is one sandbox of the pool: see [Plan.NewWarm]. Its methods are
// not safe for concurrent use; the pool hands it to one owner at a time.
type Warm struct {
	plan     *Plan
	dir      string
	readOnly bool
	shell    string // the stub's shell
	dash     bool   // shell is dash: the command's environment can be exported
	env      string // env(1), "" for none

	ctlR, ctlW *os.File // the control pipe: ctlR goes to the sandbox (fd 3)

	// Set by Command, on the thread that forks bwrap: the mounts made
	// and the identity of each directory bound, as it was opened.
	ops []mountOp
	ids []fileID
}

// fileID identifies a directory: its device and inode.
type fileID struct{ dev, ino uint64 }

// NewWarm prepares a warm sandbox for the default workdir: spawn it with
// [Warm.Command] as the sandbox's command builder, with stdin a pipe and
// no terminal, and the session's state file as fd 4 (see [Warm.Exec]); wait
// for [Warm.AwaitReady]. It fails when no warm sandbox can serve this
// host's calls: no default workdir in the sandbox's paths, or no shell or
// env(1) the sandbox shows.
func (p *Plan) NewWarm() (*Warm, error) {
	root := p.defaultRoot()
	if root == "" {
		return nil, errors.New("sandbox pool: no default workdir")
	}
	real, r, msg := p.Place(root)
	if msg != "" {
		return nil, fmt.Errorf("sandbox pool: %s", msg)
	}
	w := &Warm{plan: p, dir: real, readOnly: r.readOnly}
	if w.shell = p.visibleTool(stubShells); w.shell == "" {
		return nil, errors.New("sandbox pool: no /bin/sh in the sandbox")
	}
	if real, err := filepath.EvalSymlinks(w.shell); err == nil {
		w.dash = filepath.Base(real) == "dash"
	}
	if w.env = p.visibleTool(envPaths); w.env == "" && !w.dash {
		return nil, errors.New("sandbox pool: no env(1) in the sandbox")
	}
	var err error
	if w.ctlR, w.ctlW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("sandbox pool: %w", err)
	}
	return w, nil
}

// visibleTool is the first of paths that exists, can be run and is not
// hidden in the sandbox (nor left out of a minimal root); "" for none.
func (p *Plan) visibleTool(paths []string) string {
	for _, path := range paths {
		if unix.Access(path, unix.X_OK) != nil {
			continue
		}
		if slices.ContainsFunc(p.hide, func(h string) bool { return Within(path, h) }) {
			continue
		}
		if p.minimal && !slices.ContainsFunc(minimalRootDirs, func(d string) bool { return Within(path, d) }) {
			continue
		}
		return path
	}
	return ""
}

// Dir is the working directory's real path the warm sandbox binds and
// runs in.
func (w *Warm) Dir() string { return w.dir }

// ReadOnly reports whether Dir lies in a read-only path.
func (w *Warm) ReadOnly() bool { return w.readOnly }

// Command is [Plan.Command] for the warm sandbox, which the spawn calls in
// its place: argv is ignored (the sandbox runs its stub), extra's fd 3
// (the script's place, empty) becomes the control pipe, fd 4 stays the
// state file, and fds 5 to 7 the session's stdin, stdout and stderr
// (local.Wrap.MoveStdio). The control pipe's read end is among owned, closed
// after the start. No test hook runs: a warm sandbox starts in the
// background, at no call's stage.
func (w *Warm) Command(_ []string, dir string, dirReadOnly, pty bool, extra []*os.File) (path string, args []string, files, owned []*os.File, err error) {
	if pty || dir != w.dir || dirReadOnly != w.readOnly {
		return "", nil, nil, nil, errors.New("sandbox pool: a warm sandbox runs without a terminal, in its own workdir")
	}
	extra = slices.Clone(extra)
	if len(extra) == 0 {
		extra = []*os.File{nil}
	}
	extra[0] = w.ctlR
	path, args, files, owned, ops, err := w.plan.command([]string{w.shell, "-c", stubScript}, dir, dirReadOnly, false, extra, func(string) {})
	if err != nil {
		return "", nil, nil, nil, err
	}
	w.ops = ops
	w.ids = w.ids[:0]
	for _, f := range owned[:len(owned)-1] { // the binds; the seccomp filter last
		id, err := fdID(int(f.Fd()))
		if err != nil {
			for _, o := range owned {
				_ = o.Close() // Best effort: only looked at.
			}
			return "", nil, nil, nil, err
		}
		w.ids = append(w.ids, id)
	}
	return path, args, files, append(owned, w.ctlR), nil
}

// fdID is the identity of the file open on fd.
func fdID(fd int) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileID{}, os.NewSyscallError("fstat", err)
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil //nolint:unconvert // Dev's type differs across architectures
}

// AwaitReady waits, at most timeout, for the stub's ready byte on stdout,
// the read end of the sandbox's stdout pipe (non-blocking, so a deadline
// applies). An error means the sandbox did not start: bwrap failed, or is
// too slow; discard it.
func (w *Warm) AwaitReady(stdout *os.File, timeout time.Duration) error {
	if err := stdout.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return fmt.Errorf("sandbox pool: %w", err)
	}
	var b [1]byte
	_, err := io.ReadFull(stdout, b[:])
	if derr := stdout.SetReadDeadline(time.Time{}); err == nil {
		err = derr
	}
	switch {
	case err != nil:
		return fmt.Errorf("sandbox pool: the sandbox did not start: %w", err)
	case b[0] != '.':
		return fmt.Errorf("sandbox pool: the sandbox wrote %q before it was ready", b[0])
	}
	return nil
}

// Fits says whether the warm sandbox can run a call in dir (its real path,
// read-only when dirReadOnly): [Use] when it is the sandbox's workdir and
// every mount the sandbox made is still the one a cold sandbox would make
// now, the same directories at the same paths; [Drop] when a mount
// changed (a path hidden since it started, a directory replaced); [Keep]
// for another workdir.
func (w *Warm) Fits(dir string, dirReadOnly bool) Verdict {
	if dir != w.dir || dirReadOnly != w.readOnly {
		if d := w.plan.defaultRoot(); d != "" && d != w.dir {
			return Drop // the default workdir moved: it serves nobody now
		}
		return Keep
	}
	if !slices.Equal(w.plan.mounts(dir, dirReadOnly), w.ops) {
		return Drop
	}
	i := 0
	for _, op := range w.ops {
		if op.kind == mountHide {
			continue
		}
		f, err := openRealPath(op.path)
		if err != nil {
			return Drop
		}
		id, err := fdID(int(f.Fd()))
		_ = f.Close() // Best effort: an O_PATH descriptor, only looked at.
		if err != nil || i >= len(w.ids) || id != w.ids[i] {
			return Drop
		}
		i++
	}
	return Use
}

// Passable reports whether a warm sandbox can run argv (argv[0] the
// shell's absolute path) with exactly env: `env -i` passes an entry on
// only when it has a name, and a command only when its path has no "=";
// no argument can hold a NUL byte.
func Passable(argv, env []string) bool {
	if len(argv) == 0 || strings.Contains(argv[0], "=") || unix.Access(argv[0], unix.X_OK) != nil {
		return false
	}
	for _, kv := range env {
		if i := strings.IndexByte(kv, '='); i <= 0 || strings.IndexByte(kv, 0) >= 0 {
			return false
		}
	}
	return !slices.ContainsFunc(argv, func(a string) bool { return strings.IndexByte(a, 0) >= 0 })
}

// ErrNotPassable means a warm sandbox could not pass a command's
// environment on exactly; it was not started, and is discarded.
var ErrNotPassable = errors.New("sandbox pool: the environment cannot be passed to a warm sandbox")

// allNames reports whether every entry of env is named by a shell
// identifier, which dash's export takes (any other name ends it).
func allNames(env []string) bool {
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		for i, c := range name {
			if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
				return false
			}
		}
	}
	return true
}

// execTimeout bounds the write of the command to a warm sandbox's stub.
const execTimeout = 5 * time.Second

// Exec hands the stub its command: argv (see [Passable]) with exactly
// env, stdin kept (the session writes to the sandbox's stdin pipe) or
// taken from /dev/null, fd 4 kept when keepState (the shell writes its
// state there) or closed. It closes the control pipe. An error means the
// command may not have reached the stub: kill the sandbox before anything
// else (its stub runs nothing from a partial write, see above).
func (w *Warm) Exec(argv, env []string, stdin, keepState bool) error {
	var b strings.Builder
	b.WriteString("{ exec 3<&- 1>&6 2>&7 6>&- 7>&-")
	if !keepState {
		b.WriteString(" 4>&-")
	}
	if stdin {
		b.WriteString(" 0<&5 5<&-")
	} else {
		b.WriteString(" </dev/null 5<&-")
	}
	switch {
	case w.dash && allNames(env):
		b.WriteString("; unset PWD")
		for _, kv := range env {
			b.WriteString("; export ")
			b.WriteString(quote(kv))
		}
		b.WriteString("; exec")
	case w.env != "":
		b.WriteString("; exec ")
		b.WriteString(quote(w.env))
		b.WriteString(" -i --")
		for _, kv := range env {
			b.WriteByte(' ')
			b.WriteString(quote(kv))
		}
	default:
		w.Close()
		return ErrNotPassable
	}
	for _, a := range argv {
		b.WriteByte(' ')
		b.WriteString(quote(a))
	}
	b.WriteString("\n}\n")
	err := w.ctlW.SetWriteDeadline(time.Now().Add(execTimeout))
	if err == nil {
		_, err = io.WriteString(w.ctlW, b.String())
	}
	if cerr := w.ctlW.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sandbox pool: hand the command to the sandbox: %w", err)
	}
	return nil
}

// Close closes the control pipe, if Exec did not: a stub waiting on it
// reads its end and exits, and its sandbox with it.
func (w *Warm) Close() {
	_ = w.ctlW.Close() // Best effort: closed already after Exec.
	_ = w.ctlR.Close() // Best effort: closed already after the start.
}

// quote single-quotes s for a POSIX shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
