package bgexec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
)

// ExecRequest is the exec tool's parameters. Field names and JSON names
// mirror the tool schema.
//
// A ExecRequest is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type ExecRequest struct {
	// Command is the shell command line. Required; blank is a failure. It
	// may be of any length: one too long for an exec argument is handed
	// to the shell as a script on a descriptor instead.
	Command string `json:"command"`
	// Workdir is the working directory, trimmed; a relative one is taken
	// from the default. Empty means the default: Config.Workdir, else the
	// process's cwd, else $HOME. A workdir that is not an existing directory,
	// or only whitespace, is a failure result and nothing runs:
	// `workdir "<wd>" is unavailable or not a directory: command was not
	// executed. Use an existing directory, or omit workdir for the default.`
	// Only a Config.Workdir removed since NewRegistry falls back (to the
	// process's cwd, else $HOME, else "/"), with the warning
	// `Warning: workdir "<wd>" is unavailable; using "<fallback>".`
	Workdir string `json:"workdir,omitzero"`
	// Env is merged over the inherited environment after the environment
	// security rules: keys that change how shells, loaders, interpreters or
	// package managers behave are dropped from the inherited environment,
	// and PATH, those keys, the override-only keys and non-portable names
	// are refused as overrides. A refused key fails the call and nothing is
	// spawned. OPENCLAW_CLI=1 and Config.ShellMarker are set last and win.
	Env map[string]string `json:"env,omitzero"`
	// YieldMs is the yield window in milliseconds: after it, a still running
	// command moves to the background. Nil means Config.YieldMs (10000).
	// Clamped to 10 … 120000; zero or negative become 10.
	YieldMs *float64 `json:"yieldMs,omitzero"`
	// Background returns "running" at once. Default false: the yield
	// window decides.
	Background bool `json:"background,omitzero"`
	// TimeoutSeconds ends the process after this many seconds (fractions
	// allowed), in the foreground and in the background. Nil means
	// Config.TimeoutSec (1800); zero or negative means no timeout; at most
	// 30 days.
	TimeoutSeconds *float64 `json:"timeoutSeconds,omitzero"`
	// Timeout is the older name of TimeoutSeconds (seconds, same default),
	// still accepted because models trained on earlier prompts send it. Given with a different
	// TimeoutSeconds, the call fails naming both.
	Timeout *float64 `json:"timeout,omitzero"`
	// Title is a short statement of the command's purpose, at most 120
	// characters (longer is a failure result). It is kept with the session
	// and returned as details.title by exec, poll and list.
	Title string `json:"title,omitzero"`
	// PTY runs the command under a pseudo-terminal (120×30, one merged
	// stream). Default false: pipes.
	PTY bool `json:"pty,omitzero"`
	// Elevated runs outside the sandbox when the runtime allows it
	// (Config.Elevation). Default false.
	Elevated bool `json:"elevated,omitzero"`
	// Host is auto (default), sandbox, gateway or node; it must match the configured host.
	Host string `json:"host,omitzero"`
	// Security is deny, allowlist or full; it may only be stricter than
	// configured. Empty means the configured level.
	Security string `json:"security,omitzero"`
	// Ask is off, on-miss or always; it may only be stricter than
	// configured. Empty means the configured mode.
	Ask string `json:"ask,omitzero"`
	// Stdin is "closed" (default: the child reads EOF at once) or "pipe"
	// (kept open for process write/eof). An addition to the reference schema.
	// PTY sessions always have a writable terminal.
	Stdin string `json:"stdin,omitzero"`
	// Node names the node to run on when the configured host is "node".
	// Empty means Config.DefaultNode. An unknown name is a failure result
	// listing the configured ones; a node under another host is refused.
	Node string `json:"node,omitzero"`
	// Streams is "merged" (default) or "split": with "split", finished
	// exec results and poll results also carry details.stdout and
	// details.stderr, each stream's retained output apart (the text stays
	// merged). A PTY has one stream, so split with pty is a failure
	// result. An addition to the reference schema.
	Streams string `json:"streams,omitzero"`
}

