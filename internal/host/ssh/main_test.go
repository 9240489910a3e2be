package sshhost

import (
	"fmt"
	"net"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// helperEnv makes the test binary a helper process instead of a test run:
// "listen" listens on a loopback TCP port, prints it and waits for its
// stdin to close.
const helperEnv = "SSHHOST_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "listen" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
		_, _ = os.Stdin.Read(make([]byte, 1)) // EOF ends it
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
