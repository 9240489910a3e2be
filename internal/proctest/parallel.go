package proctest

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
)

// SetParallelPerCPU lets perCPU parallel tests run per CPU unless
// -test.parallel is given (go test's default is one per CPU). It is for
// packages whose parallel tests spend their time waiting on child
// processes, terminals, sandboxes or daemons rather than on the test
// process's CPU: at one per CPU the cores sat mostly idle while the tests
// waited. TestMain calls it before m.Run; it parses the command line.
func SetParallelPerCPU(perCPU int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(perCPU*runtime.GOMAXPROCS(0))); err != nil {
		fmt.Fprintln(os.Stderr, "test.parallel:", err)
		os.Exit(2)
	}
}