// Exec runs req.Command (the exec tool). It returns when the command exits
// (a foreground result), when the yield window ends or at once with
// Background (a "running" result with a session id), or, when background
// execution is disabled, when the command exits or times out.
//
// ctx bounds the call, never a backgrounded process: if ctx ends before the
// run moved to the background, the process group is killed and the ctx error
// returned. A Go error means the call could not be made (nil request,
// registry closed, ctx ended); everything else is a Result. Exec panics on a
// nil ctx. Safe for concurrent use.
//
// With Config.MaxCallWaitMs the yield window is at most that long. With
// Config.ExitNoticesInResults the text starts with the scope's exit
// notices not yet shown (see the package documentation); Process and Call
// do the same.
func (sc *Scope) Exec(ctx context.Context, req *ExecRequest) (res *Result, err error) {
	start, ct := time.Now(), &callTrace{id: newCallID()}
	defer func() {
		res = sc.withNotices(res)
		sc.giveBackIfCancelled(ctx, res)
		sc.observeResult(ct, start, res, err)
	}()
	return sc.exec(ctx, req, ct)
}

// callTrace is what an exec call's events say of it: its id, and the
// session it started ("" when none).
type callTrace struct {
	id, session string
}

// exec is Exec without the scope's notices (also run by Decide); ct is
// the call's id, and gets the session it starts.
func (sc *Scope) exec(ctx context.Context, req *ExecRequest, ct *callTrace) (res *Result, err error) {
	if err := sc.begin(ctx, "exec", req == nil); err != nil {
		return nil, err
	}
	c, msg := sc.checkExec(req)
	if msg != "" {
		return execFailure(msg), nil
	}
	if msg := sc.placeExec(c); msg != "" {
		return execFailure(msg), nil
	}
	c.call = ct.id
	if res, err, done := sc.decideExec(ctx, c); done {
		return res, err
	}
	sc.windowExec(c)
	spec := sc.execSpec(c)
	if p, ok := c.host.host.(host.Preparer); ok {
		if msg := p.Prepare(spec); msg != "" {
			return execFailure(msg), nil
		}
	}

	// The spawn event goes before admit: Close never waits for an
	// observer that ObserverRequired makes this call wait for.
	obs, added, msg := sc.observeSpawn(ctx, c, spec.PTY)
	if msg != "" {
		return execFailure(msg), nil
	}
	spec.Env.Added = added
	sp, start, failed, err := sc.startExec(ctx, c, spec, obs)
	if failed != nil || err != nil {
		return failed, err
	}
	s := sc.reg.add(sc.sessionOptions(c, spec, sp, obs.id, start))
	ct.session = s.ID()
	res, err = sc.run(ctx, s, c.background, c.yield, c.synchronous, c.warnings)
	if sp.State != nil {
		keep := err == nil && res.Details.Status != StatusRunning
		if state, ok := sp.State(keep); ok {
			sc.carryState(res, c, sp, state)
		}
	}
	if c.capped && err == nil && !c.background && res.Details.Status == StatusRunning && time.Since(start) >= c.yield {
		noteCapped(res, sc.reg.cfg.cappedNote("yieldMs", c.askedYield, "the command keeps running in the background. Use process wait or poll to wait for it."))
	}
	return res, err
}

// startExec takes the registry's admission and the scope's session slot
// and starts the command on the picked host. A refusal or a start that
// failed is returned as a failure result, with the slot given back.
func (sc *Scope) startExec(ctx context.Context, c *execCall, spec *host.Spec, obs spawnObservation) (sp *host.Started, start time.Time, failed *Result, err error) {
	if err := sc.reg.admit(); err != nil {
		obs.spawnFailed(time.Now())
		return nil, time.Time{}, nil, err
	}
	if refusal := sc.reg.takeSlot(sc.key); refusal != "" {
		sc.reg.spawnDone()
		obs.spawnFailed(time.Now())
		return nil, time.Time{}, execFailure(refusal), nil
	}
	start = time.Now()
	sp, err = c.host.host.Start(ctx, spec)
	if err != nil {
		sc.reg.quota.give(sc.key)
		sc.reg.spawnDone()
		obs.spawnFailed(start)
		return nil, start, spawnFailure(c.warnings, err, c.cwd, start), nil
	}
	if sp.Cwd != "" {
		c.cwd = sp.Cwd
	}
	c.warnings = append(c.warnings, sp.Warnings...)
	return sp, start, nil, nil
}

