package bgexec

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bgexec/bgexec/internal/session"
	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"
)

// nodeTagKey is the environment entry that marks every process of a
// remote session, so no signal, alive check or kill after a lost
// connection reaches a process that merely got the same pid or group id
// (see oursScript).
const nodeTagKey = "BGEXEC_SESSION"

// maxInlineNodeCommand is the longest encoded command sent inside the
// SSH exec request. OpenSSH takes packets up to 256 KiB; a longer command
// is uploaded to a private temporary file over a channel of its own and
// read by the shell from a descriptor, as on this machine.
const maxInlineNodeCommand = 32 << 10

// nodeWrapper is the sh script each remote session runs in: it decodes
// its arguments (shell, default, kept and requested workdir, command,
// mode, systemd unit, shell-state tag, environment), reports its pid,
// process group, workdir fallback, state file and working directory on
// the first line of stderr, and execs the shell, so the shell keeps the
// pid the SSH server made a session (and process group) leader. An
// environment argument without "=" is a name to unset (a kept shell
// state's unset). With a state tag other than "-", it opens a private
// temporary file named after the tag as fd 4 and writes the environment
// the shell starts with there (see nodeStatePrologue); the tools it runs
// for that are found with command -p, not on a kept PATH. It is one line
// without single quotes, backslash pairs or "!", so any login shell (sh,
// bash, zsh, fish, csh) passes it on unchanged.
const nodeWrapper = `d() { v=$(printf %bx "$1"); v=${v%x}; }; ` +
	`d "$1"; s=$v; [ -n "$s" ] || s=${SHELL:-sh}; case $s in *fish) s=sh;; esac; w=0; ` +
	`d "$2"; if [ -n "$v" ]; then cd -- "$v" 2>/dev/null || w=1; fi; ` +
	`d "$4"; r=$v; d "$3"; if [ -n "$v" ]; then cd -- "$v" 2>/dev/null || { [ -n "$r" ] || w=3; }; fi; ` +
	`if [ -n "$r" ]; then cd -- "$r" 2>/dev/null || w=2; fi; ` +
	`d "$5"; c=$v; m=$6; u=$7; k=$8; shift 8; for a in "$@"; do d "$a"; case $v in *=*) export "$v";; *) unset -v "$v" 2>/dev/null;; esac; done; ` +
	`f=-; if [ "$k" != - ]; then f=$(command -p mktemp "${TMPDIR:-/tmp}/bgexec-state-$k.XXXXXX" 2>/dev/null) || f=-; ` +
	`if [ "$f" != - ] && [ -n "$(printf %s "$f" | command -p tr -d A-Za-z0-9/._-)" ]; then command -p rm -f -- "$f"; f=-; fi; ` +
	`if [ "$f" != - ]; then exec 4>"$f"; { printf "\000bgexec-start\000"; command -p env -0; printf "\000bgexec-started\000"; } >&4 2>/dev/null; fi; fi; ` +
	`read -r _ _ _ _ g _ </proc/$$/stat 2>/dev/null || g=$$; ` +
	`printf "\037bgexec1 %s %s %s %s %s\n" "$$" "$g" "$w" "$f" "$(pwd)" >&2; ` +
	`if [ "$m" = f ]; then exec 3<"$c" || exit 126; rm -f -- "$c"; c=". /dev/fd/3"; fi; ` +
	`if [ "$u" != - ]; then exec systemd-run --user --scope --quiet --collect --unit="$u" -- "$s" -c "$c"; fi; ` +
	`exec "$s" -c "$c"`

// maxNodePreamble bounds the output taken before the wrapper's report.
const maxNodePreamble = 16 << 10

// nodeHeader starts the wrapper's report line.
const nodeHeader = "\x1fbgexec1 "

