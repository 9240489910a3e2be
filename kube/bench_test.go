package kube

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"k8s.io/client-go/tools/remotecommand"
)

// The benchmarks run one command through the host (wrapper, report, end
// check and all) beside a bare client-go exec of the same command (the
// same fallback executor, no wrapper, no end check) against the same
// loopback streaming server; the ratio of the two is the host's cost.

func benchCluster(b *testing.B) (*Cluster, *testCluster) {
	tc := newTestCluster(b, "p1")
	c, err := New(Config{REST: tc.rest(), Namespace: "ns", Pod: "p1", StartTimeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c, tc
}

// hostRun runs command through the host and discards its output.
func hostRun(b *testing.B, h *Host, command string) {
	st, err := h.Start(context.Background(), &host.Spec{Command: command})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, r := range st.Outputs {
		wg.Go(func() { _, _ = io.Copy(io.Discard, r) })
	}
	wg.Wait()
	if err := st.Process.AwaitExit(); err != nil {
		b.Fatal(err)
	}
	if ws, err := st.Process.Reap(); err != nil || ws.ExitStatus() != 0 {
		b.Fatalf("status %v, %v", ws, err)
	}
	if err := st.Process.Release(); err != nil {
		b.Fatal(err)
	}
}

// bareRun runs sh -c command by a plain client-go exec.
func bareRun(b *testing.B, c *Cluster, command string) {
	u, err := c.execURL("p1", execRequest{Command: []string{"sh", "-c", command}, Stdout: true, Stderr: true})
	if err != nil {
		b.Fatal(err)
	}
	ex, err := c.executor(u)
	if err != nil {
		b.Fatal(err)
	}
	if err := ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard}); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkExecTrue(b *testing.B) {
	c, _ := benchCluster(b)
	h := c.Host("s")
	b.Run("host", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hostRun(b, h, "true")
		}
	})
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bareRun(b, c, "true")
		}
	})
}

const benchOutput = 100 << 20

func BenchmarkOutput100MB(b *testing.B) {
	c, _ := benchCluster(b)
	h := c.Host("s")
	cmd := "head -c 104857600 /dev/zero"
	b.Run("host", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(benchOutput)
		for b.Loop() {
			hostRun(b, h, cmd)
		}
	})
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(benchOutput)
		for b.Loop() {
			bareRun(b, c, cmd)
		}
	})
}