// execCall is one exec call as it is checked, placed and started.
type execCall struct {
	req       *ExecRequest
	call      string // the call id events carry
	timeout   time.Duration
	stdinPipe bool
	split     bool     // streams: split
	warnings  []string // for the result
	host      picked
	cwd       string     // where it runs (a node's: as asked)
	prev      shellState // the scope's kept shell state it starts from

	synchronous, background, capped bool
	yield, askedYield               time.Duration
}

// checkExec checks the call's arguments that need no host, or returns the
// failure text.
func (sc *Scope) checkExec(req *ExecRequest) (*execCall, string) {
	st := &sc.reg.cfg
	if strings.TrimSpace(req.Command) == "" {
		return nil, "Provide a command to start."
	}
	if strings.IndexByte(req.Command, 0) >= 0 {
		return nil, "The command contains a NUL byte; remove it and retry."
	}
	if msg := sc.reg.env.ValidateOverrides(req.Env); msg != "" {
		return nil, msg
	}
	if n := utf8.RuneCountInString(req.Title); n > MaxTitleChars {
		return nil, fmt.Sprintf("The title has %d characters; the most is %d. Shorten it and retry.", n, MaxTitleChars)
	}
	c := &execCall{req: req}
	reqTimeout, msg := pickTimeout(req)
	if msg != "" {
		return nil, msg
	}
	timeout, msg := resolveTimeout(reqTimeout, st.timeout)
	var capWarning string
	if v := reqTimeout; msg != "" && st.maxTimeout > 0 && v != nil && *v > maxTimeoutSec && !math.IsInf(*v, 1) {
		// Past the largest timeout, but the host's cap is lower still:
		// capped like any other long timeout.
		timeout, msg = st.maxTimeout, ""
		capWarning = fmt.Sprintf("Warning: the timeout is capped at %s seconds by the host (requested: %s seconds).", formatSeconds(st.maxTimeout), strconv.FormatFloat(*v, 'f', -1, 64))
	}
	if msg != "" {
		return nil, msg
	}
	if capWarning == "" {
		timeout, capWarning = capTimeout(timeout, st.maxTimeout, reqTimeout)
	}
	c.timeout = timeout
	switch strings.ToLower(strings.TrimSpace(req.Stdin)) {
	case "", "closed":
	case "pipe":
		c.stdinPipe = true
	default:
		return nil, fmt.Sprintf("Invalid stdin %q: use \"closed\" or \"pipe\".", req.Stdin)
	}
	if c.split, msg = parseStreams(req); msg != "" {
		return nil, msg
	}
	if capWarning != "" {
		c.warnings = append(c.warnings, capWarning)
	}
	return c, ""
}

// placeExec picks the call's host and working directory, or returns the
// failure text. On a node the workdir is the node's: it is checked
// there, at the start.
func (sc *Scope) placeExec(c *execCall) string {
	req, st := c.req, &sc.reg.cfg
	var msg string
	if c.host, msg = sc.reg.hosts.pick(req, sc.key); msg != "" {
		return msg
	}
	if c.host.remote {
		c.cwd = strings.TrimSpace(req.Workdir)
		return ""
	}
	def := st.workdir
	if st.keepState {
		if prev, ok := sc.reg.shells.get(sc.key); ok && prev.cwd != "" {
			if isDir(prev.cwd) {
				def = prev.cwd
			} else if strings.TrimSpace(req.Workdir) == "" {
				c.warnings = append(c.warnings, `Warning: workdir "`+prev.cwd+`" (left by the previous exec) is unavailable; using "`+defaultWorkdir(st.workdir)+`".`)
			}
		}
	}
	cwd, warn, msg := sc.localWorkdir(c, def)
	if msg != "" {
		return msg
	}
	c.cwd = cwd
	if warn != "" {
		c.warnings = append(c.warnings, warn)
	}
	return ""
}

// decideExec applies the policy and the approver to the call. done means
// the call ends here with res and err: refused, deferred, or an approver
// that failed.
func (sc *Scope) decideExec(ctx context.Context, c *execCall) (res *Result, err error, done bool) {
	req := c.req
	refusal, v, err := sc.checkPolicy(ctx, req, c.cwd)
	if err == nil && refusal == "" {
		if msg := sc.observeDecision(ctx, c.call, req, c.cwd, v, ""); msg != "" {
			return execFailure(msg), nil, true
		}
		return nil, nil, false
	}
	if errors.Is(err, ErrApprovalDeferred) {
		_, areq := sc.policyGate(req, c.cwd)
		res := sc.deferExec(req, areq)
		sc.observeDecision(ctx, c.call, req, c.cwd, v, res.Details.ApprovalID)
		return res, nil, true
	}
	sc.observeDecision(ctx, c.call, req, c.cwd, v, "")
	if err != nil {
		return nil, err, true
	}
	return execFailure(refusal), nil, true
}