// encodeNodeArg quotes s as one shell word that the wrapper's d decodes:
// plain characters stay, every other byte becomes a printf %b octal escape.
func encodeNodeArg(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte(" _.,/:=+@%-", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\0%03o`, c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// nodeCommand is the exec request's command line. stateTag is "-" when
// no shell state is kept.
func nodeCommand(shell, defDir, stateDir, dir, cmd, mode, unit, stateTag string, env []string) string {
	var b strings.Builder
	b.WriteString("exec /bin/sh -c '" + nodeWrapper + "' bgexec")
	for _, a := range []string{shell, defDir, stateDir, dir, cmd} {
		b.WriteString(" " + encodeNodeArg(a))
	}
	b.WriteString(" " + mode + " " + unit + " " + stateTag)
	for _, e := range env {
		b.WriteString(" " + encodeNodeArg(e))
	}
	return b.String()
}

func newNodeTag() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// spawnNode starts spec on its node. On error nothing runs there and
// every channel is closed.
func (p *nodePool) spawnNode(spec *spawnSpec) (sp *spawned, err error) {
	nc := spec.node
	c, err := p.conn(nc)
	if err != nil {
		return nil, err
	}
	if !c.acquire() {
		return nil, fmt.Errorf("node %s already runs %d sessions (its MaxSessions); wait for one to end, or kill one", nc.name, nc.maxSessions)
	}
	defer func() {
		if err != nil {
			c.release()
		}
	}()
	tag := newNodeTag()
	mode, body, stateTag := "c", spec.command, "-"
	if spec.nodeKeep {
		body, stateTag = nodeStatePrologue(tag)+body, tag
	}
	if len(encodeNodeArg(body)) > maxInlineNodeCommand {
		path, err := c.upload(scriptPrefix + body)
		if err != nil {
			return nil, err
		}
		mode, body = "f", path
	}
	unit := "-"
	if c.scopeWorks() {
		unit = "bgexec-" + tag
	}
	env := append(append([]string(nil), spec.nodeEnv...), nodeTagKey+"="+tag)
	cmd := nodeCommand(nc.shell, nc.workdir, spec.nodeStateDir, spec.nodeDir, body, mode, unit, stateTag, env)

	ch, reqs, err := c.client.OpenChannel("session", nil)
	if err != nil {
		return nil, fmt.Errorf("open a session on node %s: %w", nc.name, err)
	}
	rp := &remoteProcess{
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
	if spec.pty {
		term := DefaultTERM
		for _, e := range spec.nodeEnv {
			if v, ok := strings.CutPrefix(e, "TERM="); ok {
				term = v
			}
		}
		req := struct {
			Term                   string
			Cols, Rows, Width, Hgt uint32
			Modes                  string
		}{term, uint32(spec.cols), uint32(spec.rows), uint32(spec.cols) * 8, uint32(spec.rows) * 16, "\x00"}
		if ok, err := ch.SendRequest("pty-req", true, ssh.Marshal(&req)); err != nil || !ok {
			return nil, fmt.Errorf("node %s refused a terminal (pty-req): %v", nc.name, err)
		}
	}
	if ok, err := ch.SendRequest("exec", true, ssh.Marshal(&struct{ Command string }{cmd})); err != nil || !ok {
		return nil, fmt.Errorf("node %s refused to run the command (exec request): %v", nc.name, err)
	}
	// The wrapper's first line: on stderr, or on the terminal.
	var stream io.Reader = ch.Stderr()
	if spec.pty {
		stream = ch
	}
	br := bufio.NewReaderSize(stream, 4096)
	timedOut := false
	var tmu sync.Mutex
	t := time.AfterFunc(nc.dialTimeout, func() {
		tmu.Lock()
		timedOut = true
		tmu.Unlock()
		_ = ch.Close()
	})
	// Lines before it (a login script's, or the server's own) are output.
	var pre strings.Builder
	var line string
	var rerr error
	for {
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
		return nil, fmt.Errorf("node %s did not start the command within %s", nc.name, nc.dialTimeout)
	}
	if !strings.HasPrefix(line, nodeHeader) {
		said := strings.TrimSpace(pre.String() + line)
		return nil, fmt.Errorf("node %s did not start the command: %q", nc.name, middleTruncate(said, 300))
	}
	f := strings.SplitN(strings.TrimPrefix(line, nodeHeader), " ", 5)
	if len(f) != 5 {
		return nil, fmt.Errorf("node %s sent a malformed start report %q", nc.name, line)
	}
	pid, err1 := strconv.Atoi(f[0])
	pgid, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || pid <= 1 {
		return nil, fmt.Errorf("node %s sent a malformed start report %q", nc.name, line)
	}
	if pgid != pid {
		return nil, fmt.Errorf("on node %s the command's shell is not a process group leader (pid %d, group %d); bgexec needs an SSH server that starts each command in a session of its own, as OpenSSH does", nc.name, pid, pgid)
	}
	rp.pid = pid
	if spec.nodeKeep && validStatePath(f[3], tag) {
		rp.statePath = f[3]
	}
	c.track(rp)
	cwd := f[4]
	sp = &spawned{child: rp, stdin: newChanStdin(ch, p.goroutines), cwd: cwd}
	switch f[2] {
	case "1":
		sp.warnings = append(sp.warnings, `Warning: the default workdir "`+nc.workdir+`" is unavailable on node `+nc.name+`; using "`+cwd+`".`)
	case "2":
		sp.warnings = append(sp.warnings, `Warning: workdir "`+spec.nodeDir+`" is unavailable on node `+nc.name+`; using "`+cwd+`".`)
	case "3":
		sp.warnings = append(sp.warnings, `Warning: workdir "`+spec.nodeStateDir+`" (left by the previous exec) is unavailable on node `+nc.name+`; using "`+cwd+`".`)
	}
	var rest io.Reader = br
	if pre.Len() > 0 {
		rest = io.MultiReader(strings.NewReader(pre.String()), br)
	}
	if spec.pty {
		sp.outputs = []io.Reader{chanReader{rest, ch}}
	} else {
		sp.outputs = []io.Reader{chanReader{ch, ch}, chanReader{rest, ch}}
		if !spec.stdinPipe {
			_ = ch.CloseWrite() // the command reads EOF; an error shows as its end
			sp.stdin = nil
		}
	}
	return sp, nil
}

// chanReader reads one stream of a session channel; Close closes the
// channel, which ends both streams (the engine closes readers only after
// the exit, or when the drain timeout passed).
type chanReader struct {
	r  io.Reader
	ch ssh.Channel
}

func (r chanReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r chanReader) Close() error               { return r.ch.Close() }

// chanStdin is the command's input: Close sends EOF and keeps the
// channel's output open. An SSH channel write cannot be cancelled, so a
// write with a deadline runs on a goroutine of its own in chunks of
// stdinChunk bytes, and stops between chunks once the deadline passed:
// what it reports may fall short of what arrives by at most the one
// chunk in flight. The goroutine ends with that chunk, or when the
// channel closes at the session's end.
type chanStdin struct {
	ch   ssh.Channel
	wg   *sync.WaitGroup
	busy chan struct{} // holds a token while a write is in flight

	mu       sync.Mutex // guards deadline
	deadline time.Time
}

// stdinChunk is how much a bounded write hands the channel at once.
const stdinChunk = 32 << 10

func newChanStdin(ch ssh.Channel, wg *sync.WaitGroup) *chanStdin {
	return &chanStdin{ch: ch, wg: wg, busy: make(chan struct{}, 1)}
}

// SetWriteDeadline bounds the writes that follow; zero means none.
func (w *chanStdin) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	w.deadline = t
	w.mu.Unlock()
	return nil
}

func (w *chanStdin) Write(p []byte) (int, error) {
	w.mu.Lock()
	dl := w.deadline
	w.mu.Unlock()
	var expired <-chan time.Time
	if !dl.IsZero() {
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		expired = t.C
	}
	select {
	case w.busy <- struct{}{}: // an earlier write that timed out is done
	case <-expired:
		return 0, os.ErrDeadlineExceeded
	}
	if expired == nil {
		defer func() { <-w.busy }()
		return w.ch.Write(p)
	}
	var done atomic.Int64
	var stop atomic.Bool
	finished := make(chan error, 1)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.busy }()
		for len(p) > 0 && !stop.Load() {
			n, err := w.ch.Write(p[:min(len(p), stdinChunk)])
			done.Add(int64(n))
			if err != nil {
				finished <- err
				return
			}
			p = p[n:]
		}
		finished <- nil
	}()
	select {
	case err := <-finished:
		return int(done.Load()), err
	case <-expired:
		stop.Store(true)
		return int(done.Load()), os.ErrDeadlineExceeded
	}
}

// TryWrite hands p (a terminal's reply to a query, a few bytes) to the
// channel on a goroutine of its own unless a write is in flight, so the
// output reader that met the query never waits for the node. The
// goroutine ends with the write, or when the channel closes at the
// session's end.
func (w *chanStdin) TryWrite(p []byte) bool {
	select {
	case w.busy <- struct{}{}:
	default:
		return false
	}
	buf := bytes.Clone(p)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.busy }()
		_, _ = w.ch.Write(buf) // best effort, as on a local terminal
	}()
	return true
}

func (w *chanStdin) Close() error { return w.ch.CloseWrite() }

// remoteProcess is a session's shell on a node: a session.Process whose
// signals, checks and kills are commands run over the same connection.
type remoteProcess struct {
	pool   *nodePool
	conn   *nodeConn
	ch     ssh.Channel
	pid    int // the shell's pid on the node, also its process group id
	tag    string
	unit   string        // the transient systemd scope's name, "" without one
	exited chan struct{} // closed by serveRequests: exit report, or channel end
	closed chan struct{} // closed by serveRequests when the channel ended

	// statePath is the node's file of the shell's state (its fd 4),
	// "" when no state is kept; Release reads it and removes it.
	statePath string

	resMu    sync.Mutex // orders the resource views noted; guards resNoted
	resNoted time.Time  // when the last view noted was read

	mu       sync.Mutex // guards the fields below
	gotExit  bool
	code     int
	signal   string // the exit signal's name without "SIG", "" when it exited
	lost     error  // the connection dropped before the exit report
	reaped   bool
	released bool
	// The shell state: stateDropped says nobody wants it (the exec went
	// to the background), so Release removes the file unread; state is
	// what Release read, until takeState takes it.
	stateDropped bool
	state        []byte
}

func (p *remoteProcess) Pid() int { return p.pid }

// serveRequests handles the channel's requests until it closes: exit
// reports are kept, anything else is refused as OpenSSH's client does.
func (p *remoteProcess) serveRequests(reqs <-chan *ssh.Request) {
	var once sync.Once
	exited := func() { once.Do(func() { close(p.exited) }) }
	for req := range reqs {
		switch req.Type {
		case "exit-status":
			if len(req.Payload) >= 4 {
				p.mu.Lock()
				p.gotExit, p.code = true, int(binary.BigEndian.Uint32(req.Payload))
				p.mu.Unlock()
				exited()
			}
		case "exit-signal":
			var msg struct {
				Signal     string
				CoreDumped bool
				Error      string
				Lang       string
			}
			if ssh.Unmarshal(req.Payload, &msg) == nil {
				p.mu.Lock()
				p.gotExit, p.signal = true, msg.Signal
				p.mu.Unlock()
				exited()
			}
		default:
			if req.WantReply {
				_ = req.Reply(false, nil) // best effort: the peer may be gone
			}
		}
	}
	exited()
	close(p.closed)
}

// lostWait is how long a channel that ended without an exit report waits
// to learn whether the connection went with it.
const lostWait = 5 * time.Second

// AwaitExit blocks until the node reported the shell's exit, or the
// channel ended without a report. When the connection dropped, it makes
// the one attempt to kill the session over a new connection before it
// returns, so the session's end says whether that worked.
func (p *remoteProcess) AwaitExit() error {
	<-p.exited
	p.mu.Lock()
	got := p.gotExit
	p.mu.Unlock()
	if got {
		return nil
	}
	t := time.NewTimer(lostWait)
	defer t.Stop()
	select {
	case <-p.conn.dead:
	case <-t.C:
		return nil // the channel ended alive: Reap says there is no status
	}
	lost := &lostError{text: p.killAfterLoss()}
	p.mu.Lock()
	p.lost = lost
	p.mu.Unlock()
	return nil
}

// killAfterLoss makes one kill attempt over a new connection and returns
// the text of the lost session's end.
func (p *remoteProcess) killAfterLoss() string {
	nc := p.conn.node
	text := "Connection to node " + nc.name + " lost; the remote process may still be running."
	c, err := p.pool.conn(nc)
	if err != nil {
		return text + " One attempt to kill it over a new connection failed: " + err.Error() + "."
	}
	code, err := c.control(killLostScript(p.pid, p.tag, p.unit))
	g := strconv.Itoa(p.pid)
	switch {
	case err != nil:
		return text + " One attempt to kill it over a new connection failed: " + err.Error() + "."
	case code == 0:
		return text + " One attempt to kill it over a new connection worked: nothing of its process group " + g + " is left on the node."
	case code == 2:
		return text + " No kill was sent over the new connection: pid " + g + " now belongs to another process."
	default:
		return text + " One attempt to kill it over a new connection sent SIGKILL, but processes of its group " + g + " are still left on the node."
	}
}

// SignalGroup signals the remote process group (and its scope) by a kill
// command over the connection. It is a no-op after the reap or the loss.
func (p *remoteProcess) SignalGroup(sig syscall.Signal) error {
	p.mu.Lock()
	skip := p.reaped || p.lost != nil
	p.mu.Unlock()
	if skip {
		return nil
	}
	name := strings.TrimPrefix(unix.SignalName(sig), "SIG")
	if name == "" {
		return fmt.Errorf("signal %d has no name", sig)
	}
	code, err := p.conn.control(signalScript(name, p.pid, p.tag, p.unit))
	if err == nil && code != 0 {
		err = fmt.Errorf("kill exited with code %d", code)
	}
	if err != nil {
		return fmt.Errorf("signal process group %d on node %s: %w", p.pid, p.conn.node.name, err)
	}
	return nil
}

// Reap returns the exit the node reported, as a wait status.
func (p *remoteProcess) Reap() (syscall.WaitStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reaped = true
	switch {
	case p.lost != nil:
		return 0, p.lost
	case !p.gotExit:
		return 0, fmt.Errorf("node %s sent no exit status", p.conn.node.name)
	case p.signal != "":
		sig := unix.SignalNum("SIG" + p.signal)
		if sig == 0 {
			return 0, fmt.Errorf("ended by signal %s", p.signal)
		}
		return syscall.WaitStatus(sig), nil
	}
	return syscall.WaitStatus((p.code & 0xff) << 8), nil
}

// Release frees the session's slot on the node and checks that nothing
// of its process group (or scope) is left; an error says it may be.
func (p *remoteProcess) Release() error {
	p.mu.Lock()
	if p.released {
		p.mu.Unlock()
		return nil
	}
	p.released = true
	lost := p.lost
	readState := p.statePath != "" && !p.stateDropped
	p.mu.Unlock()
	defer p.conn.release()
	defer p.conn.untrack(p)
	_ = p.ch.Close() // the engine closed its streams already
	if lost != nil {
		return nil // the session's end text says what is known
	}
	script := aliveScript(p.pid, p.tag, p.unit)
	if p.statePath != "" {
		script = stateFileScript(p.statePath, readState) + script
	}
	out, code, err := p.conn.controlOutput(script)
	if readState && err == nil {
		if data, ok := parseStateDump(out); ok {
			p.mu.Lock()
			if !p.stateDropped {
				p.state = data
			}
			p.mu.Unlock()
		}
	}
	switch {
	case err != nil:
		return fmt.Errorf("could not check process group %d on node %s: %w", p.pid, p.conn.node.name, err)
	case code == 0:
		return fmt.Errorf("processes of group %d are still running on node %s", p.pid, p.conn.node.name)
	}
	return nil
}

// Resize tells the node's terminal its new size (window-change).
func (p *remoteProcess) Resize(cols, rows uint16) error {
	msg := struct{ Cols, Rows, Width, Height uint32 }{uint32(cols), uint32(rows), uint32(cols) * 8, uint32(rows) * 16}
	_, err := p.ch.SendRequest("window-change", false, ssh.Marshal(&msg))
	return err
}

// PortOpen reports whether the port accepts connections on the node.
func (p *remoteProcess) PortOpen(_ context.Context, port int) bool {
	if p.conn.isDead() {
		return false
	}
	return p.conn.portOpen(port)
}

// lingerWait is how long after the exit report the channel may take to
// close before leftovers are looked for: OpenSSH closes it once nothing
// holds the command's output, so a closed channel means there are none
// worth keeping (as on this machine, a job that redirected all its
// output away ends with the shell).
const lingerWait = 300 * time.Millisecond

// Lingering lists what the exited shell left running in its process
// group on the node, when something still holds the session's output.
func (p *remoteProcess) Lingering(bool) []session.Lingering {
	p.mu.Lock()
	skip := p.lost != nil || !p.gotExit
	p.mu.Unlock()
	if skip {
		return nil
	}
	t := time.NewTimer(lingerWait)
	defer t.Stop()
	select {
	case <-p.closed:
		return nil
	case <-t.C:
	}
	lines, code, err := p.conn.controlOutput(groupMembersScript(p.pid, p.tag))
	if err != nil || code != 0 {
		return nil // cannot tell: the session ends, and Release reports it
	}
	var out []session.Lingering
	for _, l := range lines {
		pidText, cmd, _ := strings.Cut(l, " ")
		pid, err := strconv.Atoi(pidText)
		if err != nil {
			continue
		}
		cmd = strings.TrimSpace(cmd)
		out = append(out, session.Lingering{Pid: pid, Command: func() string { return cmd }})
	}
	return out
}

// AwaitLingering blocks until nothing of the group is left on the node
// (nothing that carries the session's tag: see oursScript): a command on
// a channel of its own waits there. A kill of the session
// ends the group, and so the wait. A dropped connection ends the session
// as lost.
func (p *remoteProcess) AwaitLingering() {
	s, err := p.conn.client.NewSession()
	if err != nil {
		return // the session ends now, and its group with it
	}
	defer s.Close()
	g := strconv.Itoa(p.pid)
	_ = s.Run("exec /bin/sh -c '" + oursScript(p.pid, p.tag) + taggedScript(p.tag) + "while { kill -s 0 -- -" + g + " 2>/dev/null && ours; } || [ -n \"$(tagged)\" ]; do sleep 0.2; done'") // how it ended is looked at below
	if p.conn.isDead() {
		lost := &lostError{text: p.killAfterLoss()}
		p.mu.Lock()
		p.lost = lost
		p.mu.Unlock()
	}
}

// PeekStatus is the shell's exit as the node reported it.
func (p *remoteProcess) PeekStatus() (syscall.WaitStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.gotExit || p.signal != "" {
		return 0, errors.New("the shell did not exit with a code")
	}
	return syscall.WaitStatus((p.code & 0xff) << 8), nil
}

// dropState says the exec that started this session does not want its
// shell state (it went to the background): Release removes the file
// unread, and what it read already is let go.
func (p *remoteProcess) dropState() {
	p.mu.Lock()
	p.stateDropped, p.state = true, nil
	p.mu.Unlock()
}

// takeState returns the shell state Release read (the file's bytes), once.
func (p *remoteProcess) takeState() ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	data := p.state
	p.state = nil
	return data, data != nil
}
