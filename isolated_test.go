//go:build linux

package bgexec

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// isolatedEnv names the one test that a re-executed test binary runs alone.
const isolatedEnv = "BGEXEC_ISOLATED_TEST"

// runsHere reports whether t's body runs in this process. In the test
// binary re-executed for t it does. Elsewhere runsHere marks t parallel,
// runs t again alone in a test binary of its own, passes on that run's
// output and verdict, and returns false. It is for tests that count what
// belongs to the whole process (goroutines, descriptors, threads, child
// processes): alone they see only their own, while the other tests run
// beside them instead of waiting for them.
func runsHere(t *testing.T) bool {
	t.Helper()
	if os.Getenv(isolatedEnv) == t.Name() {
		return true
	}
	t.Parallel()
	startIsolated(t, isolatedEnv+"="+t.Name()).report(t)
	return false
}

// isolatedRun is a test run again, alone, in a test binary of its own.
type isolatedRun struct {
	done chan struct{}
	out  []byte
	err  error
}

// startIsolated re-executes the test binary to run t's test alone, with env
// added to its environment, and returns at once. The run ends by the test
// binary's deadline, and is killed at the end of t if it is still going.
func startIsolated(t *testing.T, env string) *isolatedRun {
	t.Helper()
	deadline := time.Now().Add(30 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-30 * time.Second) // leave time to report
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	args := []string{"-test.run=^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count=1", "-test.v",
		"-test.timeout=" + time.Until(deadline).Round(time.Second).String()}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), env)
	cmd.WaitDelay = 10 * time.Second
	r := &isolatedRun{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.out, r.err = cmd.CombinedOutput()
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// report waits for the run, which its deadline bounds, and passes on its
// output and verdict. Each line of the output is marked, so that its
// "--- PASS" lines are not taken for this binary's own results.
func (r *isolatedRun) report(t *testing.T) {
	t.Helper()
	<-r.done
	t.Logf("the isolated run:\n| %s", strings.ReplaceAll(strings.TrimSpace(string(r.out)), "\n", "\n| "))
	require.NoError(t, r.err, "the isolated run failed")
}