// windowExec sets how long the call waits before it returns a running
// session: the yield window, capped by Config.MaxCallWaitMs, or to the end
// when background execution is off.
func (sc *Scope) windowExec(c *execCall) {
	st, req := &sc.reg.cfg, c.req
	c.synchronous = st.backgroundOff
	if c.synchronous && (req.YieldMs != nil || req.Background) {
		c.warnings = append(c.warnings, "Warning: background execution is disabled; running synchronously.")
	}
	c.yield = st.yield
	if req.YieldMs != nil {
		c.yield = clampYield(*req.YieldMs)
	}
	c.askedYield = c.yield
	if !c.synchronous {
		c.yield, c.capped = st.capWait(c.yield)
	}
	c.background = req.Background && !c.synchronous
}

// execSpec is what the host starts for the call, with the scope's kept
// shell state (Config.KeepShellState) to start from.
func (sc *Scope) execSpec(c *execCall) *host.Spec {
	st, req := &sc.reg.cfg, c.req
	spec := &host.Spec{
		Command:   req.Command,
		Dir:       c.cwd,
		StdinPipe: c.stdinPipe,
		PTY:       req.PTY,
		Cols:      DefaultPTYCols,
		Rows:      DefaultPTYRows,
		Env:       host.Env{Defaults: st.defaultEnv, Overrides: req.Env},
	}
	// The configured marker comes last, so it wins over CLIMarker when it
	// names the same key; both win over the inherited and per-call env.
	spec.Env.Forced = []string{CLIMarker, st.marker}
	if req.PTY && os.Getenv("TERM") == "" && req.Env["TERM"] == "" {
		spec.Env.Forced = append([]string{"TERM=" + DefaultTERM}, spec.Env.Forced...)
	}
	if !st.keepState {
		return spec
	}
	c.prev, _ = sc.reg.shells.getOn(sc.key, c.host.node)
	spec.Carry = &host.Carry{Cwd: c.prev.cwd}
	if c.host.node != "" {
		// A bare name is unset on the node.
		spec.Env.Carried = slices.Concat(c.prev.unset, c.prev.env)
	} else {
		spec.Env.Carried = c.prev.env
	}
	return spec
}

// sessionOptions is the session of a started call.
func (sc *Scope) sessionOptions(c *execCall, spec *host.Spec, sp *host.Started, id string, start time.Time) session.Options {
	st, req := &sc.reg.cfg, c.req
	return session.Options{
		ID:                 id,
		Scope:              sc.key,
		Command:            req.Command,
		Name:               deriveName(req.Command),
		Title:              req.Title,
		Cwd:                c.cwd,
		PTY:                spec.PTY,
		TTYName:            sp.TTYName,
		Cols:               int(spec.Cols),
		Rows:               int(spec.Rows),
		StartedAt:          start,
		Timeout:            c.timeout,
		KillGrace:          st.killGrace,
		DrainTimeout:       st.drainTimeout,
		MaxChars:           st.maxChars,
		PendingChars:       st.pendingChars,
		HeadChars:          st.headChars,
		SplitStreams:       c.split,
		Spill:              sc.reg.spillSpec(),
		Background:         c.background,
		NotifyOnExit:       st.notifyOnExit && (st.notifier != nil || st.notices),
		NotifyEmptySuccess: st.notifyEmpty,
		// Without the process tool nothing could reach what the shell
		// leaves running, so a synchronous run ends it with the shell.
		KeepLeftovers: !c.synchronous,
		MemoryLimit:   st.limits.MemoryBytes,
		ReadOnlyHint:  sp.Hint,
		Proc:          sp.Process,
		Outputs:       sp.Outputs,
		Stdin:         sp.Stdin,
	}
}

// noteCapped adds the call-cap sentence to a running result, after its
// first paragraph and before the output so far.
func noteCapped(res *Result, note string) {
	text := res.Content[0].Text
	if i := strings.Index(text, "\n\nOutput so far:"); i >= 0 {
		res.Content[0].Text = text[:i] + "\n" + note + text[i:]
		return
	}
	res.Content[0].Text = text + "\n" + note
}

