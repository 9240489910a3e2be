package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/bgexec/bgexec/internal/host"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// Host runs the commands of one scope in its pod: a host.Host of package
// bgexec's seam (internal/host). Safe for concurrent use.
type Host struct {
	c     *Cluster
	scope string
}

// Name is "kubernetes".
func (h *Host) Name() string { return "kubernetes" }

// defaultTERM is the terminal type a PTY session gets when its
// environment names none.
const defaultTERM = "xterm-256color"

// Start starts spec in the scope's pod. The command's environment is the
// container's with, in order: spec.Env.Carried (KEY=value entries set,
// bare KEY names unset), the Defaults whose keys the caller does not
// override, the Overrides (sorted), the Forced entries, then the Added
// ones, and the session's tag. Shell state is not carried (Started.State
// reports none). On error nothing runs in the container and every
// descriptor is closed.
func (h *Host) Start(ctx context.Context, spec *host.Spec) (*host.Started, error) {
	st, pod, err := h.start(ctx, spec)
	if err != nil && h.c.selector != "" && pod != "" && h.c.repick(ctx, h.scope, pod) {
		st, _, err = h.start(ctx, spec) // the scope's pod is gone: another one
	}
	return st, err
}

// start starts spec in the scope's pod, which it returns ("" when none
// was found).
func (h *Host) start(ctx context.Context, spec *host.Spec) (*host.Started, string, error) {
	c := h.c
	pod, err := c.podFor(ctx, h.scope)
	if err != nil {
		return nil, "", err
	}
	tag := newTag()
	env := podEnv(spec.Env)
	if spec.PTY && !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "TERM=") }) {
		env = append(env, "TERM="+defaultTERM)
	}
	env = append(env, tagKey+"="+tag)
	dir := spec.Dir
	if dir == "" && spec.Carry != nil {
		dir = spec.Carry.Cwd
	}
	argv := append([]string{"sh", "-c", wrapper, "bgexec", c.shell, c.workdir, dir, spec.Command, tag}, env...)
	req := execRequest{Container: c.container, Command: argv, Stdout: true, Stderr: !spec.PTY, TTY: spec.PTY, Stdin: spec.PTY || spec.StdinPipe}

	p := &process{c: c, pod: pod, tag: tag, done: make(chan struct{}), reported: make(chan string, 1), sent: map[string]bool{}}
	st, err := p.start(ctx, req, spec)
	if err != nil {
		return nil, pod, err
	}
	if spec.Carry != nil {
		st.State = func(bool) ([]byte, bool) { return nil, false }
	}
	return st, pod, nil
}

// podEnv is what the wrapper applies over the container's environment,
// in order (see Start): spec's layers (host.Env.Layered), where an entry
// without "=" unsets its name.
func podEnv(env host.Env) []string { return env.Layered() }

// executor is an exec of url: WebSocket first (the API server's v5
// protocol), SPDY when the server refuses the WebSocket upgrade.
func (c *Cluster) executor(url string) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(c.rest, "GET", url)
	if err != nil {
		return nil, err
	}
	u, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.rest, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// start opens the exec stream of req and waits for the wrapper's report.
func (p *process) start(ctx context.Context, req execRequest, spec *host.Spec) (st *host.Started, err error) {
	c := p.c
	u, err := c.execURL(p.pod, req)
	if err != nil {
		return nil, err
	}
	ex, err := c.executor(u)
	if err != nil {
		return nil, fmt.Errorf("kube: exec client: %w", err)
	}
	var files []*os.File // closed on error
	defer func() {
		if err != nil {
			for _, f := range files {
				_ = f.Close()
			}
		}
	}()
	opts, outs, stdin, err := p.streams(req, spec, &files)
	if err != nil {
		return nil, err
	}
	if !c.track(p) {
		return nil, errors.New("kube: the cluster's host is closed")
	}
	sctx, cancel := context.WithCancel(c.ctx)
	go func() { // counted by track
		defer c.wg.Done()
		defer cancel()
		p.streamErr = ex.StreamWithContext(sctx, opts)
		p.endStreams()
		close(p.done)
	}()
	rep, err := p.awaitReport(ctx, cancel, outs)
	files = files[:0] // handed over to the stream, or closed by awaitReport
	if err != nil {
		return nil, err
	}
	return p.started(rep, spec, outs, stdin), nil
}

