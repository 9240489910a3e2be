//go:build linux

package bgexec

// Peers and physical limits (BENCHMARKS.md): the same work done by
// github.com/go-cmd/cmd, by Node's child_process the way the reference
// TypeScript implementation does it, by os/exec into a bytes.Buffer, and by
// small C programs that do nothing else (bench/spawn.c, bench/readloop.c).
// Each alternates iteration by iteration with bgexec, in the same run.
//
// Node and the C programs time themselves: the benchmark starts them once
// and asks for one run per iteration over a pipe, so their start-up stays
// out of the figures. For them, CPU time and allocations are not this
// process's; readloop reports its own CPU time. A peer whose tool is
// missing (node, cc) is skipped with a message.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gocmd "github.com/go-cmd/cmd"
)

// peerServer is a program that runs the work once for each line on its
// stdin and answers with one line of fields, the first the nanoseconds it
// took: bench/node_*.js and bench/spawn.c.
type peerServer struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

// startPeer starts name with args in bgexec's environment. It is stopped
// (stdin closed, then waited for) when b ends.
func startPeer(b *testing.B, name string, args ...string) *peerServer {
	c := exec.Command(name, args...)
	c.Env = benchEnv(b)
	c.Stderr = os.Stderr
	in, err := c.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = in.Close() // Best effort: the peer ends at EOF.
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				b.Errorf("%s: %v", name, err)
			}
		case <-time.After(time.Minute):
			_ = c.Process.Kill() // Best effort: reaped by the Wait above.
			b.Errorf("%s did not end within a minute of EOF", name)
		}
	})
	return &peerServer{in: in, out: bufio.NewScanner(out)}
}

// ask runs the work once and returns the peer's answer: the time it
// measured and the further fields.
func (p *peerServer) ask(b *testing.B) (time.Duration, []string) {
	if _, err := io.WriteString(p.in, "\n"); err != nil {
		b.Fatal(err)
	}
	if !p.out.Scan() {
		b.Fatalf("peer ended: %v", p.out.Err())
	}
	f := strings.Fields(p.out.Text())
	if len(f) == 0 {
		b.Fatalf("peer said %q", p.out.Text())
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		b.Fatalf("peer said %q", p.out.Text())
	}
	return time.Duration(ns), f[1:]
}

// timeSelf records one operation the base side timed itself.
func (s *benchSide) timeSelf(d, cpu time.Duration) {
	s.self = true
	s.d = append(s.d, d)
	s.cpu += cpu
}

// benchNode returns the path of node, or skips b.
func benchNode(b *testing.B) string {
	path, err := exec.LookPath("node")
	if err != nil {
		b.Skip("node is not installed (apt-get install -y nodejs): the Node peer is skipped")
	}
	return path
}

// benchCBinary returns the compiled bench/<name>.c: from BGEXEC_BENCH_CBIN
// (bench/run.sh compiles them there), else compiled with cc into a
// temporary directory. Without either it skips b.
func benchCBinary(b *testing.B, name string) string {
	if dir := os.Getenv("BGEXEC_BENCH_CBIN"); dir != "" {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		b.Skipf("no C compiler (cc) and no BGEXEC_BENCH_CBIN: the C baseline %s is skipped", name)
	}
	path := filepath.Join(b.TempDir(), name)
	if out, err := exec.Command(cc, "-O2", "-o", path, filepath.Join("bench", name+".c")).CombinedOutput(); err != nil {
		b.Fatalf("cc bench/%s.c: %v\n%s", name, err, out)
	}
	return path
}

// BenchmarkExecPeers is BenchmarkExec (process-group containment) against
// other ways to run `sh -c true` in the foreground, same shell and
// environment. No targets; the ratio is bgexec over the peer.
//
//   - gocmd: github.com/go-cmd/cmd, NewCmd (output buffered) and Start.
//   - node: child_process.spawn as the reference does (bench/node_spawn.js).
//   - c-posix_spawn: posix_spawn and waitpid from C, output to /dev/null
//     (bench/spawn.c): the physical limit.
func BenchmarkExecPeers(b *testing.B) {
	b.Run("gocmd", func(b *testing.B) {
		env := benchEnv(b)
		sc := newBenchRegistry(b, Config{Containment: ContainmentOff}).Scope("bench")
		var p benchPair
		lib := func() { benchExec(b, sc, &ExecRequest{Command: "true"}, StatusCompleted) }
		base := func() {
			c := gocmd.NewCmd(benchShell, "-c", "true")
			c.Env = env
			if st := <-c.Start(); st.Error != nil || st.Exit != 0 {
				b.Fatalf("go-cmd: %v exit %d", st.Error, st.Exit)
			}
		}
		for i := 0; b.Loop(); i++ {
			p.run(i, base, lib)
		}
		p.reportTime(b)
	})
	for _, peer := range []struct {
		name string
		args func(b *testing.B) []string
	}{
		{"node", func(b *testing.B) []string { return []string{benchNode(b), "bench/node_spawn.js", benchShell} }},
		{"c-posix_spawn", func(b *testing.B) []string { return []string{benchCBinary(b, "spawn"), benchShell} }},
	} {
		b.Run(peer.name, func(b *testing.B) {
			args := peer.args(b)
			srv := startPeer(b, args[0], args[1:]...)
			sc := newBenchRegistry(b, Config{Containment: ContainmentOff}).Scope("bench")
			var p benchPair
			lib := func() { benchExec(b, sc, &ExecRequest{Command: "true"}, StatusCompleted) }
			for i := 0; b.Loop(); i++ {
				alternate(i,
					func() { d, _ := srv.ask(b); p.base.timeSelf(d, 0) },
					func() { p.timeLib(lib) })
			}
			p.reportTime(b)
		})
	}
}