// run starts s and applies the yield state machine: an explicit background
// run returns at once, a synchronous one waits for the end, any other
// waits for the end or the yield window, whichever is first.
func (sc *Scope) run(ctx context.Context, s *session.Session, background bool, yield time.Duration, synchronous bool, warnings []string) (*Result, error) {
	s.Start()
	sc.reg.spawnDone()
	// An explicit background run was backgrounded before it started, so no
	// exit, however early, makes it a foreground run: it always returns
	// "running", and its end is reported like any other.
	if background {
		return sc.reg.withSpill(runningResult(s, warnings), s), nil
	}
	var yieldC <-chan time.Time
	if !synchronous {
		t := time.NewTimer(yield)
		defer t.Stop()
		yieldC = t.C
	}
	select {
	case <-s.Recorded():
	case <-s.LeftBehind():
		// The shell exited, but processes it started run on (`server &`):
		// they are kept as a background session, reported at once.
		if s.Background() {
			return sc.reg.withSpill(leftBehindResult(s, warnings), s), nil
		}
	case <-yieldC:
		if s.Background() {
			return sc.reg.withSpill(runningResult(s, warnings), s), nil
		}
		// It ended while the window closed: report it in the foreground.
	case <-ctx.Done():
		s.ForceKill(session.ReasonKilled)
		<-s.Done()
		sc.reg.forget(s)
		s.RemoveSpill() // no result names it
		return nil, fmt.Errorf("bgexec: exec: %w", ctx.Err())
	}
	sc.reg.forget(s)
	if rest, _ := s.Lingered(); synchronous && len(rest) > 0 {
		// What the shell left running ended with it: nothing else could
		// reach it.
		warnings = append(warnings, "Warning: when the shell exited, "+leftoverList(rest, true)+"; it was stopped, because background execution is disabled here.")
	}
	return sc.reg.withSpill(finishedResult(s, warnings), s), nil
}

// runningResult is the result of a backgrounded session. Its text shows
// the output so far (details.tail without its trailing line ends; on a
// PTY at most its last lines, see runningTail), so the agent sees how the
// command started without a first poll.
func runningResult(s *session.Session, warnings []string) *Result {
	return backgroundResult(s, warnings, fmt.Sprintf("Command still running (session %s, pid %d). %s", s.ID(), s.Pid(), followUpLine(s)))
}

// followUp lists the process actions that apply to a running session:
// write only when its stdin takes input, the terminal actions only on a
// PTY.
func followUp(s *session.Session) []string {
	acts := []string{"list", "poll", "log"}
	if s.Writable() {
		acts = append(acts, "write")
	}
	if s.PTY() {
		acts = append(acts, "send-keys", "submit", "paste", "screen")
	}
	return append(acts, "kill", "clear", "remove")
}

// followUpLine is the running text's sentence naming followUp(s).
func followUpLine(s *session.Session) string {
	return "Use process (" + strings.Join(followUp(s), "/") + ") for follow-up."
}

// backgroundResult is a running result with the given first line, then the
// output so far.
func backgroundResult(s *session.Session, warnings []string, text string) *Result {
	sn, lines := s.SnapshotLines(tailChars)
	if tail := runningTail(s, sn.Tail, lines); tail != "" {
		text = s.WithHint(text + "\n\nOutput so far:\n" + tail)
	}
	return textResult(withWarnings(warnings, text), Details{
		Status:    StatusRunning,
		SessionID: s.ID(),
		Pid:       s.Pid(),
		StartedAt: s.StartedAt().UnixMilli(),
		Cwd:       s.Cwd(),
		Tail:      sn.Tail,
		Title:     titleOf(s),
		FollowUp:  followUp(s),
	})
}

// leftBehindResult is the result of an exec whose shell exited while
// processes it started still run: the session is kept for them.
func leftBehindResult(s *session.Session, warnings []string) *Result {
	rest, code := s.Lingered()
	how := "exited"
	if code != nil {
		how = fmt.Sprintf("exited with code %d", *code)
	}
	return backgroundResult(s, warnings, fmt.Sprintf("The shell %s; %s, kept as session %s. %s", how, leftoverList(rest, false), s.ID(), followUpLine(s)))
}

