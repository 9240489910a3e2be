//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bgexec/bgexec/internal/memfd"
	"golang.org/x/sys/unix"
)

// minimalRootDirs are bound read-only under Sandbox.MinimalRoot.
var minimalRootDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"}

// mountOp is one bind or tmpfs of the sandbox's file system.
type mountOp struct {
	path string
	kind int // mountHide < mountReadOnly < mountWritable: the stronger wins on one path
}

const (
	mountHide = iota
	mountReadOnly
	mountWritable
)

// New validates sb and checks that bwrap runs here with every namespace
// and the seccomp filter, naming the check that failed. workdir is the
// configured default workdir ("" for the process's working directory);
// defaultDir says where a call without workdir runs, given it.
func New(sb Config, workdir string, defaultDir func(string) string) (*Plan, error) {
	p, err := Resolve(sb, UserHome())
	if err != nil {
		return nil, err
	}
	if workdir != "" {
		if p.workdir, err = filepath.EvalSymlinks(workdir); err != nil {
			return nil, fmt.Errorf("bgexec: Workdir %q: %w", workdir, err)
		}
	}
	p.defaultDir = defaultDir
	p.bwrap = sb.Bwrap
	if p.bwrap == "" {
		p.bwrap = "bwrap"
	}
	if p.bwrap, err = exec.LookPath(p.bwrap); err != nil {
		return nil, fmt.Errorf("bgexec: sandbox: bubblewrap not found (%v): install it (Debian: apt-get install bubblewrap) or set Sandbox.Bwrap", err)
	}
	if p.seccomp, err = seccompProgram(); err != nil {
		return nil, fmt.Errorf("bgexec: sandbox: %w", err)
	}
	if err := p.probe(); err != nil {
		return nil, fmt.Errorf("bgexec: sandbox: %w", err)
	}
	return p, nil
}

// probeEnvPath is the whole environment of a probe run: a fixed PATH of
// system directories, none of the host's variables.
const probeEnvPath = "PATH=/usr/sbin:/usr/bin:/sbin:/bin"

// probeTimeout bounds each probe run of bwrap.
const probeTimeout = 20 * time.Second

// probe checks that bwrap binds by descriptor, then runs `true` in the
// sandbox once. When that fails it runs bwrap again with one feature more
// each time, from a bare mount namespace up, so the error names the first
// that this host refuses.
func (p *Plan) probe() error {
	if err := p.probeBindFD(); err != nil {
		return err
	}
	first := p.probeFull()
	if first == nil {
		return nil
	} else if !errors.As(first, new(*exec.ExitError)) {
		return fmt.Errorf("run %s: %w", p.bwrap, first)
	}
	checks := []struct {
		name  string
		flags []string
	}{
		{"a mount namespace with the root bound read-only", []string{"--ro-bind", "/", "/"}},
		{"a user namespace", []string{"--unshare-user"}},
		{"a pid namespace with a fresh /proc", []string{"--unshare-pid", "--proc", "/proc"}},
		{"a fresh /dev and a private /tmp", []string{"--dev", "/dev", "--tmpfs", "/tmp"}},
		{"ipc and uts namespaces", []string{"--unshare-ipc", "--unshare-uts"}},
		{"a cgroup namespace", []string{"--unshare-cgroup"}},
		{"a network namespace", []string{"--unshare-net"}},
		{"--die-with-parent and --cap-drop ALL", []string{"--die-with-parent", "--cap-drop", "ALL"}},
	}
	var args []string
	for _, c := range checks {
		if c.name == "a network namespace" && p.network {
			continue
		}
		args = append(args, c.flags...)
		if err := p.probeRun(append(append([]string{p.bwrap}, args...), "--", "true"), nil); err != nil {
			return fmt.Errorf("bubblewrap (%s) cannot create %s here: %w", p.bwrap, c.name, err)
		}
	}
	// Every feature works on its own. The full sandbox failed once; when it
	// runs now, that failure was passing (seen under heavy load), and each
	// spawn reports its own failure anyway.
	err := p.probeFull()
	if err == nil {
		return nil
	}
	return fmt.Errorf("bubblewrap (%s) cannot run a command in the configured sandbox (binds, or the seccomp filter): %w", p.bwrap, err)
}

