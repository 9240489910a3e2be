package sshhost

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"golang.org/x/crypto/ssh"
)

// Host runs commands on one node of its [Pool]: a [host.Host]. Safe for
// concurrent use.
type Host struct {
	pool *Pool
	node *nodeConfig
}

// Name is "node".
func (h *Host) Name() string { return "node" }

// Start starts spec on the node. The command's environment is the login
// environment on the node with, in order: spec.Env.Carried (KEY=value
// entries set, bare KEY names unset), the Defaults whose keys the caller
// does not override, the Overrides (sorted), the Forced entries, then the
// Added ones, each replacing any entry of its key. The local environment
// is not sent: the node has its own. On error nothing runs on the node
// and every channel is closed; a connection that failed is an [*Error],
// a closed pool [ErrClosed].
func (h *Host) Start(_ context.Context, spec *host.Spec) (*host.Started, error) {
	st, rp, err := h.pool.start(h.node, spec, nodeEnv(spec.Env))
	if err != nil {
		return nil, err
	}
	if spec.Carry != nil {
		st.State = func(keep bool) ([]byte, bool) {
			if !keep {
				rp.dropState()
				return nil, false
			}
			return rp.takeState()
		}
	}
	return st, nil
}

// nodeEnv is what the wrapper applies over the node's login environment,
// in order (see Start): an entry without "=" unsets its name.
func nodeEnv(env host.Env) []string {
	out := append(append(env.Carried[:len(env.Carried):len(env.Carried)], withoutOverridden(env.Defaults, env.Overrides)...), overrideEnv(env.Overrides, env.Forced)...)
	if len(env.Added) > 0 {
		out = host.SetEnv(out, env.Added)
	}
	return out
}

// overrideEnv is the caller's per-call entries (already vetted), sorted,
// then the forced ones, which win.
func overrideEnv(overrides map[string]string, forced []string) []string {
	env := make([]string, 0, len(overrides)+len(forced))
	for k, v := range overrides {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return append(env, forced...)
}

// withoutOverridden returns defaults minus the keys overrides sets.
func withoutOverridden(defaults []string, overrides map[string]string) []string {
	out := make([]string, 0, len(defaults))
	for _, d := range defaults {
		k, _, _ := strings.Cut(d, "=")
		if _, ok := overrides[k]; !ok {
			out = append(out, d)
		}
	}
	return out
}

// defaultTERM is the terminal type asked of the node when the
// environment names none (package bgexec forces its DefaultTERM).
const defaultTERM = "xterm-256color"

// start starts spec on node nc with env set there. On error nothing runs
// there and every channel is closed.
func (p *Pool) start(nc *nodeConfig, spec *host.Spec, env []string) (st *host.Started, rp *remoteProcess, err error) {
	c, err := p.conn(nc)
	if err != nil {
		return nil, nil, err
	}
	if !c.acquire() {
		return nil, nil, fmt.Errorf("node %s already runs %d sessions (its MaxSessions); wait for one to end, or kill one", nc.name, nc.maxSessions)
	}
	defer func() {
		if err != nil {
			c.release()
		}
	}()
	tag := newNodeTag()
	cmd, unit, stateDir, err := c.commandLine(spec, env, tag)
	if err != nil {
		return nil, nil, err
	}

	ch, reqs, err := c.client.OpenChannel("session", nil)
	if err != nil {
		return nil, nil, fmt.Errorf("open a session on node %s: %w", nc.name, err)
	}
	rp = &remoteProcess{
		pool: p, conn: c, ch: ch, tag: tag, exited: make(chan struct{}), closed: make(chan struct{}),
	}
	if unit != "-" {
		rp.unit = unit
	}
	p.goroutines.Add(1)
	go func() {
		defer p.goroutines.Done()
		rp.serveRequests(reqs)
	}()
	defer func() {
		if err != nil {
			_ = ch.Close() // ends serveRequests
		}
	}()
	if err := requestExec(nc, ch, spec, env, cmd); err != nil {
		return nil, nil, err
	}
	// The wrapper's first line: on stderr, or on the terminal.
	var stream io.Reader = ch.Stderr()
	if spec.PTY {
		stream = ch
	}
	rep, rest, err := readReport(nc, ch, stream)
	if err != nil {
		return nil, nil, err
	}
	rp.pid = rep.pid
	if spec.Carry != nil && validStatePath(rep.statePath, tag) {
		rp.statePath = rep.statePath
	}
	c.track(rp)
	return started(nc, spec, rp, rep, stateDir, rest), rp, nil
}

// requestExec asks the node for a terminal, when spec wants one, and to
// run cmd on channel ch.
func requestExec(nc *nodeConfig, ch ssh.Channel, spec *host.Spec, env []string, cmd string) error {
	if spec.PTY {
		req := struct {
			Term                   string
			Cols, Rows, Width, Hgt uint32
			Modes                  string
		}{termOf(env), uint32(spec.Cols), uint32(spec.Rows), uint32(spec.Cols) * 8, uint32(spec.Rows) * 16, "\x00"}
		if ok, err := ch.SendRequest("pty-req", true, ssh.Marshal(&req)); err != nil || !ok {
			return fmt.Errorf("node %s refused a terminal (pty-req): %v", nc.name, err)
		}
	}
	if ok, err := ch.SendRequest("exec", true, ssh.Marshal(&struct{ Command string }{cmd})); err != nil || !ok {
		return fmt.Errorf("node %s refused to run the command (exec request): %v", nc.name, err)
	}
	return nil
}

// started is what the session gets of rp, which the wrapper reported
// started (rep): its input, its outputs (rest is the stream the report
// was read from, after the report) and the warnings about its workdir.
func started(nc *nodeConfig, spec *host.Spec, rp *remoteProcess, rep startReport, stateDir string, rest io.Reader) *host.Started {
	ch := rp.ch
	st := &host.Started{Process: rp, Stdin: newChanStdin(ch, rp.pool.goroutines), Cwd: rep.cwd}
	switch rep.fallback {
	case "1":
		st.Warnings = append(st.Warnings, `Warning: the default workdir "`+nc.workdir+`" is unavailable on node `+nc.name+`; using "`+rep.cwd+`".`)
	case "2":
		st.Warnings = append(st.Warnings, `Warning: workdir "`+spec.Dir+`" is unavailable on node `+nc.name+`; using "`+rep.cwd+`".`)
	case "3":
		st.Warnings = append(st.Warnings, `Warning: workdir "`+stateDir+`" (left by the previous exec) is unavailable on node `+nc.name+`; using "`+rep.cwd+`".`)
	}
	if spec.PTY {
		st.Outputs = []io.Reader{chanReader{rest, ch}}
	} else {
		st.Outputs = []io.Reader{chanReader{ch, ch}, chanReader{rest, ch}}
		if !spec.StdinPipe {
			_ = ch.CloseWrite() // the command reads EOF; an error shows as its end
			st.Stdin = nil
		}
	}
	return st
}

// commandLine is the exec request's command of the session tagged tag on
// c's node, with env set there: the wrapper's line (a long command is
// uploaded first), the transient systemd unit it runs in ("-" for none)
// and the kept workdir it was given ("" for none).
func (c *nodeConn) commandLine(spec *host.Spec, env []string, tag string) (cmd, unit, stateDir string, err error) {
	nc := c.node
	mode, body, stateTag := "c", spec.Command, "-"
	if spec.Carry != nil {
		body, stateTag, stateDir = StatePrologue(tag)+body, tag, spec.Carry.Cwd
	}
	if len(encodeNodeArg(body)) > maxInlineNodeCommand {
		path, err := c.upload(scriptPrefix + body)
		if err != nil {
			return "", "", "", err
		}
		mode, body = "f", path
	}
	unit = "-"
	if c.scopeWorks() {
		unit = "bgexec-" + tag
	}
	env = append(env[:len(env):len(env)], nodeTagKey+"="+tag)
	return nodeCommand(nc.shell, nc.workdir, stateDir, spec.Dir, body, mode, unit, stateTag, env), unit, stateDir, nil
}

// termOf is the terminal type env sets, or defaultTERM.
func termOf(env []string) string {
	term := defaultTERM
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "TERM="); ok {
			term = v
		}
	}
	return term
}

