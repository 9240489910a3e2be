//go:build linux

package bgexec

import (
	"context"
	"testing"
	"time"

	sshhost "github.com/bgexec/bgexec/internal/host/ssh"
)

// BenchmarkNodeExec measures a foreground `true` on a node (the test's
// own sshd on loopback) against its baseline, the same remote command
// run with a bare x/crypto/ssh session on an open connection: what bgexec
// adds is the wrapper, the start report, the final kill and the check
// that nothing is left.
func BenchmarkNodeExec(b *testing.B) {
	d := startSSHD(b)
	reg, err := NewRegistry(Config{Host: "node", Nodes: map[string]Node{"n1": d.node()}, YieldMs: MaxYieldMs})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = reg.Close(ctx)
	})
	ctx := context.Background()
	sc := reg.Scope("bench")
	b.Run("bgexec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := sc.Exec(ctx, &ExecRequest{Command: "true"})
			if err != nil || res.Details.Status != StatusCompleted {
				b.Fatal(err, res.Text())
			}
		}
	})
	b.Run("baseline ssh session", func(b *testing.B) {
		c, err := reg.nodes.(*sshhost.Pool).Client("n1")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			s, err := c.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Run("true"); err != nil {
				b.Fatal(err)
			}
			_ = s.Close()
		}
	})
}
