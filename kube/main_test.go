package kube

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain is goleak.VerifyTestMain with more patience: spdystream's
// shutdown of a closed connection waits up to a second to hand its close
// error over and then ends by itself, so leaks are looked for over five
// seconds before they count.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		var err error
		for range 50 {
			// klog's flush daemon is client-go's, started once for the process.
			if err = goleak.Find(goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1")); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "goleak: Errors on successful test run:", err)
			code = 1
		}
	}
	os.Exit(code)
}