// probeBindFD checks that this bwrap has --bind-fd and --ro-bind-fd: the
// sandbox binds every directory by descriptor, so a symbolic link put in
// the place of one after it was checked cannot redirect the bind.
func (p *Plan) probeBindFD() error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.bwrap, "--help")
	cmd.Env = []string{probeEnvPath}
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("run %s --help: %w", p.bwrap, err)
	}
	if !bytes.Contains(out, []byte("--ro-bind-fd")) {
		return fmt.Errorf("bubblewrap (%s) has no --bind-fd and --ro-bind-fd, which the sandbox binds its directories with (so a symbolic link swapped in cannot redirect a bind): install bubblewrap 0.10.0 or newer (Debian 12: 0.8.0-2+deb12u1 has them)", p.bwrap)
	}
	return nil
}

// probeFull runs `true` in the configured sandbox, its paths bound by
// descriptor and its working directory "/" (not bound).
func (p *Plan) probeFull() error {
	ops := p.mounts("", false)
	binds, err := openBinds(ops)
	if err != nil {
		return err
	}
	defer func() {
		for _, f := range binds {
			_ = f.Close() // Best effort: only looked at.
		}
	}()
	return p.probeRun(append(p.argv("/", ops, 3, 3+len(binds), false), "true"), binds)
}

// probeRun runs one bwrap command line, with extra on fd 3 on, and the
// seccomp filter after them when it asks for one, and returns its
// failure with bwrap's message.
func (p *Plan) probeRun(argv []string, extra []*os.File) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Env = []string{probeEnvPath}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.ExtraFiles = extra
	if slices.Contains(argv, "--seccomp") {
		f, err := seccompFile(p.seccomp)
		if err != nil {
			return err
		}
		defer f.Close()
		cmd.ExtraFiles = append(slices.Clip(extra), f)
	}
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			msg, _, _ = strings.Cut(msg, "\n") // bwrap's message; not its usage text
			if r := []rune(msg); len(r) > 300 {
				msg = string(r[:300]) + "..."
			}
			return fmt.Errorf("%w: %s", err, msg)
		}
		return err
	}
	return nil
}

// argv is the bwrap command line up to and including "--": ops are the
// mounts (see mounts), whose binds take the descriptors from bindFD on, in
// order (see openBinds); cwd is the working directory's real path;
// seccompFD is the descriptor the filter is on. Pipe sessions get a
// session of their own (--new-session), so nothing inside can reach the
// host's controlling terminal (TIOCSTI); a PTY session keeps its own
// terminal as its controlling one, which only the session reads.
func (p *Plan) argv(cwd string, ops []mountOp, bindFD, seccompFD int, pty bool) []string {
	a := make([]string, 0, 48)
	a = append(a, p.bwrap,
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup")
	if !p.network {
		a = append(a, "--unshare-net")
	}
	a = append(a, "--die-with-parent", "--cap-drop", "ALL")
	if !pty {
		a = append(a, "--new-session")
	}
	if p.minimal {
		for _, d := range minimalRootDirs {
			a = append(a, "--ro-bind-try", d, d)
		}
	} else {
		a = append(a, "--ro-bind", "/", "/")
	}
	a = append(a, "--proc", "/proc")
	for _, d := range procReadOnly {
		a = append(a, "--ro-bind-try", d, d)
	}
	a = append(a, "--dev", "/dev", "--tmpfs", "/tmp")
	for _, op := range ops {
		switch op.kind {
		case mountHide:
			a = append(a, "--tmpfs", op.path)
		case mountReadOnly:
			a = append(a, "--ro-bind-fd", strconv.Itoa(bindFD), op.path)
			bindFD++
		case mountWritable:
			a = append(a, "--bind-fd", strconv.Itoa(bindFD), op.path)
			bindFD++
		}
	}
	return append(a, "--chdir", cwd, "--seccomp", strconv.Itoa(seccompFD), "--")
}

// procReadOnly are the files under /proc whose writes change the whole
// machine, bound read-only over the sandbox's fresh /proc. bwrap covers
// them itself only where its setup finds them writable, which a root
// host's user namespace does not (the kernel allows the later writes all
// the same, since it checks the uid, host root, and not capabilities).
// kernel.core_pattern names a program the kernel runs as root at the next
// crash; sysrq-trigger can reboot the machine. The network settings under
// /proc/sys/net stay those of the sandbox's own network namespace.
var procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}

