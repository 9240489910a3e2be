package bgexec

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
)

// Limits of the wait action (an addition to the reference schema).
const (
	// DefaultWaitTimeoutMs is how long wait waits without a timeout, in ms.
	DefaultWaitTimeoutMs = 30000
	// MaxWaitTimeoutMs is the longest wait in milliseconds.
	MaxWaitTimeoutMs = 600000
	// portProbeInterval is how often wait dials a port it waits for: opening
	// a port produces no output event, so this one condition is probed.
	portProbeInterval = 50 * time.Millisecond
)

func (sc *Scope) wait(ctx context.Context, s *session.Session, req *ProcessRequest) (*Result, error) {
	ws, bad := sc.waitSpec(s, req)
	if bad != nil {
		return bad, nil
	}
	w := s.Wait(ctx, ws.spec)
	sc.reg.retract(sc.key, w.Retract)

	sn := &w.Snap
	d := Details{Status: statusOf(sn.Status), SessionID: s.ID(), Name: s.Name(), Condition: w.Condition}
	switch w.Condition {
	case session.CondPattern:
		d.Matched = w.Matched
	case session.CondPort:
		d.Port = req.Port
	}
	end := exitLine(sn)
	if sn.Ended {
		exitDetails(&d, &sn.Exit)
		end += closedPortsNote(s.Listeners())
	}
	body := boundedTail(strings.TrimRight(w.Text, "\n"), w.Lines)
	if body == "" {
		body = "(no new output)"
	}
	res := textResult(sc.waitHead(&w, req, ws)+"\n\n"+cutBody(body, &w.Drained)+"\n\n"+end, d)
	sc.reg.noteSpill(res, s, w.Loss != session.LostNothing)
	res.tookDrain(s, &w.Drained) // given back if it never reaches the model
	return res, nil
}

// waitCall is a wait as its arguments ask for it.
type waitCall struct {
	spec      session.WaitSpec
	timeoutMs float64       // as asked, at most MaxWaitTimeoutMs and the host's cap
	asked     time.Duration // the same, before Config.MaxCallWaitMs
	capped    bool          // Config.MaxCallWaitMs shortened it
}

// waitSpec checks a wait's arguments and turns them into the engine's
// spec, or returns the failure result.
func (sc *Scope) waitSpec(s *session.Session, req *ProcessRequest) (waitCall, *Result) {
	var wc waitCall
	wc.timeoutMs = float64(DefaultWaitTimeoutMs)
	if req.Timeout != nil {
		wc.timeoutMs = float64(*req.Timeout)
		if wc.timeoutMs != wc.timeoutMs || wc.timeoutMs < 0 {
			return wc, failure("Invalid timeout: pass milliseconds from 0 to 600000.")
		}
		wc.timeoutMs = min(wc.timeoutMs, MaxWaitTimeoutMs)
	}
	if req.Port != 0 && (req.Port < 1 || req.Port > 65535) {
		return wc, failure(fmt.Sprintf("Invalid port %d: pass a TCP port from 1 to 65535.", req.Port))
	}
	idle, bad := idleArg(req.IdleMs)
	if bad != nil {
		return wc, bad
	}
	if c := sc.reg.cfg.maxTimeout; c > 0 {
		wc.timeoutMs = min(wc.timeoutMs, float64(c.Milliseconds())) // MaxTimeoutSec
	}
	wc.asked = time.Duration(wc.timeoutMs * float64(time.Millisecond))
	wc.spec = session.WaitSpec{Idle: idle}
	wc.spec.Timeout, wc.capped = sc.reg.cfg.capWait(wc.asked)
	if req.Pattern != "" {
		re, err := regexp.Compile(req.Pattern)
		if err != nil {
			return wc, failure(fmt.Sprintf("Invalid pattern: %v. Pass an RE2 regular expression.", err))
		}
		wc.spec.Pattern = re
	}
	if req.Port != 0 {
		port := req.Port
		wc.spec.Probe = func(ctx context.Context) bool { return portOpen(ctx, port) }
		if rp, ok := s.Process().(host.PortProber); ok {
			wc.spec.Probe = func(ctx context.Context) bool { return rp.PortOpen(ctx, port) } // where it runs
		}
		wc.spec.ProbeEvery = portProbeInterval
	}
	return wc, nil
}

// waitHead is the first line of a wait's result: what ended it.
func (sc *Scope) waitHead(w *session.Waited, req *ProcessRequest, wc waitCall) string {
	switch w.Condition {
	case session.CondPattern:
		return "Pattern matched: " + w.Matched
	case session.CondPort:
		return fmt.Sprintf("Port %d is accepting connections.", req.Port)
	case session.CondIdle:
		return fmt.Sprintf("Output has been quiet for %s ms.", strconv.FormatFloat(float64(*req.IdleMs), 'f', -1, 64))
	case session.CondExit:
		if wc.spec.Pattern != nil || wc.spec.Probe != nil || wc.spec.Idle > 0 {
			return "The process ended before the condition held."
		}
		return "The process ended."
	}
	if wc.capped {
		return "The condition did not hold yet. " + sc.reg.cfg.cappedNote("timeout", wc.asked, "call wait again to keep waiting.")
	}
	return fmt.Sprintf("Timed out after %s ms; the condition did not hold.", strconv.FormatFloat(wc.timeoutMs, 'f', -1, 64))
}

// portOpen reports whether something accepts TCP connections on the port
// at 127.0.0.1 or ::1.
func portOpen(ctx context.Context, port int) bool {
	var d net.Dialer
	for _, host := range []string{"127.0.0.1", "::1"} {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			_ = c.Close()
			return true
		}
	}
	return false
}

// Bounds of the new output a wait returns: a wait after a flood returns its
// end, and says where in the log the rest is.
const (
	waitTailLines = 20
	waitTailChars = 2000
)

// boundedTail returns the last waitTailLines lines (at most waitTailChars
// characters) of text, the new output up to log line total, with a line
// saying which log lines it left out.
func boundedTail(text string, total int64) string {
	lines := strings.Split(text, "\n")
	if len(lines) <= waitTailLines && len(text) <= waitTailChars {
		return text
	}
	shown := lines[max(len(lines)-waitTailLines, 0):]
	tail := strings.Join(shown, "\n")
	if len(tail) > waitTailChars {
		cut := len(tail) - waitTailChars
		for cut < len(tail) && !utf8.RuneStart(tail[cut]) {
			cut++
		}
		tail = tail[cut:]
	}
	first := max(total-int64(len(lines)), 0)
	left := len(lines) - len(shown)
	if left == 0 {
		// One long line: the rest is at the start of the same line.
		return fmt.Sprintf("[new output cut to its last %d characters; process log offset %d limit 1 has the line]\n", waitTailChars, first) + tail
	}
	return fmt.Sprintf("[%d earlier lines of new output not shown: process log offset %d limit %d]\n", left, first, left) + tail
}
