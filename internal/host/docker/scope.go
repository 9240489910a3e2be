package dockerhost

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/bgexec/bgexec/internal/host"
)

// A scope's container (Config.PerScope).
//
// The sessions of one scope run as execs in one container, made at the
// scope's first session and removed by Close. Each session's command
// carries a tag in its environment ([tagKey]), which every process it
// starts inherits, wherever it moves (a new session, a new process group,
// another parent): signals (kill, timeout) and the end of the session
// reach the processes carrying it, and no other session's. A process
// that drops the tag from its environment (env -u, env -i) leaves the
// session's reach; Close still ends it with the container. When the
// session ends, Release sends SIGKILL to whatever of it is left, as the
// end of a container of its own would.

// tagKey is the environment entry that marks the processes of a session
// in a scope's container.
const tagKey = "BGEXEC_SESSION"

// scopeBox holds a scope's container; its mutex serializes the
// container's making, so a scope's first sessions share one.
type scopeBox struct {
	mu  sync.Mutex
	cid string // "" until made
}

// ForScope returns the host that runs scope's sessions: h itself when
// each session gets a container of its own, or with Config.PerScope a
// host whose sessions share the scope's container. Safe for concurrent
// use.
func (h *Host) ForScope(scope string) host.Host {
	if !h.cfg.PerScope {
		return h
	}
	return &scopeHost{Host: h, scope: scope}
}

// scopeHost runs the sessions of one scope in its container.
type scopeHost struct {
	*Host
	scope string
}

// Start runs spec in the scope's container, making the container when the
// scope has none running. On error nothing of spec runs.
func (s *scopeHost) Start(ctx context.Context, spec *host.Spec) (*host.Started, error) {
	dir, ok := s.cfg.containerDir(spec.Dir)
	if !ok {
		return nil, errors.New(s.dirFailure(spec.Dir))
	}
	cid, err := s.scopeContainer(ctx, s.scope)
	if err != nil {
		return nil, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	tag := hex.EncodeToString(b[:])
	base := 0
	if s.cfg.MemoryBytes > 0 {
		// The cap is the scope's: only a kill after this one is this
		// session's.
		out, _, err := s.run(cid, oomScript)
		if err != nil {
			s.forgetContainer(cid) // a container that went away is made again next time
			return nil, fmt.Errorf("docker host: read the OOM count of container %s: %w", shortID(cid), err)
		}
		base, _ = parseOOM(out)
	}
	st, err := s.startExec(ctx, cid, spec, dir, tag)
	if err != nil {
		s.forgetContainer(cid) // a container that went away is made again next time
		return nil, err
	}
	st.Process.(*process).oomBase = base
	return st, nil
}

// scopeContainer returns scope's container, making it when there is none
// or when the one it had no longer runs.
func (h *Host) scopeContainer(ctx context.Context, scope string) (string, error) {
	h.mu.Lock()
	b := h.scopes[scope]
	if b == nil {
		b = &scopeBox{}
		h.scopes[scope] = b
	}
	h.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cid != "" {
		h.mu.Lock()
		_, ok := h.containers[b.cid]
		h.mu.Unlock()
		if ok {
			return b.cid, nil
		}
	}
	cid, err := h.createContainer(ctx)
	if err != nil {
		return "", err
	}
	b.cid = cid
	return cid, nil
}

// forgetContainer removes a scope's container cid when it no longer runs
// an exec, so that the scope's next session makes a new one (see
// scopeContainer).
func (h *Host) forgetContainer(cid string) {
	if _, code, err := h.run(cid, "exit 0"); err == nil && code == 0 {
		return // it runs: the failure was the exec's own
	}
	_ = h.removeContainer(cid) // best effort: Close tries again
}

// killTagged is a script that sends the signal name to every process
// carrying tag, and for repeat (SIGKILL) looks again until none is left
// (5 seconds at most, as processes may fork meanwhile); it prints "gone"
// when none was left. The script's own processes do not carry the tag: it
// is in their arguments, never in their environment. A zombie's
// environment reads empty, so it is not counted. The search is a regular
// expression, not grep -F: busybox's -F stops at an environment's first
// NUL byte, and the key and the hex tag hold no special character.
func killTagged(tag, name string, repeat bool) string {
	again := "break"
	if repeat {
		again = "i=$((i+1)); [ $i -lt 50 ] || break; sleep 0.1"
	}
	return "i=0; while t=$(grep -la " + tagKey + "=" + tag + " /proc/[0-9]*/environ 2>/dev/null); [ -n \"$t\" ]; do " +
		"for f in $t; do f=${f#/proc/}; kill -s " + name + " \"${f%/environ}\" 2>/dev/null; done; " + again + "; done; " +
		"[ -z \"$(grep -la " + tagKey + "=" + tag + " /proc/[0-9]*/environ 2>/dev/null)\" ] && echo gone; "
}

// releaseTagged ends what is left of a session in a scope's container:
// nothing when a SIGKILL already reached all of it (dead), else a SIGKILL
// to every process that carries its tag. The container stays for the
// scope's next session.
func (p *process) releaseTagged(dead bool) error {
	if dead {
		return nil
	}
	out, _, err := p.h.run(p.cid, killTagged(p.tag, "KILL", true)+"exit 0")
	if err != nil {
		return fmt.Errorf("docker host: end the processes of the session in container %s: %w", shortID(p.cid), err)
	}
	if !bytes.Contains(out, []byte("gone\n")) {
		return fmt.Errorf("docker host: processes of the session in container %s outlived SIGKILL", shortID(p.cid))
	}
	return nil
}

// parseOOM reads oomScript's output: the OOM kills it reported; ok is
// false when it reported none (no memory cgroup file could be read).
func parseOOM(out []byte) (n int, ok bool) {
	for _, l := range bytes.Split(out, []byte("\n")) {
		if v, found := bytes.CutPrefix(l, []byte("oom ")); found {
			if n, err := strconv.Atoi(string(bytes.TrimSpace(v))); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}
