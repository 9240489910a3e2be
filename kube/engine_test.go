package kube

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
)

// runSession starts spec on h under the session engine, as the tool layer
// does, and returns the session and the WaitGroup of its goroutines.
func runSession(t *testing.T, h *Host, spec *host.Spec, timeout time.Duration) (*session.Session, *sync.WaitGroup) {
	t.Helper()
	st, err := h.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	s := session.New(session.Options{
		ID: "kube-test", Command: spec.Command, PTY: spec.PTY, Cols: int(spec.Cols), Rows: int(spec.Rows),
		StartedAt: time.Now(), Timeout: timeout, KillGrace: 2 * time.Second, DrainTimeout: 2 * time.Second,
		MaxChars: 1 << 20, PendingChars: 1 << 20, Proc: st.Process, Outputs: st.Outputs, Stdin: st.Stdin,
		Pool: &session.ChunkPool{}, Goroutines: &wg,
	})
	s.Start()
	t.Cleanup(wg.Wait)
	return s, &wg
}

func awaitEnd(t *testing.T, s *session.Session) session.Snapshot {
	t.Helper()
	within(t, "session end", func() struct{} { <-s.Done(); return struct{}{} })
	_, sn := s.Aggregated()
	return sn
}

func TestEngineTimeoutKillsSession(t *testing.T) {
	h, _, _ := newTestHost(t)
	// The shell ignores SIGTERM: the grace period's SIGKILL ends it.
	s, _ := runSession(t, h, &host.Spec{Command: `trap '' TERM; echo up; sleep 300 & wait; sleep 300`}, time.Second)
	sn := awaitEnd(t, s)
	if sn.Exit.Reason != session.ReasonTimeout || sn.Status != session.Failed {
		t.Fatalf("end %+v; want a timeout", sn.Exit)
	}
	if sn.Exit.Signal != "SIGKILL" || sn.Exit.Leftover != nil {
		t.Fatalf("signal %q, leftover %v; want SIGKILL and nothing left", sn.Exit.Signal, sn.Exit.Leftover)
	}
	if out, _ := s.Aggregated(); !strings.Contains(out, "up") {
		t.Fatalf("output %q", out)
	}
}

func TestEngineKillAndExit(t *testing.T) {
	h, _, _ := newTestHost(t)
	s, _ := runSession(t, h, &host.Spec{Command: `echo hi; exec sleep 300`}, 0)
	deadline := time.Now().Add(waitLimit)
	for out, _ := s.Aggregated(); !strings.Contains(out, "hi"); out, _ = s.Aggregated() {
		if time.Now().After(deadline) {
			t.Fatal("no output")
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Terminate(session.ReasonKilled)
	sn := awaitEnd(t, s)
	if sn.Exit.Reason != session.ReasonKilled || sn.Exit.Signal != "SIGTERM" {
		t.Fatalf("end %+v; want killed by SIGTERM", sn.Exit)
	}

	s, _ = runSession(t, h, &host.Spec{Command: `echo done; exit 4`}, 0)
	sn = awaitEnd(t, s)
	if sn.Exit.Reason != session.ReasonExit || sn.Exit.Code == nil || *sn.Exit.Code != 4 {
		t.Fatalf("end %+v; want exit 4", sn.Exit)
	}
	// 128+15 that the host did not cause is an exit code, not SIGTERM.
	s, _ = runSession(t, h, &host.Spec{Command: `exit 143`}, 0)
	sn = awaitEnd(t, s)
	if sn.Exit.Reason != session.ReasonExit || sn.Exit.Code == nil || *sn.Exit.Code != 143 || sn.Exit.Signal != "" {
		t.Fatalf("end %+v; want exit 143", sn.Exit)
	}
}

// TestCloseKillsRunningSessions: Close ends what still runs in the pod.
func TestCloseKillsRunningSessions(t *testing.T) {
	h, c, _ := newTestHost(t)
	s, _ := runSession(t, h, &host.Spec{Command: `sleep 300`}, 0)
	within(t, "close", func() error { return c.Close() })
	sn := awaitEnd(t, s)
	if sn.Exit.Signal != "SIGKILL" {
		t.Fatalf("end %+v; want SIGKILL", sn.Exit)
	}
	if _, err := h.Start(context.Background(), &host.Spec{Command: "true"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("start after Close: %v", err)
	}
}

// TestWebSocketFirst: every exec asks for a WebSocket first; the kubelet's
// streaming server speaks WebSocket only up to v4 and refuses client-go's
// v5, so the same exec follows on SPDY.
func TestWebSocketFirst(t *testing.T) {
	h, _, tc := newTestHost(t)
	s, _ := runSession(t, h, &host.Spec{Command: `true`}, 0)
	awaitEnd(t, s)
	tc.mu.Lock()
	ups := append([]string(nil), tc.upgrades...)
	tc.mu.Unlock()
	// One exec: the wrapper's trailer confirmed the end, so no end check
	// followed.
	if len(ups) != 2 || !strings.EqualFold(ups[0], "websocket") || !strings.EqualFold(ups[1], "SPDY/3.1") {
		t.Fatalf("upgrades %q; want websocket, then SPDY/3.1, and nothing more", ups)
	}
}

// TestSelectorSpreadsScopes: with a label selector, each scope gets a
// running pod of its own while there are free ones, and keeps it.
func TestSelectorSpreadsScopes(t *testing.T) {
	tc := newTestCluster(t, "pa", "pb")
	c, err := New(Config{REST: tc.rest(), Namespace: "ns", Selector: "app=sandbox", StartTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	where := func(scope string) string {
		s, _ := runSession(t, c.Host(scope), &host.Spec{Command: `pwd`}, 0)
		awaitEnd(t, s)
		out, _ := s.Aggregated()
		return strings.TrimSpace(out)
	}
	pa, pb := tc.pods["pa"], tc.pods["pb"]
	a, b, a2 := where("a"), where("b"), where("a")
	if a != pa || b != pb || a2 != a {
		t.Fatalf("scope a ran in %q then %q, scope b in %q; want %q, %q", a, a2, b, pa, pb)
	}
	// Its pod gone, scope a moves to one that runs.
	tc.removePod("pa")
	if a3 := where("a"); a3 != pb {
		t.Fatalf("scope a ran in %q after its pod went; want %q", a3, pb)
	}
}

// TestPortOpenInPod: the port check reads the pod's sockets (the test
// runtime's "pod" shares this machine's network).
func TestPortOpenInPod(t *testing.T) {
	h, _, _ := newTestHost(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	s, _ := runSession(t, h, &host.Spec{Command: `sleep 300`}, 0)
	pp, ok := s.Process().(host.PortProber)
	if !ok {
		t.Fatal("no host.PortProber")
	}
	if !pp.PortOpen(context.Background(), port) {
		t.Fatalf("port %d listens, PortOpen says no", port)
	}
	_ = ln.Close()
	if pp.PortOpen(context.Background(), port) {
		t.Fatalf("port %d closed, PortOpen says it listens", port)
	}
	s.Terminate(session.ReasonKilled)
	awaitEnd(t, s)
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{{}, {Pod: "p", Selector: "a=b"}} {
		if _, err := New(cfg); err == nil {
			t.Fatalf("New(%+v) accepted", cfg)
		}
	}
	tc := newTestCluster(t, "p1")
	c, err := New(Config{REST: tc.rest(), Pod: "missing", StartTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Host("").Start(context.Background(), &host.Spec{Command: "true"})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("start in a missing pod: %v", err)
	}
}
