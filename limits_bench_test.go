//go:build linux

package bgexec

import (
	"testing"
)

// BenchmarkExecLimits runs `true` in the foreground in a cgroup with the
// three limits set (memory, tasks, CPU) and, alternating, in a cgroup of
// a registry whose limits were taken away before its first spawn (no v1
// directories, no limit files): the same Exec otherwise. On a hybrid
// host this prices the thread-locked fork into the cgroup v1 hierarchies
// and their directories; on a cgroup v2 host, the limit files. It also
// prices the resource view: one list of a scope holding 10 running
// sessions (BenchmarkExecLimits/list), against the same list without
// resources.
func BenchmarkExecLimits(b *testing.B) {
	if !benchCgroups() {
		b.Skip("cgroup v2 containment is not available here")
	}
	cfg := Config{Containment: ContainmentRequired, Limits: Limits{MemoryBytes: 256 << 20, Tasks: 256, CPU: 1}}
	b.Run("exec", func(b *testing.B) {
		lim := newBenchRegistry(b, cfg).Scope("bench")
		bare := newBenchRegistry(b, cfg)
		// Before any spawn: bare session cgroups, without the limits'
		// Attach.
		bare.hosts.machine.DropLimits()
		base := bare.Scope("bench")
		var p benchPair
		for i := 0; b.Loop(); i++ {
			p.run(i,
				func() { benchExec(b, base, &ExecRequest{Command: "true"}, StatusCompleted) },
				func() { benchExec(b, lim, &ExecRequest{Command: "true"}, StatusCompleted) })
		}
		p.reportTime(b)
	})
	b.Run("list", func(b *testing.B) {
		reg := newBenchRegistry(b, cfg)
		sc := reg.Scope("bench")
		for range 10 {
			benchExec(b, sc, &ExecRequest{Command: "sleep 600", Background: true}, StatusRunning)
		}
		var p benchPair
		for i := 0; b.Loop(); i++ {
			p.run(i,
				func() { listWithoutResources(sc) },
				func() { benchProcess(b, sc, &ProcessRequest{Action: "list"}) })
		}
		p.reportTime(b)
	})
}

// listWithoutResources is the list action's work without the resource
// view: the same snapshots and text lines.
func listWithoutResources(sc *Scope) {
	for _, l := range sc.reg.list(sc.key) {
		_ = l.s.ID() + string(l.sn.Status) + compactDuration(l.sn.Runtime) + l.s.Name()
	}
}
