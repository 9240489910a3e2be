package dockerhost

import (
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// benchPair times a base and the host iteration by iteration, in
// alternation, and reports both and their ratio (host over base).
type benchPair struct{ host, base time.Duration }

func (p *benchPair) run(i int, base, lib func()) {
	first, second, d1, d2 := base, lib, &p.base, &p.host
	if i%2 == 1 {
		first, second, d1, d2 = lib, base, &p.host, &p.base
	}
	t0 := time.Now()
	first()
	t1 := time.Now()
	second()
	*d1 += t1.Sub(t0)
	*d2 += time.Since(t1)
}

func (p *benchPair) report(b *testing.B, n int) {
	b.ReportMetric(float64(p.host.Nanoseconds())/float64(n), "host-ns/op")
	b.ReportMetric(float64(p.base.Nanoseconds())/float64(n), "base-ns/op")
	b.ReportMetric(float64(p.host)/float64(p.base), "ratio")
}

// hostRun runs command on h (a host or a scope's host) to its end,
// discarding its output.
func hostRun(b *testing.B, h host.Host, command string) {
	st, err := h.Start(context.Background(), &host.Spec{Command: command})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, st.Outputs[1]); close(done) }()
	_, _ = io.Copy(io.Discard, st.Outputs[0]) // ends with the stream
	<-done
	_ = st.Process.AwaitExit() // ends: the stream ended
	ws, err := st.Process.Reap()
	if err != nil || ws.ExitStatus() != 0 {
		b.Fatalf("%q: %v, status %v", command, err, ws)
	}
	if err := st.Process.SignalGroup(9); err != nil { // as the session engine does at the end
		b.Fatal(err)
	}
	if err := st.Process.Release(); err != nil {
		b.Fatal(err)
	}
}

// bareExec runs command in container cid with the engine client alone,
// as `docker exec` does: create, attach, copy the streams, inspect.
func bareExec(b *testing.B, api *client.Client, cid, command string) {
	ctx := context.Background()
	ex, err := api.ExecCreate(ctx, cid, client.ExecCreateOptions{AttachStdout: true, AttachStderr: true, Cmd: []string{"/bin/sh", "-c", command}})
	if err != nil {
		b.Fatal(err)
	}
	att, err := api.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		b.Fatal(err)
	}
	_, err = stdcopy.StdCopy(io.Discard, io.Discard, att.Reader)
	att.Close()
	if err != nil {
		b.Fatal(err)
	}
	in, err := api.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	if err != nil || in.ExitCode != 0 {
		b.Fatalf("%q: %v, exit %d", command, err, in.ExitCode)
	}
}

// bareContainer creates and starts an idle container as the host does.
func bareContainer(b *testing.B, api *client.Client, image string) string {
	ctx := context.Background()
	res, err := api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: image, Entrypoint: []string{"/bin/sh"}, Cmd: []string{}, OpenStdin: true},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := api.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		b.Fatal(err)
	}
	return res.ID
}

func bareRemove(b *testing.B, api *client.Client, cid string) {
	if _, err := api.ContainerRemove(context.Background(), cid, client.ContainerRemoveOptions{Force: true}); err != nil {
		b.Fatal(err)
	}
}

// benchSetup returns a host of the test daemon with cfg, the engine
// client alone, and a running container for its bare execs; the
// benchmark's cleanup closes and removes them.
func benchSetup(b *testing.B, cfg Config) (h *Host, api *client.Client, cid, image string) {
	daemon, image := testDaemon(b)
	cfg.Daemon, cfg.Image = daemon, image
	h, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := h.Close(); err != nil {
			b.Error(err)
		}
	})
	api, err = client.New(client.WithHost(daemon))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = api.Close() }) // after bareRemove: cleanups run last first
	cid = bareContainer(b, api, image)
	b.Cleanup(func() { bareRemove(b, api, cid) })
	return h, api, cid, image
}

// BenchmarkDockerHost runs a command through the host (a container per
// session, an exec in it) beside the engine client doing the same bare:
//
//   - true/vs-exec: `true`, against one bare exec in a running container
//     (what `docker exec` costs);
//   - true/vs-container-and-exec: `true`, against a bare container create,
//     start, exec and removal (the work the host does per session);
//   - output/vs-exec: 100 MB of output (10 MB with -short), against a bare
//     exec that copies it with stdcopy.
//
// No targets; "ratio" is the host's time over the base's. Allocations
// are those of both sides together.
func BenchmarkDockerHost(b *testing.B) {
	h, api, cid, image := benchSetup(b, Config{})

	b.Run("true/vs-exec", func(b *testing.B) {
		b.ReportAllocs()
		var p benchPair
		n := 0
		for ; b.Loop(); n++ {
			p.run(n, func() { bareExec(b, api, cid, "true") }, func() { hostRun(b, h, "true") })
		}
		p.report(b, n)
	})
	b.Run("true-spare-ready/vs-exec", func(b *testing.B) {
		// As when an agent's calls are seconds apart: the spare made after
		// the last Start is ready (the wait for it is not timed).
		b.ReportAllocs()
		var p benchPair
		n := 0
		for ; b.Loop(); n++ {
			b.StopTimer()
			if !h.awaitSpare(time.Minute) {
				b.Fatal("no spare container within a minute")
			}
			b.StartTimer()
			p.run(n, func() { bareExec(b, api, cid, "true") }, func() { hostRun(b, h, "true") })
		}
		p.report(b, n)
	})
	b.Run("true/vs-container-and-exec", func(b *testing.B) {
		b.ReportAllocs()
		var p benchPair
		n := 0
		for ; b.Loop(); n++ {
			p.run(n, func() {
				c := bareContainer(b, api, image)
				bareExec(b, api, c, "true")
				bareRemove(b, api, c)
			}, func() { hostRun(b, h, "true") })
		}
		p.report(b, n)
	})
	b.Run("output/vs-exec", func(b *testing.B) {
		size := 100 << 20
		if testing.Short() {
			size = 10 << 20
		}
		command := "head -c " + strconv.Itoa(size) + " /dev/zero"
		b.ReportAllocs()
		b.SetBytes(int64(size) * 2) // both sides move it
		var p benchPair
		n := 0
		for ; b.Loop(); n++ {
			p.run(n, func() { bareExec(b, api, cid, command) }, func() { hostRun(b, h, command) })
		}
		p.report(b, n)
	})
}

// BenchmarkDockerPerScope runs `true` in a scope's container (PerScope)
// beside one bare exec in a running container: both sides are one exec,
// and the host adds what a session costs there (the tag, the SIGKILL of
// what is left at the end, which scans the container's /proc). The
// scope's container is made before the timing. No target.
func BenchmarkDockerPerScope(b *testing.B) {
	h, api, cid, _ := benchSetup(b, Config{PerScope: true})
	sc := h.ForScope("bench")
	hostRun(b, sc, "true") // makes the scope's container
	b.Run("true/vs-exec", func(b *testing.B) {
		b.ReportAllocs()
		var p benchPair
		n := 0
		for ; b.Loop(); n++ {
			p.run(n, func() { bareExec(b, api, cid, "true") }, func() { hostRun(b, sc, "true") })
		}
		p.report(b, n)
	})
}
