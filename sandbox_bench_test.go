//go:build linux

package bgexec

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkSandboxExec runs a foreground exec of `true` on the gateway,
// in a pooled sandbox, in a cold one (the pool off, as before there was
// one), and, as the floor of a cold one, the same bwrap command line run
// directly with os/exec (bwrap's own start: namespaces, mounts, seccomp),
// all in one run. The registries use cgroup containment when this host
// allows it. Before each op, untimed, the pool is full again: an agent's
// commands come seconds apart, and a sandbox sets itself up in a few
// milliseconds (BenchmarkSandboxBurst measures calls that do not wait).
// Each op is also timed alone, and p50-ns and p90-ns are the median and
// 90th percentile of those times; the gateway waits the same way.
func BenchmarkSandboxExec(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bwrap not installed")
	}
	wd := b.TempDir()
	for _, c := range []struct {
		name string
		cfg  Config
		cold bool
	}{
		{"gateway", Config{Shell: benchShell, Workdir: wd}, false},
		{"sandbox", Config{Shell: benchShell, Workdir: wd, Sandbox: &Sandbox{}}, false},
		{"sandbox-cold", Config{Shell: benchShell, Workdir: wd, Sandbox: &Sandbox{}}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			reg := newBenchRegistry(b, c.cfg)
			if c.cold {
				disablePool(reg)
			}
			sc := reg.Scope("bench")
			ctx := context.Background()
			var times []time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				awaitBenchPool(b, reg)
				b.StartTimer()
				t0 := time.Now()
				res, err := sc.Exec(ctx, &ExecRequest{Command: "true"})
				times = append(times, time.Since(t0))
				if err != nil || res.Details.Status != StatusCompleted {
					b.Fatal(err, res)
				}
			}
			reportPercentiles(b, times)
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

// BenchmarkSandboxExecPaired times a gateway exec and a pooled sandboxed
// exec of `true` side by side in each op (the pool full again before it,
// untimed), so both meet the same load; it reports the sandbox's median
// (p50-ns), the gateway's (base-p50-ns) and their ratio (p50-ratio).
func BenchmarkSandboxExecPaired(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bwrap not installed")
	}
	wd := b.TempDir()
	gw := newBenchRegistry(b, Config{Shell: benchShell, Workdir: wd})
	sb := newBenchRegistry(b, Config{Shell: benchShell, Workdir: wd, Sandbox: &Sandbox{}})
	ctx := context.Background()
	var tg, ts []time.Duration
	run := func(reg *Registry, into *[]time.Duration) {
		t0 := time.Now()
		res, err := reg.Scope("bench").Exec(ctx, &ExecRequest{Command: "true"})
		*into = append(*into, time.Since(t0))
		if err != nil || res.Details.Status != StatusCompleted {
			b.Fatal(err, res)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		awaitBenchPool(b, sb)
		b.StartTimer()
		if i%2 == 0 { // each goes first half of the time
			run(gw, &tg)
			run(sb, &ts)
		} else {
			run(sb, &ts)
			run(gw, &tg)
		}
	}
	g, s := percentile(tg, 50), percentile(ts, 50)
	b.ReportMetric(float64(s.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(g.Nanoseconds()), "base-p50-ns")
	if g > 0 {
		b.ReportMetric(float64(s)/float64(g), "p50-ratio")
	}
}

// BenchmarkSandboxBurst runs a burst of sandboxed execs of `true` at once,
// four times as many as the pool holds, with the pool full at the start
// (pooled) and with no pool (cold): one op is the whole burst.
func BenchmarkSandboxBurst(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bwrap not installed")
	}
	wd := b.TempDir()
	for _, cold := range []bool{false, true} {
		name := "pooled"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			reg := newBenchRegistry(b, Config{Shell: benchShell, Workdir: wd, Sandbox: &Sandbox{}})
			n := 4 * reg.hosts.sbx.PoolSize()
			if cold {
				disablePool(reg)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				awaitBenchPool(b, reg)
				b.StartTimer()
				var wg sync.WaitGroup
				errs := make(chan error, n)
				for range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						res, err := reg.Scope("bench").Exec(ctx, &ExecRequest{Command: "true"})
						if err == nil && res.Details.Status != StatusCompleted {
							err = errors.New(res.Text())
						}
						if err != nil {
							errs <- err
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
		})
	}
}

// awaitBenchPool waits until reg's sandbox pool, if it has one, is full.
func awaitBenchPool(b *testing.B, reg *Registry) {
	if reg.hosts.sbx == nil || reg.hosts.sbx.PoolSize() == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := reg.hosts.sbx.AwaitPool(ctx); err != nil {
		b.Fatal("the sandbox pool did not fill: ", err)
	}
}

// reportPercentiles reports the median and 90th percentile of times.
func reportPercentiles(b *testing.B, times []time.Duration) {
	b.ReportMetric(float64(percentile(times, 50).Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(percentile(times, 90).Nanoseconds()), "p90-ns")
}

// percentile is the p-th percentile of times (nearest rank), 0 for none.
func percentile(times []time.Duration, p int) time.Duration {
	if len(times) == 0 {
		return 0
	}
	s := slices.Clone(times)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}
