//go:build linux

// Package testhelper holds the child programs of the tests that need no
// part of bgexec: a process that prints, hangs, ignores SIGTERM, echoes its
// stdin, listens on a port or floods its output. The tests run them from a
// small binary built once per test process (Build), not by re-executing
// the test binary: a race-built test binary costs about 0.3 s of CPU to
// start, which hundreds of helper processes per suite added up to minutes
// of CPU. The test binaries also answer the same commands (Run), for a
// run where the go tool is not there to build the small binary.
package testhelper

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Has reports whether cmd is one of this package's commands.
func Has(cmd string) bool {
	_, ok := lookup(cmd)
	return ok
}

// Run runs the helper command cmd with its arguments rest and returns its
// exit code, or false when cmd is not one of this package's commands.
func Run(cmd string, rest []string) (code int, ok bool) {
	f, ok := lookup(cmd)
	if !ok {
		return 0, false
	}
	return f(rest), true
}

// forever blocks until the process is killed. It sleeps rather than
// blocking on nothing, which the runtime would end as a deadlock in this
// small binary, where no other goroutine runs.
func forever() int {
	for {
		time.Sleep(time.Hour)
	}
}

// lookup returns the command cmd.
func lookup(cmd string) (func(rest []string) int, bool) {
	switch cmd {
	case "echo":
		return func(rest []string) int {
			fmt.Println(strings.Join(rest, " "))
			return 0
		}, true
	case "stderr":
		return func(rest []string) int {
			fmt.Fprintln(os.Stderr, strings.Join(rest, " "))
			return 0
		}, true
	case "exit":
		return func(rest []string) int {
			n, _ := strconv.Atoi(rest[0])
			fmt.Println("exiting", n)
			return n
		}, true
	case "hang":
		return func(rest []string) int {
			// Prints ready, then waits to be killed.
			fmt.Println("ready")
			return forever()
		}, true
	case "ignore-term":
		return func(rest []string) int {
			signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
			fmt.Println("ready")
			return forever()
		}, true
	case "trap-exit0":
		return func(rest []string) int {
			// Exits 0 on SIGTERM, like a server with a graceful shutdown.
			c := make(chan os.Signal, 1)
			signal.Notify(c, syscall.SIGTERM)
			fmt.Println("ready")
			<-c
			return 0
		}, true
	case "grandchild":
		return func(rest []string) int {
			// Starts a hanging grandchild in the same process group and prints its pid.
			c := exec.Command(os.Args[0], "hang")
			c.Env = os.Environ()
			if err := c.Start(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Println("grandchild", c.Process.Pid)
			return forever()
		}, true
	case "lines":
		return func(rest []string) int {
			n, _ := strconv.Atoi(rest[0])
			w := bufio.NewWriter(os.Stdout)
			for i := range n {
				fmt.Fprintf(w, "line %d\n", i)
			}
			_ = w.Flush()
			return 0
		}, true
	case "cat":
		return func(rest []string) int {
			_, _ = io.Copy(os.Stdout, os.Stdin)
			fmt.Println("[eof]")
			return 0
		}, true
	case "read-stdin":
		return func(rest []string) int {
			// Reports whether stdin is at EOF at once.
			b := make([]byte, 1)
			n, err := os.Stdin.Read(b)
			fmt.Printf("read n=%d err=%v\n", n, err)
			return 0
		}, true
	case "no-read":
		return func(rest []string) int {
			// Never reads stdin.
			fmt.Println("ready")
			return forever()
		}, true
	case "env":
		return func(rest []string) int {
			for _, k := range rest {
				v, ok := os.LookupEnv(k)
				fmt.Printf("%s=%q %v\n", k, v, ok)
			}
			return 0
		}, true
	case "pieces":
		return func(rest []string) int {
			// Prints rest[0], waits until a line arrives on stdin, prints rest[1].
			fmt.Print(rest[0])
			_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
			fmt.Println(rest[1])
			return forever()
		}, true
	case "listen":
		return func(rest []string) int {
			// Opens a TCP port after reading a line from stdin, then prints it.
			_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Println("port", l.Addr().(*net.TCPAddr).Port)
			for {
				c, err := l.Accept()
				if err != nil {
					return 0
				}
				_ = c.Close()
			}
		}, true
	case "print-block":
		return func(rest []string) int {
			// Writes N bytes of 100-byte text lines from a precomputed 1 MiB
			// block, so the child costs little next to its reader (benchmarks).
			n, _ := strconv.ParseInt(rest[0], 10, 64)
			var sb strings.Builder
			for i := 0; sb.Len() < 1<<20-100; i++ {
				fmt.Fprintf(&sb, "%08d %90s\n", i, "build step ok: compiling package and running checks")
			}
			block := []byte(sb.String())
			for n > 0 {
				k := int(min(n, int64(len(block))))
				if _, err := os.Stdout.Write(block[:k]); err != nil {
					return 1
				}
				n -= int64(k)
			}
			return 0
		}, true
	case "stamp-lines":
		return func(rest []string) int {
			// For each line read on stdin, prints CLOCK_MONOTONIC in ns taken
			// just before the write (latency benchmarks).
			in := bufio.NewReader(os.Stdin)
			for {
				if _, err := in.ReadString('\n'); err != nil {
					return 0
				}
				var ts unix.Timespec
				_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
				fmt.Println(ts.Nano())
			}
		}, true
	case "setpgid-sleep":
		return func(rest []string) int {
			// Leaves the session's process group, reports its pid, then sleeps.
			if err := syscall.Setpgid(0, 0); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Println("setpgid", os.Getpid())
			time.Sleep(10 * time.Minute)
			return 0
		}, true
	case "flood-text":
		return func(rest []string) int {
			// Prints rest[0] bytes of very long lines mixed with invalid UTF-8.
			return flood(rest, longBlock(), true)
		}, true
	case "flood-controls":
		return func(rest []string) int {
			// Prints rest[0] bytes of control characters and escape sequences only.
			return flood(rest, controlBlock(), false)
		}, true
	}
	return nil, false
}

// longBlock is 1 MiB of text without a newline: ASCII, valid multi-byte
// code points and invalid UTF-8 (stray continuation bytes, truncated
// sequences, encoded surrogates, 0xff).
var longBlock = sync.OnceValue(func() []byte {
	unit := "plain ascii 0123456789 \xff é \xc3 € \xed\xa0\x80 😀 \x80\x80 漢字 \xf0\x9f z\t"
	b := make([]byte, 0, 1<<20)
	for len(b)+len(unit) <= 1<<20 {
		b = append(b, unit...)
	}
	return b
})

// controlBlock is about 1 MiB of escape sequences and controls that a
// terminal would not show as text; every sequence is whole.
var controlBlock = sync.OnceValue(func() []byte {
	seqs := []string{
		"\x1b[31m", "\x1b[0m", "\x1b[2J", "\x1b[H", "\x1b[?25l", "\x1b[?1049h", "\x1b[1;2;3;4;5m",
		"\x1b]0;a window title\x07", "\x1b]8;;http://example.com\x1b\\", "\x1bP1$r0m\x1b\\",
		"\x07", "\x08", "\x00", "\x01", "\x7f", "\x0e", "\x0f", "\x1b(B", "\x1b=", "\x1b7", "\x1b8",
		"\xc2\x9b31m", "\xe2\x80\x8b", "\xc2\x85", "\x1b[>c", "\x1b_app\x1b\\", "\x1b[38;5;200m",
	}
	b := make([]byte, 0, 1<<20+64)
	for i := 0; len(b) < 1<<20; i++ {
		b = append(b, seqs[i%len(seqs)]...)
	}
	return b
})

// flood writes at least n bytes as whole blocks: block repeated, with
// every fourth block on stderr; for text, a newline after every eighth
// block, so lines are about 8 MiB long.
func flood(rest []string, block []byte, newlines bool) int {
	n, err := strconv.ParseInt(rest[0], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for i := int64(0); i*int64(len(block)) < n; i++ {
		w := os.Stdout
		if i%4 == 3 {
			w = os.Stderr
		}
		if _, err := w.Write(block); err != nil {
			return 1
		}
		if newlines && i%8 == 7 {
			_, _ = w.Write([]byte("\nshort line\n"))
		}
	}
	return 0
}