// benchIngestPeers adds BenchmarkIngestPipe's peers and limit: the same
// producer (`sh -c cmdline`) read to the end by bgexec and, alternating,
// by the peer. No targets; the ratio is bgexec's MB/s over the peer's.
//
//   - peer=osexec-buffer: os/exec with stdout and stderr into bytes.Buffers.
//   - peer=gocmd: go-cmd/cmd, NewCmd (buffered, line by line) and Start.
//   - peer=node-bytes: Node counting the bytes of each chunk.
//   - peer=node-reference: Node handling output as the reference does
//     (decode, clean, cap the pending chunks, keep the last 200,000
//     characters of aggregate+chunk).
//   - limit=c-readloop: C, a 1 MiB pipe read with 1 MiB reads
//     (bench/readloop.c): the physical limit. It reports its CPU time.
func benchIngestPeers(b *testing.B, size int64, cmdline, tail string) {
	b.Run("peer=osexec-buffer", func(b *testing.B) {
		env := benchEnv(b)
		sc := newBenchRegistry(b, Config{Containment: ContainmentOff}).Scope("bench")
		var p benchPair
		lib := ingestExec(b, sc, cmdline, false, size, tail)
		base := func() {
			var out, errb bytes.Buffer
			c := exec.Command(benchShell, "-c", cmdline)
			c.Env = env
			c.Stdout, c.Stderr = &out, &errb
			if err := c.Run(); err != nil || int64(out.Len()) != size {
				b.Fatalf("os/exec: %v, %d bytes, want %d", err, out.Len(), size)
			}
		}
		for i := 0; b.Loop(); i++ {
			p.run(i, base, lib)
		}
		p.reportThroughput(b, size)
	})
	b.Run("peer=gocmd", func(b *testing.B) {
		env := benchEnv(b)
		sc := newBenchRegistry(b, Config{Containment: ContainmentOff}).Scope("bench")
		var p benchPair
		lib := ingestExec(b, sc, cmdline, false, size, tail)
		base := func() {
			c := gocmd.NewCmd(benchShell, "-c", cmdline)
			c.Env = env
			st := <-c.Start()
			if st.Error != nil || st.Exit != 0 || int64(len(st.Stdout)) != (size+99)/100 {
				b.Fatalf("go-cmd: %v exit %d, %d lines, want %d", st.Error, st.Exit, len(st.Stdout), (size+99)/100)
			}
		}
		for i := 0; b.Loop(); i++ {
			p.run(i, base, lib)
		}
		p.reportThroughput(b, size)
	})
	for _, mode := range []string{"bytes", "reference"} {
		b.Run("peer=node-"+mode, func(b *testing.B) {
			srv := startPeer(b, benchNode(b), "bench/node_pipe.js", mode, benchShell, cmdline)
			sc := newBenchRegistry(b, Config{Containment: ContainmentOff}).Scope("bench")
			var p benchPair
			lib := ingestExec(b, sc, cmdline, false, size, tail)
			for i := 0; b.Loop(); i++ {
				alternate(i,
					func() {
						d, f := srv.ask(b)
						if len(f) != 1 || f[0] != strconv.FormatInt(size, 10) {
							b.Fatalf("node read %v bytes, want %d", f, size)
						}
						p.base.timeSelf(d, 0)
					},
					func() { p.timeLib(lib) })
			}
			p.reportThroughput(b, size)
		})
	}
	b.Run("limit=c-readloop", func(b *testing.B) {
		bin := benchCBinary(b, "readloop")
		env := benchEnv(b)
		sc := newBenchRegistry(b, Config{Containment: ContainmentOff}).Scope("bench")
		var p benchPair
		var pipeSize int
		lib := ingestExec(b, sc, cmdline, false, size, tail)
		base := func() {
			c := exec.Command(bin, strconv.Itoa(1<<20), benchShell, cmdline)
			c.Env = env
			c.Stderr = os.Stderr
			out, err := c.Output()
			var n, ns, cpu int64
			if err == nil {
				_, err = fmt.Sscanf(string(out), "%d %d %d %d", &n, &ns, &cpu, &pipeSize)
			}
			if err != nil || n != size {
				b.Fatalf("readloop: %v: %q, want %d bytes", err, out, size)
			}
			p.base.timeSelf(time.Duration(ns), time.Duration(cpu))
		}
		for i := 0; b.Loop(); i++ {
			alternate(i, base, func() { p.timeLib(lib) })
		}
		p.reportThroughput(b, size)
		b.ReportMetric(float64(pipeSize), "base-pipe-bytes")
	})
}
