//go:build linux

package bgexec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// printCRs prints a line ended by CRLF, one ended by a lone CR and one
// ended by LF.
const printCRs = `printf 'a\r\nb\rc\n'`

func TestPTYLineEndsAreLF(t *testing.T) {
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")

	t.Run("a foreground run's text has LF line ends", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: printCRs, PTY: true})
		assert.Equal(t, "a\nb\nc", res.Text())
		assert.Equal(t, "a\nb\nc", res.Details.Aggregated)
	})

	t.Run("without the terminal's own CRs too", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: "stty -onlcr; " + printCRs, PTY: true})
		assert.Equal(t, "a\nb\nc", res.Text())
	})

	t.Run("poll, log, list and the running text show the lines a, b and c", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: printCRs + "; sleep 30", PTY: true, YieldMs: ptr(1000.0)})
		require.Equal(t, StatusRunning, res.Details.Status, res.Text())
		id := res.Details.SessionID
		if res.Details.Tail != "" {
			assert.Equal(t, "a\nb\nc\n", res.Details.Tail)
			assert.True(t, strings.HasSuffix(res.Text(), "\n\nOutput so far:\na\nb\nc"), res.Text())
		}
		poll := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(10000))})
		assert.Equal(t, "a\nb\nc\n\nProcess still running.", poll.Text())
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0)})
		assert.Equal(t, "a\nb\nc", log.Text())
		list := mustProcess(t, sc, &ProcessRequest{Action: "list"})
		assert.NotContains(t, list.Text(), "\r")
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("a CRLF split between two writes is one line end", func(t *testing.T) {
		// The LF is printed only after the poll saw the CR: the line
		// written then releases the read (not echoed, with -echo).
		id := startPTY(t, sc, `stty -onlcr -echo; printf 'x\r'; read _; printf '\ny\n'; sleep 30`)
		first := mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(10000))})
		require.Equal(t, "x\n\nProcess still running.", first.Text(), "the CR is not held back")
		mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "\n"})
		waitFor(t, sc, id, `^y$`)
		log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0)})
		assert.Equal(t, "x\ny", log.Text(), "no empty line between x and y")
		assert.Equal(t, ptr(int64(len("x\ny\n"))), log.Details.TotalChars, "counts are of the text kept")
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("a wait pattern matches a line without its line end", func(t *testing.T) {
		id := startPTY(t, sc, printCRs+"; sleep 30")
		res := waitFor(t, sc, id, `^b$`)
		assert.True(t, strings.HasPrefix(res.Text(), "Pattern matched: b\n\n"), res.Text())
		mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
	})

	t.Run("a progress bar's steps are lines", func(t *testing.T) {
		res := mustExec(t, sc, &ExecRequest{Command: `printf '\r10%%\r50%%\r100%%\n'`, PTY: true})
		assert.Equal(t, "10%\n50%\n100%", res.Text())
	})
}

func TestPipeLineEndsAreKept(t *testing.T) {
	reg := newTestRegistry(t, Config{})
	sc := reg.Scope("a")

	res := mustExec(t, sc, &ExecRequest{Command: printCRs})
	assert.Equal(t, "a\r\nb\rc", res.Text(), "the bytes as printed")

	id := startBackground(t, sc, &ExecRequest{Command: printCRs + "; sleep 30"})
	waitFor(t, sc, id, `^b\rc$`)
	log := mustProcess(t, sc, &ProcessRequest{Action: "log", SessionID: id, Offset: ptr(0)})
	assert.Equal(t, "a\nb\rc", log.Text(), "log drops only the CR of CRLF")
	mustProcess(t, sc, &ProcessRequest{Action: "kill", SessionID: id})
}
