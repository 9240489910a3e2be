//go:build linux

package bgexec

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
)

// setParallelDefault lets two parallel tests run per CPU unless
// -test.parallel is given. The parallel tests spend their time waiting on
// child processes, terminals, sandboxes and sshd, not on this process's
// CPU: at go test's default of one per CPU the cores sat mostly idle while
// the tests waited. Four per CPU starved a CPU-bound test on a loaded
// machine. TestMain calls it before the tests run.
func setParallelDefault() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0))); err != nil {
		fmt.Fprintln(os.Stderr, "test.parallel:", err)
		os.Exit(2)
	}
}