// leftoverList says which processes are (or, past, were) still running:
// "1 process it started is still running (pid 4242: python3 -m http.server)".
func leftoverList(rest []session.Lingering, past bool) string {
	const shown = 3
	var names []string
	for i, p := range rest {
		if i == shown {
			names = append(names, fmt.Sprintf("and %d more", len(rest)-shown))
			break
		}
		names = append(names, fmt.Sprintf("pid %d: %s", p.Pid, p.Command()))
	}
	verb := map[bool]string{false: "is", true: "was"}[past]
	if len(rest) == 1 {
		return "1 process it started " + verb + " still running (" + names[0] + ")"
	}
	verb = map[bool]string{false: "are", true: "were"}[past]
	return fmt.Sprintf("%d processes it started %s still running (%s)", len(rest), verb, strings.Join(names, ", "))
}

// finishedResult is the foreground result of an ended session.
func finishedResult(s *session.Session, warnings []string) *Result {
	agg, sn := s.Aggregated()
	e := sn.Exit
	dur := e.At.Sub(s.StartedAt()).Milliseconds()

	out := strings.TrimSpace(agg)
	notice := sn.Truncated
	if sn.Truncated && s.HeadChars() > 0 {
		// Head and tail: the marker between them replaces the notice.
		if ht, _ := s.HeadTail(math.MaxInt); ht.Gap != nil {
			out, notice = joinHeadTail(ht, true), false
		}
	}
	d := Details{
		Status:     statusOf(e.Status()),
		ExitCode:   e.Code,
		ExitReason: reasonOf(e.Reason),
		DurationMs: &dur,
		Aggregated: out,
		Cwd:        s.Cwd(),
		Title:      titleOf(s),
		execEnd:    true,
	}
	d.Stdout, d.Stderr = streamsOf(s)
	var text string
	if d.Status == StatusCompleted {
		text = out
		if text == "" {
			text = "(no output)"
		}
		if e.Code != nil && *e.Code != 0 {
			suffix := fmt.Sprintf("\n\n(Command exited with code %d)", *e.Code)
			text += suffix
			d.Aggregated += suffix
		}
	} else {
		d.ExitSignal = e.Signal
		d.TimedOut = ptr(e.Reason == session.ReasonTimeout)
		reason := failureReason(&e, s.Timeout())
		if e.Reason == session.ReasonOOM {
			reason = oomText(e.MemoryLimit)
		}
		if out != "" {
			text = out + "\n\n" + reason
		} else {
			text = reason
		}
	}
	return textResult(withWarnings(warnings, s.WithHint(withNotice(text, notice))), d)
}

// failureReason explains a failed end.
func failureReason(e *session.Exit, timeout time.Duration) string {
	switch {
	case e.Reason == session.ReasonLost:
		return e.Note
	case e.Reason == session.ReasonTimeout:
		return fmt.Sprintf("Command timed out after %s seconds.\n\n%s", formatSeconds(timeout), timeoutGuidance)
	case e.Signal != "":
		return "Command aborted by signal " + e.Signal
	case e.Code != nil && *e.Code == 127:
		return "Command not found"
	case e.Code != nil && *e.Code == 126:
		return "Command not executable (permission denied)"
	case e.Code != nil:
		if e.Reason == session.ReasonKilled {
			return fmt.Sprintf("Command killed (it exited with code %d after the termination request)", *e.Code)
		}
		return fmt.Sprintf("Command exited with code %d", *e.Code)
	}
	return "Command failed"
}

// timeoutGuidance ends every report of a timeout (exec, poll, log, the
// exit event): the command was stopped part way, so what it did must be
// checked before it is run again.
const timeoutGuidance = "The command was terminated, but external side effects may already have completed. Verify the resulting state before retrying. Do not automatically rerun non-idempotent commands. Use a higher timeoutSeconds only when the command is known to be safe to retry.\n\n" +
	"If it should keep running, start it with exec background=true or yieldMs so it continues as a process session. Do not rely on shell backgrounding with a trailing &."

func formatSeconds(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", d.Seconds()), "0"), ".")
}

func spawnFailure(warnings []string, err error, cwd string, start time.Time) *Result {
	dur := time.Since(start).Milliseconds()
	r := textResult(withWarnings(warnings, err.Error()), Details{
		Status:     StatusFailed,
		ExitReason: ExitReasonSpawnError,
		DurationMs: &dur,
		TimedOut:   ptr(false),
		Cwd:        cwd,
		execEnd:    true,
	})
	r.IsError = true
	return r
}

