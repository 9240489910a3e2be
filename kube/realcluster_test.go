package kube

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/bgexec/bgexec/internal/host"
)

// TestRealCluster runs the stream checks against a real cluster, through
// its API server and kubelet, when BGEXEC_KUBE_POD names a running pod
// (BGEXEC_KUBE_NAMESPACE, BGEXEC_KUBE_CONTAINER and KUBECONFIG as
// needed; see docs/kubernetes.md). CI has no cluster: it skips there.
func TestRealCluster(t *testing.T) {
	pod := os.Getenv("BGEXEC_KUBE_POD")
	if pod == "" {
		t.Skip("BGEXEC_KUBE_POD is not set: no real cluster to test against")
	}
	c, err := New(Config{Pod: pod, Namespace: os.Getenv("BGEXEC_KUBE_NAMESPACE"), Container: os.Getenv("BGEXEC_KUBE_CONTAINER")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.Host("real")
	t.Run("exit code and streams", func(t *testing.T) { checkExitAndStreams(t, h) })
	t.Run("stdin", func(t *testing.T) { checkStdin(t, h) })
	t.Run("terminal", func(t *testing.T) { checkPTY(t, h) })
	t.Run("kill reaches setsid", func(t *testing.T) {
		st, err := h.Start(context.Background(), &host.Spec{Command: `setsid sh -c 'echo escaped; exec sleep 300' & sleep 300`})
		if err != nil {
			t.Fatal(err)
		}
		go discard(st.Outputs[1])
		out := collect(st.Outputs[0])
		out.waitFor(t, "escaped\n", nil) // printed once setsid(2) returned
		p := st.Process.(*process)
		if err := p.SignalGroup(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		ws, rerr, lerr := finish(t, p)
		if rerr != nil || lerr != nil || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Fatalf("status %v, reap %v, release %v", ws, rerr, lerr)
		}
		left, err := c.control(pod, taggedFunc(p.tag)+"tagged")
		if err != nil || strings.TrimSpace(left) != "" {
			t.Fatalf("tagged processes left: %q (%v)", left, err)
		}
	})
}