// mounts orders the configured paths and the working directory (cwd, its
// real path; "" for none, as in the probe) by depth, parents first, so a
// path below a hidden one (or below /tmp) is bound over the tmpfs; on one
// path the strongest kind wins. The working directory is bound read-only
// when it lies in a read-only path (cwdReadOnly). Hidden paths that no
// longer exist are skipped.
func (p *Plan) mounts(cwd string, cwdReadOnly bool) []mountOp {
	kinds := make(map[string]int)
	var order []string
	add := func(path string, kind int) {
		if old, ok := kinds[path]; !ok {
			order = append(order, path)
			kinds[path] = kind
		} else if kind > old {
			kinds[path] = kind
		}
	}
	for _, h := range p.hide {
		if _, err := os.Lstat(h); err == nil {
			add(h, mountHide)
		}
	}
	for _, r := range p.readOnly {
		add(r, mountReadOnly)
	}
	for _, w := range p.writable {
		add(w, mountWritable)
	}
	switch {
	case cwd == "":
	case cwdReadOnly:
		add(cwd, mountReadOnly)
	default:
		add(cwd, mountWritable)
	}
	slices.SortStableFunc(order, func(a, b string) int {
		return strings.Count(a, "/") - strings.Count(b, "/")
	})
	ops := make([]mountOp, len(order))
	for i, path := range order {
		ops[i] = mountOp{path, kinds[path]}
	}
	return ops
}

// seccompFile returns a sealed memfd holding the filter, at offset 0,
// close-on-exec (ExtraFiles hands it to bwrap, which reads and closes it).
func seccompFile(prog []byte) (*os.File, error) {
	return memfd.Sealed("bgexec-seccomp", prog)
}

// Command returns the bwrap command that runs argv (argv[0] the shell's
// path) in dir, the working directory's real path (bound read-only when
// dirReadOnly), with a terminal when pty: after extra (the child's
// descriptors from 3 on: the script, the state file) come the
// descriptors of the directories it binds (opened without following
// links, see openBinds) and the seccomp filter. owned are the files it
// opened, which the caller closes after the start (bwrap has closed its
// copies by the time the command runs).
func (p *Plan) Command(argv []string, dir string, dirReadOnly, pty bool, extra []*os.File) (path string, args []string, files, owned []*os.File, err error) {
	path, args, files, owned, _, err = p.command(argv, dir, dirReadOnly, pty, extra, p.hook)
	return path, args, files, owned, err
}

// command is Command, calling hook at each stage; it also returns the
// mounts it binds.
func (p *Plan) command(argv []string, dir string, dirReadOnly, pty bool, extra []*os.File, hook func(string)) (path string, args []string, files, owned []*os.File, ops []mountOp, err error) {
	// bwrap would report a shell it cannot run as the command's exit
	// code 1; the same check up front makes it the spawn error it is.
	if err := unix.Access(argv[0], unix.X_OK); err != nil {
		return "", nil, nil, nil, nil, &os.PathError{Op: "fork/exec", Path: argv[0], Err: err}
	}
	hook(StageChecked)
	ops = p.mounts(dir, dirReadOnly)
	owned, err = openBinds(ops)
	if err != nil {
		return "", nil, nil, nil, nil, err
	}
	f, err := seccompFile(p.seccomp)
	if err != nil {
		for _, b := range owned {
			_ = b.Close() // Best effort: only looked at.
		}
		return "", nil, nil, nil, nil, fmt.Errorf("sandbox seccomp filter: %w", err)
	}
	owned = append(owned, f)
	hook(StageOpened)
	files = append(slices.Clip(extra), owned...)
	bindFD := 3 + len(extra)
	a := p.argv(dir, ops, bindFD, 2+len(files), pty)
	a = append(a, argv...)
	return p.bwrap, a, files, owned, ops, nil
}

// The stages of a sandboxed spawn a test hook runs at (see
// Plan.SetTestHook): after the workdir was checked, and after the
// directories to bind were opened.
const (
	StageChecked = "checked"
	StageOpened  = "opened"
)

// SetTestHook makes every later Command call h at each stage, on the
// thread that forks bwrap. For tests only; not safe to call while
// commands start.
func (p *Plan) SetTestHook(h func(stage string)) { p.testHook = h }

// hook runs the test hook, if any, at stage.
func (p *Plan) hook(stage string) {
	if p.testHook != nil {
		p.testHook(stage)
	}
}