// startReport is what the wrapper's first line says.
type startReport struct {
	pid       int    // the shell's, also its process group's
	fallback  string // "0"; or which workdir was unavailable: "1" default, "2" asked, "3" kept
	statePath string // the state file, "-" for none
	cwd       string // where the shell starts
}

// readReport reads the wrapper's report from stream, within the node's
// DialTimeout (after which ch is closed). rest is the stream from there
// on, the lines before the report (a login script's, or the server's
// own) first: they are output.
func readReport(nc *nodeConfig, ch ssh.Channel, stream io.Reader) (rep startReport, rest io.Reader, err error) {
	br := bufio.NewReaderSize(stream, 4096)
	timedOut := false
	var tmu sync.Mutex
	t := time.AfterFunc(nc.dialTimeout, func() {
		tmu.Lock()
		timedOut = true
		tmu.Unlock()
		_ = ch.Close()
	})
	var pre strings.Builder
	var line string
	for {
		var rerr error
		line, rerr = br.ReadString('\n')
		if rerr != nil || strings.HasPrefix(line, nodeHeader) || pre.Len()+len(line) > maxNodePreamble {
			break
		}
		pre.WriteString(line)
	}
	t.Stop()
	tmu.Lock()
	late := timedOut
	tmu.Unlock()
	line = strings.TrimRight(line, "\r\n")
	if late {
		return rep, nil, fmt.Errorf("node %s did not start the command within %s", nc.name, nc.dialTimeout)
	}
	if !strings.HasPrefix(line, nodeHeader) {
		said := strings.TrimSpace(pre.String() + line)
		return rep, nil, fmt.Errorf("node %s did not start the command: %q", nc.name, host.MiddleTruncate(said, 300))
	}
	f := strings.SplitN(strings.TrimPrefix(line, nodeHeader), " ", 5)
	if len(f) != 5 {
		return rep, nil, fmt.Errorf("node %s sent a malformed start report %q", nc.name, line)
	}
	pid, err1 := strconv.Atoi(f[0])
	pgid, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || pid <= 1 {
		return rep, nil, fmt.Errorf("node %s sent a malformed start report %q", nc.name, line)
	}
	if pgid != pid {
		return rep, nil, fmt.Errorf("on node %s the command's shell is not a process group leader (pid %d, group %d); bgexec needs an SSH server that starts each command in a session of its own, as OpenSSH does", nc.name, pid, pgid)
	}
	rest = br
	if pre.Len() > 0 {
		rest = io.MultiReader(strings.NewReader(pre.String()), br)
	}
	return startReport{pid: pid, fallback: f[2], statePath: f[3], cwd: f[4]}, rest, nil
}
