//go:build linux

package bgexec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// numberedLines prints lines "line 0000" … of 10 characters each, under
// any POSIX shell.
func numberedLines(n int) string {
	return fmt.Sprintf(`i=0; while [ $i -lt %d ]; do printf 'line %%04d\n' $i; i=$((i+1)); done`, n)
}

func lineRun(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %04d\n", i)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func TestTruncationHeadTail(t *testing.T) {
	t.Parallel()
	t.Run("an unknown mode fails NewRegistry", func(t *testing.T) {
		_, err := NewRegistry(Config{Truncation: "middle"})
		require.ErrorContains(t, err, `Config.Truncation "middle"`)
	})
	t.Run("an exec result keeps its first and last lines with a marker between", func(t *testing.T) {
		// 1000 characters: a head of 100 (10 lines), the last 900 (90 lines).
		sc := newTestRegistry(t, Config{Truncation: "head-tail", MaxOutputChars: 1000}).Scope("a")
		res := mustExec(t, sc, &ExecRequest{Command: numberedLines(500)})
		require.Equal(t, StatusCompleted, res.Details.Status, res.Text())
		want := lineRun(0, 9) + "\n\n" +
			"[... 400 lines (4000 characters) left out: lines 10-409. They were dropped at the retention cap and cannot be recovered.]\n\n" +
			lineRun(410, 499)
		assert.Equal(t, want, res.Text())
		assert.Equal(t, want, res.Details.Aggregated)
		assert.NotContains(t, res.Text(), discardNotice)
	})
	t.Run("the default keeps the tail with the retention notice", func(t *testing.T) {
		sc := newTestRegistry(t, Config{MaxOutputChars: 1000}).Scope("a")
		res := mustExec(t, sc, &ExecRequest{Command: numberedLines(500)})
		assert.Equal(t, discardNotice+"\n\n"+lineRun(400, 499), res.Text())
	})
	t.Run("output within the caps is not cut", func(t *testing.T) {
		sc := newTestRegistry(t, Config{Truncation: "head-tail", MaxOutputChars: 1000}).Scope("a")
		res := mustExec(t, sc, &ExecRequest{Command: numberedLines(90)})
		assert.Equal(t, lineRun(0, 89), res.Text())
	})
	t.Run("a poll whose buffer dropped output names the log offsets that hold it", func(t *testing.T) {
		reg := newTestRegistry(t, Config{Truncation: "head-tail", PendingMaxOutputChars: 1000})
		sc := reg.Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: numberedLines(500)})
		require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		// The head stops at 50 lines; the tail fills the poll cap (1000).
		want := lineRun(0, 49) + "\n\n" +
			"[... 400 lines (4000 characters) left out: lines 50-449. process log offset=50 limit=400 reads them.]\n\n" +
			lineRun(450, 499) + "\n\nProcess exited with code 0."
		assert.Equal(t, want, res.Text())
		off, lim := 50, 400
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: &off, Limit: &lim})
		assert.Equal(t, lineRun(50, 449), log.Text())
	})
	t.Run("a poll whose window start is gone for good says so", func(t *testing.T) {
		reg := newTestRegistry(t, Config{Truncation: "head-tail", MaxOutputChars: 1000, PendingMaxOutputChars: 1000})
		sc := reg.Scope("a")
		id := startBackground(t, sc, &ExecRequest{Command: numberedLines(500)})
		require.NoError(t, awaitEnd(testCtx(t), sessionOf(reg, id)))
		res := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id})
		want := lineRun(0, 9) + "\n\n" +
			"[... 400 lines (4000 characters) left out: lines 10-409. They were dropped at the retention cap and cannot be recovered.]\n\n" +
			lineRun(410, 499) + "\n\nProcess exited with code 0."
		assert.Equal(t, want, res.Text())
	})
}