// streams makes the pipes of one exec: stdout and stderr, or the
// terminal alone, with the report and trailer filtered out of the last;
// stdin when req asks for it; and the terminal's size queue. Every file
// it opens is added to files.
func (p *process) streams(req execRequest, spec *host.Spec, files *[]*os.File) (opts remotecommand.StreamOptions, outs []io.Reader, stdin io.Writer, err error) {
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			*files = append(*files, r, w)
		}
		return r, w, err
	}
	opts = remotecommand.StreamOptions{Tty: spec.PTY}
	nOut := 2
	if spec.PTY {
		nOut = 1
	}
	for i := range nOut {
		r, w, err := pipe()
		if err != nil {
			return opts, nil, nil, err
		}
		outs = append(outs, r)
		p.outW = append(p.outW, w)
		var dst io.Writer = w
		if i == nOut-1 { // the report and the trailer come on stderr, or on the terminal
			f := &streamFilter{w: w, got: p.reported, trailer: []byte(trailerHeader + p.tag + " "), end: p.noteTrailer}
			p.filter = f
			dst = f
		}
		if i == 0 {
			opts.Stdout = dst
		} else {
			opts.Stderr = dst
		}
	}
	if req.Stdin {
		r, w, err := pipe()
		if err != nil {
			return opts, nil, nil, err
		}
		p.stdinR, p.stdinW = r, w
		opts.Stdin = eofOnClose{r}
		stdin = &stdinPipe{f: w}
	}
	if spec.PTY {
		p.sizes = newSizeQueue(spec.Cols, spec.Rows)
		opts.TerminalSizeQueue = p.sizes
	}
	return opts, outs, stdin, nil
}

// awaitReport waits for the wrapper's report line (its shell's pid and
// directory). Without one, it ends the stream, closes what the start
// opened and says why the command did not start.
func (p *process) awaitReport(ctx context.Context, cancel context.CancelFunc, outs []io.Reader) (report, error) {
	c := p.c
	t := newTimer(c.timeout)
	defer t.Stop()
	var line string
	select {
	case line = <-p.reported:
	case <-p.done:
		select {
		case line = <-p.reported:
		default:
		}
	case <-t.C:
	case <-ctx.Done():
	}
	rep, ok := parseReport(line)
	if ok {
		return rep, nil
	}
	cancel()
	<-p.done
	c.untrack(p)
	p.closeReaders(outs)
	switch {
	case line != "":
		return rep, fmt.Errorf("pod %s did not start the command: %q", p.pod, host.MiddleTruncate(line, 300))
	case p.streamErr != nil && !errors.Is(p.streamErr, context.Canceled):
		return rep, fmt.Errorf("could not run the command in pod %s/%s: %w", c.namespace, p.pod, p.streamErr)
	case ctx.Err() != nil:
		return rep, ctx.Err()
	}
	return rep, fmt.Errorf("pod %s/%s did not start the command within %s", c.namespace, p.pod, c.timeout)
}

// started is the started command of a report, with a warning when the
// wrapper fell back from the directory asked for.
func (p *process) started(rep report, spec *host.Spec, outs []io.Reader, stdin io.Writer) *host.Started {
	p.pid = rep.pid
	st := &host.Started{Process: p, Outputs: outs, Stdin: stdin, Cwd: rep.cwd}
	switch rep.warn {
	case "1":
		st.Warnings = append(st.Warnings, `Warning: the default workdir "`+p.c.workdir+`" is unavailable in pod `+p.pod+`; using "`+rep.cwd+`".`)
	case "2":
		st.Warnings = append(st.Warnings, `Warning: workdir "`+spec.Dir+`" is unavailable in pod `+p.pod+`; using "`+rep.cwd+`".`)
	}
	return st
}

