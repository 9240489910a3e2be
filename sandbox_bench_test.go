//go:build linux

package bgexec

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkSandboxExec runs a foreground exec of `true` in the sandbox and
// on the gateway, and, as the floor, the same bwrap command line run
// directly with os/exec (bwrap's own start: namespaces, mounts, seccomp),
// all in one run. The sandbox and gateway registries both use cgroup
// containment when this host allows it.
func BenchmarkSandboxExec(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bwrap not installed")
	}
	wd := b.TempDir()
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"gateway", Config{Shell: benchShell, Workdir: wd}},
		{"sandbox", Config{Shell: benchShell, Workdir: wd, Sandbox: &Sandbox{}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			reg, err := NewRegistry(c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_ = reg.Close(ctx) // Best effort: every session ended.
			})
			sc := reg.Scope("bench")
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := sc.Exec(ctx, &ExecRequest{Command: "true"})
				if err != nil || res.Details.Status != StatusCompleted {
					b.Fatal(err, res)
				}
			}
		})
	}
	b.Run("raw-bwrap", func(b *testing.B) {
		reg, err := NewRegistry(Config{Shell: benchShell, Sandbox: &Sandbox{}})
		if err != nil {
			b.Fatal(err)
		}
		p := reg.cfg.sandbox
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = reg.Close(ctx) // Best effort: it never spawned.
		shell, err := exec.LookPath(benchShell)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			// What a spawn does besides bwrap: open the directories it
			// binds and the filter.
			path, args, files, _, err := p.Command([]string{shell, "-c", "true"}, wd, false, false, nil)
			if err != nil {
				b.Fatal(err)
			}
			cmd := &exec.Cmd{Path: path, Args: args, Dir: wd, ExtraFiles: files}
			err = cmd.Run()
			for _, f := range cmd.ExtraFiles {
				_ = f.Close()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
