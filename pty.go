package bgexec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
)

// Default PTY geometry (in columns and rows) and terminal type (the TERM
// a PTY session gets when the host's environment has none).
const (
	DefaultPTYCols = 120
	DefaultPTYRows = 30
	DefaultTERM    = "xterm-256color"
)

// Terminal size bounds for resize, in columns or rows, inclusive.
const (
	MinPTYSize = 1
	MaxPTYSize = 1000
)

func (sc *Scope) resize(_ context.Context, s *session.Session, req *ProcessRequest) (*Result, error) {
	if req.Cols < MinPTYSize || req.Cols > MaxPTYSize || req.Rows < MinPTYSize || req.Rows > MaxPTYSize {
		return failure(fmt.Sprintf("Invalid size %dx%d: pass cols and rows from 1 to 1000.", req.Cols, req.Rows)), nil
	}
	if !s.PTY() {
		return failure("Session " + s.ID() + " has no terminal; resize needs a session started with pty:true."), nil
	}
	if r := inputCheck(s); r != nil {
		return r, nil
	}
	if rz, ok := s.Process().(host.Resizer); ok {
		// A node's terminal: the size goes over the SSH channel.
		if err := s.ResizeRemote(req.Cols, req.Rows, func() error { return rz.Resize(uint16(req.Cols), uint16(req.Rows)) }); err != nil {
			return failure(fmt.Sprintf("Resizing session %s failed: %v", s.ID(), err)), nil
		}
		return textResult(fmt.Sprintf("Resized session %s to %dx%d.", s.ID(), req.Cols, req.Rows), Details{Status: StatusRunning, SessionID: s.ID()}), nil
	}
	found, err := s.ResizeTerminal(req.Cols, req.Rows, func(master *os.File) error {
		return setWinsize(master, uint16(req.Cols), uint16(req.Rows))
	})
	if !found {
		// It ended after inputCheck: the owner released the terminal.
		return failure("No active session found for " + s.ID()), nil
	}
	if err != nil {
		return failure(fmt.Sprintf("Resizing session %s failed: %v", s.ID(), err)), nil
	}
	return textResult(fmt.Sprintf("Resized session %s to %dx%d.", s.ID(), req.Cols, req.Rows), Details{Status: StatusRunning, SessionID: s.ID()}), nil
}

// maxCanonLine is how many bytes a Linux terminal in canonical mode keeps
// per input line (N_TTY_BUF_SIZE - 1); the rest of a longer line is dropped.
const maxCanonLine = 4095

// canonicalKept is how many bytes of data a canonical-mode terminal keeps:
// each line is cut at maxCanonLine bytes, its newline kept.
func canonicalKept(data []byte) int {
	kept := 0
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return kept + min(len(data), maxCanonLine)
		}
		kept += min(i, maxCanonLine) + 1
		data = data[i+1:]
	}
	return kept
}

// runningTail is the output so far in the running text of an exec: tail
// (details.tail) without its trailing line ends. On a PTY it is at most
// the last waitTailLines lines, as a wait's new output is, with a line
// naming the log lines before them: a terminal shows its last screenful,
// and a flood or a full-screen program's redraws would otherwise reach the
// model as up to 2000 characters of raw stream. lines is the number of log
// lines printed when tail was read (an unfinished last line counts).
func runningTail(s *session.Session, tail string, lines int64) string {
	text := strings.TrimRight(tail, "\r\n")
	if !s.PTY() || strings.Count(text, "\n") < waitTailLines {
		return text
	}
	cut := len(text)
	for range waitTailLines {
		cut = strings.LastIndexByte(text[:cut], '\n')
	}
	// Empty lines trimmed off the end are log lines too.
	end := lines - int64(max(len(tail)-len(text)-1, 0))
	earlier := max(end-waitTailLines, 0)
	return fmt.Sprintf("[%d earlier lines not shown: process log offset 0 limit %d]\n", earlier, earlier) + text[cut+1:]
}
