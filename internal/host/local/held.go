package local

import (
	"os"
	"syscall"
	"time"

	"github.com/bgexec/bgexec/internal/host"
)

// Held is a wrapped command started ahead of its session by
// [Host.StartHeld]: the wrapper is set up and waits (a warm sandbox's
// stub waits on its control pipe) until a session takes it through
// [Wrap.Take], or it is discarded. Its containment is a cold start's,
// made when it started. Its methods are not safe for concurrent use: it
// has one owner at a time.
type Held struct {
	sp    *spawned
	state *os.File // the wrapper's fd 4, the session's state file
}

// StartHeld starts w's wrapper ahead of any session: without a terminal,
// in dir, with an empty environment (the session's comes with its
// command), stdin a pipe and a fresh state file as fd 4. It is contained
// exactly as [Host.StartWrapped] contains a command: in a session cgroup
// of its own with the limits, or in a process group of its own, forked
// on the spawner thread and listed with the watchdog. w.Command gets the
// configured shell's argv with an empty command, which the wrapper may
// ignore (it chooses what waits); w.Env, w.Hint and w.Take are not used.
// The caller waits for the wrapper to be ready (on [Held.Stdout]), hands
// it to one session through [Wrap.Take], or ends it with [Held.Discard].
func (h *Host) StartHeld(dir string, w *Wrap) (*Held, error) {
	state, err := stateMemfd()
	if err != nil {
		return nil, err
	}
	ls := &spawnSpec{
		path:      h.shellPath(),
		args:      []string{h.opts.Shell, "-c", ""},
		dir:       dir,
		env:       []string{},
		stdinPipe: true,
		stateFile: state,
		wrap:      w,
	}
	sp, err := h.spawn(ls)
	if err != nil {
		_ = state.Close() // Best effort: never handed out.
		return nil, err
	}
	return &Held{sp: sp, state: state}, nil
}

// Stdout is the read end of the command's stdout (the wrapper's, or its
// fd 6 with [Wrap.MoveStdio]), non-blocking (read deadlines apply), for
// the wrapper to say it is ready. The held command owns it.
func (p *Held) Stdout() *os.File {
	f, _ := p.sp.outputs[0].(*os.File)
	return f
}

// Kill sends SIGKILL to the held command's process group (and cgroup):
// for a hand-over that failed part way, before [Held.Discard].
func (p *Held) Kill() {
	_ = p.sp.child.SignalGroup(syscall.SIGKILL) // Best effort: Discard reaps what is left.
}

// discardGrace is how long Discard waits for the wrapper to exit by
// itself before it kills it.
const discardGrace = time.Second

// Discard ends a held command nobody took. Its owner has told the wrapper
// to end (a warm sandbox's stub exits when its control pipe closes);
// Discard waits up to a second for that, then kills its group, reaps it,
// releases its cgroup (one not seen empty is left to [Host.Sweep]) and
// closes its descriptors.
func (p *Held) Discard() {
	c := p.sp.child
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		_ = c.AwaitExit() // an error: the kill below and the reap tell
	}()
	t := time.NewTimer(discardGrace)
	select {
	case <-exited:
	case <-t.C:
		_ = c.SignalGroup(syscall.SIGKILL) // Best effort: Release reports what is left.
		<-exited
	}
	t.Stop()
	_ = c.SignalGroup(syscall.SIGKILL) // Best effort: whatever the namespace left.
	_, _ = c.Reap()                    // its status is nobody's
	_ = c.Release()                    // Best effort: a cgroup not seen empty is swept later
	for _, o := range p.sp.outputs {
		if f, ok := o.(*os.File); ok {
			_ = f.Close()
		}
	}
	if f, ok := p.sp.stdin.(*os.File); ok {
		_ = f.Close()
	}
	_ = p.state.Close()
}

// started hands p to the session of ls, whose command the wrapper now
// runs: the cold spawn's state file gives way to p's.
func (p *Held) started(ls *spawnSpec, hint string) *host.Started {
	sp := p.sp
	if !ls.stdinPipe {
		if f, ok := sp.stdin.(*os.File); ok {
			_ = f.Close() // the command reads /dev/null
		}
		sp.stdin = nil
	}
	st := &host.Started{Process: sp.child, Outputs: sp.outputs, Stdin: sp.stdin, Env: ls.env, Hint: hint}
	f := p.state
	if ls.stateFile == nil {
		_ = f.Close() // the command's fd 4 is closed too
		return st
	}
	_ = ls.stateFile.Close() // the cold spawn's, unused: the held one's fd 4 takes its place
	st.State = func(keep bool) ([]byte, bool) {
		defer f.Close()
		if !keep {
			return nil, false
		}
		return readState(f)
	}
	return st
}

// Pid is the wrapper's pid, the leader of its process group.
func (p *Held) Pid() int { return p.sp.child.Pid() }
