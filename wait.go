package bgexec

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits of the wait action (an addition to the reference schema).
const (
	// DefaultWaitTimeoutMs is how long wait waits without a timeout, in ms.
	DefaultWaitTimeoutMs = 30000
	// MaxWaitTimeoutMs is the longest wait in milliseconds.
	MaxWaitTimeoutMs = 600000
	// maxPartialLine bounds the unfinished line a pattern waiter keeps.
	maxPartialLine = 64 << 10
	// portProbeInterval is how often wait dials a port it waits for: opening
	// a port produces no output event, so this one condition is probed.
	portProbeInterval = 50 * time.Millisecond
)

// lineWaiter matches a pattern against each output line, including lines
// that arrive split across reads and the unfinished last line.
type lineWaiter struct {
	re      *regexp.Regexp
	partial []byte
	matched string
	hit     bool
}

// feedLineWaitersLocked passes new text to every pattern waiter. s.mu must be held.
func (s *session) feedLineWaitersLocked(text []byte) {
	for _, w := range s.lineWaiters {
		if !w.hit {
			w.feed(text)
		}
	}
}

// seedLineWaiterLocked starts a pattern waiter on output the agent has not
// read yet: the unfinished line that preceded it, then the pending text. So
// a line split around an earlier poll still matches whole.
func (s *session) seedLineWaiterLocked(w *lineWaiter) {
	w.feed(s.out.linePrefix)
	for _, c := range s.out.pending.chunks {
		w.feed(c.text)
	}
}

func (w *lineWaiter) feed(text []byte) {
	for len(text) > 0 && !w.hit {
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			w.partial = append(w.partial, text...)
			if over := len(w.partial) - maxPartialLine; over > 0 {
				w.partial = append(w.partial[:0], w.partial[over:]...)
			}
			w.test(w.partial)
			return
		}
		w.partial = append(w.partial, text[:i]...)
		w.test(w.partial)
		w.partial = w.partial[:0]
		text = text[i+1:]
	}
}

func (w *lineWaiter) test(line []byte) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if w.re.Match(line) {
		w.hit, w.matched = true, string(line)
	}
}

func (sc *Scope) wait(ctx context.Context, s *session, req *ProcessRequest) (*Result, error) {
	timeoutMs := float64(DefaultWaitTimeoutMs)
	if req.Timeout != nil {
		timeoutMs = float64(*req.Timeout)
		if timeoutMs != timeoutMs || timeoutMs < 0 {
			return failure("Invalid timeout: pass milliseconds from 0 to 600000."), nil
		}
		timeoutMs = min(timeoutMs, MaxWaitTimeoutMs)
	}
	if req.Port != 0 && (req.Port < 1 || req.Port > 65535) {
		return failure(fmt.Sprintf("Invalid port %d: pass a TCP port from 1 to 65535.", req.Port)), nil
	}
	var lw *lineWaiter
	if req.Pattern != "" {
		re, err := regexp.Compile(req.Pattern)
		if err != nil {
			return failure(fmt.Sprintf("Invalid pattern: %v. Pass an RE2 regular expression.", err)), nil
		}
		lw = &lineWaiter{re: re}
	}

	deadline := time.NewTimer(time.Duration(timeoutMs * float64(time.Millisecond)))
	defer deadline.Stop()
	var probe <-chan time.Time
	if req.Port != 0 {
		t := time.NewTicker(portProbeInterval)
		defer t.Stop()
		probe = t.C
	}

	s.mu.Lock()
	if lw != nil {
		s.seedLineWaiterLocked(lw)
		s.lineWaiters = append(s.lineWaiters, lw)
	}
	s.pollWaiters++
	condition := ""
	for condition == "" {
		switch {
		case lw != nil && lw.hit:
			condition = "pattern"
			continue
		case s.ended:
			condition = "exit"
			continue
		}
		ch := s.changed
		s.mu.Unlock()
		if req.Port != 0 && portOpen(ctx, req.Port) {
			s.mu.Lock()
			condition = "port"
			break
		}
		select {
		case <-ch:
		case <-probe:
		case <-deadline.C:
			condition = "timeout"
		case <-ctx.Done():
			condition = "timeout"
		}
		s.mu.Lock()
		if condition == "timeout" && s.ended {
			condition = "exit"
		}
	}
	s.pollWaiters--
	if lw != nil {
		for i, w := range s.lineWaiters {
			if w == lw {
				s.lineWaiters = slices.Delete(s.lineWaiters, i, i+1) // zeroes the freed slot
				break
			}
		}
	}
	text, dropped := s.out.drainPending()
	sn := s.snapshotLocked()
	var retract string
	if sn.ended && !s.exitReported {
		s.exitReported = true
		retract = s.notifiedText
	}
	s.mu.Unlock()
	sc.reg.retract(sc.key, retract)

	d := Details{Status: sn.status, SessionID: s.id, Name: s.name, Condition: condition}
	var head string
	switch condition {
	case "pattern":
		d.Matched = lw.matched
		head = "Pattern matched: " + lw.matched
	case "port":
		d.Port = req.Port
		head = fmt.Sprintf("Port %d is accepting connections.", req.Port)
	case "exit":
		if lw != nil || req.Port != 0 {
			head = "The process ended before the condition held."
		} else {
			head = "The process ended."
		}
	default:
		head = fmt.Sprintf("Timed out after %s ms; the condition did not hold.", strconv.FormatFloat(timeoutMs, 'f', -1, 64))
	}
	if sn.ended {
		d.ExitCode, d.ExitSignal, d.ExitReason = sn.exit.code, sn.exit.signal, sn.exit.reason
	}
	body := strings.TrimRight(text, "\n")
	if body == "" {
		body = "(no new output)"
	}
	return textResult(head+"\n\n"+withNotice(body, dropped)+"\n\n"+exitLine(&sn), d), nil
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