// closeReaders closes what a failed start handed nobody.
func (p *process) closeReaders(outs []io.Reader) {
	for _, r := range outs {
		_ = r.(*os.File).Close()
	}
	if p.stdinW != nil {
		_ = p.stdinW.Close()
	}
}

// report is what the wrapper's first line says.
type report struct {
	pid  int
	warn string // "0"; "1" default workdir missing; "2" asked workdir missing
	cwd  string
}

func parseReport(line string) (report, bool) {
	rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), reportHeader)
	if !ok {
		return report{}, false
	}
	f := strings.SplitN(rest, " ", 4)
	if len(f) != 4 {
		return report{}, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 1 {
		return report{}, false
	}
	return report{pid: pid, warn: f[2], cwd: f[3]}, true
}

// maxPreamble bounds what is held back while looking for the report.
const maxPreamble = 16 << 10

// streamFilter passes a stream on to w, less the wrapper's lines: its
// first line when that is the report (which goes to got, once), and the
// trailer (its header, tag and the rest of its line, which goes to end)
// wherever it shows. Bytes that may begin the trailer are held back until
// they do or do not; flush hands on what is held when the stream ended.
// Used by one goroutine at a time (the exec's copy of the stream, then
// the stream's owner).
type streamFilter struct {
	w       io.Writer
	got     chan<- string
	trailer []byte // trailerHeader + tag + " "
	end     func(rest string)
	buf     []byte // the preamble, then the held-back bytes
	started bool   // the first line was seen
}

func (f *streamFilter) Write(b []byte) (int, error) {
	if !f.started {
		f.buf = append(f.buf, b...)
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 && len(f.buf) < maxPreamble {
			return len(b), nil
		}
		f.started = true
		data := f.buf
		f.buf = nil
		if i >= 0 && bytes.HasPrefix(data, []byte(reportHeader)) {
			f.got <- string(data[:i])
			data = data[i+1:]
		} else {
			f.got <- string(data[:min(len(data), 300)]) // what the container said instead
		}
		if err := f.pass(data); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	if len(f.buf) > 0 {
		b2 := append(f.buf, b...)
		f.buf = nil
		if err := f.pass(b2); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	if err := f.pass(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// pass writes data on, taking the trailer out and holding back a
// possible beginning of it.
func (f *streamFilter) pass(data []byte) error {
	for len(data) > 0 {
		i := bytes.IndexByte(data, f.trailer[0])
		if i < 0 {
			_, err := f.w.Write(data)
			return err
		}
		if i > 0 {
			if _, err := f.w.Write(data[:i]); err != nil {
				return err
			}
			data = data[i:]
		}
		n := min(len(data), len(f.trailer))
		if !bytes.Equal(data[:n], f.trailer[:n]) {
			if _, err := f.w.Write(data[:1]); err != nil {
				return err
			}
			data = data[1:]
			continue
		}
		j := bytes.IndexByte(data, '\n')
		if n < len(f.trailer) || j < 0 {
			if len(data) > len(f.trailer)+64 { // no trailer is that long
				_, err := f.w.Write(data)
				return err
			}
			f.buf = append(f.buf[:0], data...)
			return nil
		}
		f.end(strings.TrimRight(string(data[len(f.trailer):j]), "\r"))
		data = data[j+1:]
	}
	return nil
}

// flush writes what is held back; the stream ended.
func (f *streamFilter) flush() {
	if len(f.buf) > 0 && f.started {
		_, _ = f.w.Write(f.buf) // the reader may be gone: nothing to do
	}
	f.buf = nil
}

// eofOnClose is the stdin pipe's read end as client-go's copy reads it:
// once the stream ended and the end was closed, a read is EOF rather than
// an error client-go would log.
type eofOnClose struct{ f *os.File }

func (r eofOnClose) Read(b []byte) (int, error) {
	n, err := r.f.Read(b)
	if errors.Is(err, os.ErrClosed) {
		err = io.EOF
	}
	return n, err
}