// clampYield converts a yieldMs parameter: 10 … 120000 ms, zero, negative
// and NaN become 10.
func clampYield(ms float64) time.Duration {
	if math.IsNaN(ms) || ms < MinYieldMs {
		ms = MinYieldMs
	}
	return time.Duration(min(ms, MaxYieldMs) * float64(time.Millisecond))
}

// MaxTitleChars is the longest exec title, in characters (code points).
const MaxTitleChars = 120

// pickTimeout returns the timeout a call gave, by either name; a non-empty
// message is a failure text.
func pickTimeout(req *ExecRequest) (*float64, string) {
	a, b := req.TimeoutSeconds, req.Timeout
	switch {
	case a == nil:
		return b, ""
	case b == nil || *a == *b:
		return a, ""
	}
	return nil, fmt.Sprintf("timeoutSeconds (%s) and timeout (%s) disagree: timeout is the older name of timeoutSeconds. Pass only timeoutSeconds.",
		strconv.FormatFloat(*a, 'f', -1, 64), strconv.FormatFloat(*b, 'f', -1, 64))
}

// resolveTimeout converts a timeout parameter in seconds; a non-empty
// message is a failure text.
func resolveTimeout(sec *float64, def time.Duration) (time.Duration, string) {
	if sec == nil {
		return def, ""
	}
	v := *sec
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, "Invalid timeoutSeconds: pass a number of seconds (<= 0 for none)."
	case v <= 0:
		return 0, ""
	case v > maxTimeoutSec:
		return 0, fmt.Sprintf("Invalid timeoutSeconds %g: the largest timeout is %d seconds (30 days); pass <= 0 for none.", v, maxTimeoutSec)
	}
	return time.Duration(v * float64(time.Second)), ""
}

// resolveWorkdir picks the working directory. A workdir the call gives
// that is not an existing directory (or is only whitespace) is a failure
// text: a command meant for one directory must never run in another. Only
// a configured default that vanished since NewRegistry falls back, with a
// warning; the paths are quoted literally, without Go escaping.
func resolveWorkdir(req, def string) (cwd, warning, failureText string) {
	wd := strings.TrimSpace(req)
	if wd == "" && req != "" {
		return "", "", workdirFailure(req)
	}
	if wd == "" && def == "" {
		return defaultWorkdir(""), "", ""
	}
	if wd == "" {
		// The configured default, checked again: it existed at NewRegistry.
		if isDir(def) {
			return def, "", ""
		}
		fallback := defaultWorkdir("")
		return fallback, `Warning: workdir "` + def + `" is unavailable; using "` + fallback + `".`, ""
	}
	abs := wd
	if !filepath.IsAbs(wd) {
		abs = filepath.Join(defaultWorkdir(def), wd)
	}
	if !isDir(abs) {
		return "", "", workdirFailure(wd)
	}
	return abs, "", ""
}

// localWorkdir resolves the workdir of a call that runs on this machine
// (def is the default: the configured one, or the one the scope's last
// exec left) and, on a host that limits where commands run (the sandbox),
// checks that it lies where they may, so a workdir the host would refuse
// is refused before any approver is asked. The host checks it again when
// it starts the command.
func (sc *Scope) localWorkdir(c *execCall, def string) (cwd, warning, failureText string) {
	cwd, warning, failureText = resolveWorkdir(c.req.Workdir, def)
	if p, ok := c.host.host.(host.Placer); ok && failureText == "" {
		failureText = p.Place(cwd)
	}
	return cwd, warning, failureText
}

func workdirFailure(wd string) string {
	return `workdir "` + wd + `" is unavailable or not a directory: command was not executed. Use an existing directory, or omit workdir for the default.`
}

// defaultWorkdir is where a command runs without a usable workdir: the
// configured default, else the process's cwd, else $HOME, else "/", each
// only if it is an existing directory.
func defaultWorkdir(def string) string {
	if def != "" && isDir(def) {
		return def
	}
	if c, err := os.Getwd(); err == nil {
		return c // the current directory: Getwd fails once it is removed
	}
	if h, err := os.UserHomeDir(); err == nil && isDir(h) {
		return h
	}
	return "/"
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
