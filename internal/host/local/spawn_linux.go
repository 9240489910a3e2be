//go:build linux

package local

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/memfd"
	"golang.org/x/sys/unix"
)

// outputPipe returns a pipe for a child's output. Only the read end, which
// bgexec keeps, is non-blocking in the runtime poller; the write end goes to
// the child and would only be registered with the poller to leave it again
// when closed after the start.
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		_ = unix.Close(p[0])
		_ = unix.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

// scriptFile returns a sealed memfd holding script, close-on-exec: only
// the child's fd 3, which exec.Cmd.ExtraFiles sets up by dup2, survives
// the exec. The seals keep the script the shell reads the one that was
// checked: nobody, the child included, can change it through /proc.
func scriptFile(script string) (*os.File, error) {
	return memfd.Sealed("bgexec-script", []byte(script))
}

// startChild spawns spec. On error nothing is left running and every
// descriptor is closed.
func startChild(spec *spawnSpec) (sp *spawned, err error) {
	cmd := &exec.Cmd{Path: spec.path, Args: spec.args, Dir: spec.dir, Env: spec.env}
	var fl spawnFiles
	defer func() { fl.done(err != nil) }()
	sp = &spawned{}
	if err := fl.stdio(cmd, spec, sp); err != nil {
		return nil, err
	}
	if spec.pdeathsig {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if spec.cgroup != nil {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = spec.cgroup.FD()
		if spec.wrap == nil && spec.cgroup.UnshareNamespace() {
			// After the clone into the session's cgroup: the namespace's
			// root is that cgroup (and, on v1, the thread's session dirs).
			cmd.SysProcAttr.Unshareflags = unix.CLONE_NEWCGROUP
		}
	}
	if err := fl.extras(cmd, spec); err != nil {
		return nil, err
	}
	contain.CloseOnExecAbove2()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &osChild{peak: -1, leader: cmd.Process.Pid, cmd: cmd, cg: spec.cgroup, wrapped: spec.wrap != nil}
	pidfd := -1
	if fd, err := unix.PidfdOpen(c.leader, unix.PIDFD_NONBLOCK); err == nil {
		pidfd = fd
		c.pidfd = os.NewFile(uintptr(fd), "pidfd")
		// os.Process keeps a pidfd of its own until Wait. Ours is enough
		// (reap uses wait4), so an idle session holds one, not two.
		_ = cmd.Process.Release()
	}
	if cmd.SysProcAttr.Unshareflags&unix.CLONE_NEWCGROUP != 0 {
		spec.cgroup.OpenNamespace(c.leader, pidfd)
	}
	sp.child = c
	return sp, nil
}

// spawnFiles are the descriptors a spawn opens: the child's ends, closed
// once it started, and ours, closed too when the spawn fails.
type spawnFiles struct {
	afterStart, onError []*os.File
}

// done closes the child's ends, and ours when the spawn failed.
func (fl *spawnFiles) done(failed bool) {
	for _, f := range fl.afterStart {
		_ = f.Close()
	}
	if failed {
		for _, f := range fl.onError {
			_ = f.Close()
		}
	}
}

// stdio gives the child its terminal (a new session with it as the
// controlling terminal) or its pipes (a process group of its own), and sp
// the ends the session reads and writes.
func (fl *spawnFiles) stdio(cmd *exec.Cmd, spec *spawnSpec, sp *spawned) error {
	if spec.pty {
		master, tty, err := openPTY(spec.cols, spec.rows)
		if err != nil {
			return fmt.Errorf("open pty: %w", err)
		}
		fl.afterStart = append(fl.afterStart, tty)
		fl.onError = append(fl.onError, master)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		sp.ttyName = tty.Name()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		sp.outputs = []io.Reader{master}
		sp.stdin = master
		return nil
	}
	var ends []*os.File
	for range 2 {
		r, w, err := outputPipe()
		if err != nil {
			return err
		}
		fl.afterStart = append(fl.afterStart, w)
		fl.onError = append(fl.onError, r)
		sp.outputs = append(sp.outputs, r)
		ends = append(ends, w)
	}
	// The child's ends are the write ends.
	cmd.Stdout, cmd.Stderr = ends[0], ends[1]
	if spec.stdinPipe {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		fl.afterStart = append(fl.afterStart, r)
		fl.onError = append(fl.onError, w)
		cmd.Stdin = r
		sp.stdin = w
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return nil
}

// extras hands the child its script (fd 3) and shell-state file (fd 4),
// and hands the command to its wrapper for a wrapped spawn (with its
// stdin, stdout and stderr as fds 5 to 7 when the wrapper moves them).
func (fl *spawnFiles) extras(cmd *exec.Cmd, spec *spawnSpec) error {
	if spec.script != "" {
		f, err := scriptFile(spec.script)
		if err != nil {
			return fmt.Errorf("pass the command to the shell: %w", err)
		}
		fl.afterStart = append(fl.afterStart, f)
		cmd.ExtraFiles = []*os.File{f} // the child's fd 3
	}
	if spec.stateFile != nil {
		// The child's fd 4; fd 3 stays closed without a script.
		files := []*os.File{nil, spec.stateFile}
		if len(cmd.ExtraFiles) > 0 {
			files[0] = cmd.ExtraFiles[0]
		}
		cmd.ExtraFiles = files
	}
	if spec.wrap != nil && spec.wrap.MoveStdio && !spec.pty {
		files := make([]*os.File, 2, 5)
		copy(files, cmd.ExtraFiles)
		in, _ := cmd.Stdin.(*os.File) // nil without a stdin pipe: fd 5 stays closed
		out, _ := cmd.Stdout.(*os.File)
		errOut, _ := cmd.Stderr.(*os.File)
		cmd.ExtraFiles = append(files, in, out, errOut)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil // the wrapper's own: /dev/null
	}
	if spec.wrap != nil {
		argv := append([]string{spec.path}, spec.args[1:]...)
		path, args, files, owned, err := spec.wrap.Command(argv, spec.pty, cmd.ExtraFiles)
		if err != nil {
			return err
		}
		fl.afterStart = append(fl.afterStart, owned...)
		cmd.Path, cmd.Args, cmd.ExtraFiles = path, args, files
	}
	return nil
}
