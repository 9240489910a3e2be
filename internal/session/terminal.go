package session

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// Screen is a rendered copy of a PTY session's terminal.
type Screen struct {
	// Text has one line per row, trailing blanks trimmed and trailing empty
	// rows dropped.
	Text string
	// Cols and Rows are the terminal's size.
	Cols, Rows int
	// CursorRow and CursorCol are the cursor's position, 1-based.
	CursorRow, CursorCol int
	// AlternateScreen reports whether a full-screen program switched to the
	// alternate screen (vim, less, top do).
	AlternateScreen bool
	// Title is the window title the program set last ("" if none).
	Title string
	// Marked is Text with reverse-video, bold and underlined runs marked
	// (see markedLocked); set only when asked for.
	Marked string
}

// terminal is the screen of a PTY session: a terminal emulator fed the raw
// bytes the child writes, before any cleaning. It is created only for PTY
// sessions. Its own lock guards it, so the reader goroutine that feeds it
// and the calls that render or resize it never touch the session's state.
//
// The emulator answers the terminal queries it sees (cursor position,
// device attributes, modes) through a pipe of its own, which one goroutine
// (replies) reads and hands to the session's input. A write into that pipe
// blocks until it is read, so that goroutine must run for as long as the
// emulator is fed; close ends it.
//
// Emulating every byte of a flood costs far more than reading it (each line
// feed at the bottom row moves the whole screen), so long runs of plain text
// are not all fed: see skipper.
type terminal struct {
	mu    sync.Mutex   // guards everything below
	emu   *vt.Emulator // nil once closed
	final Screen       // the last screen, once closed (Marked set)
	title string
	skip  skipper
	out   []byte // bytes to feed at the end of the current write
	// cpr holds the answers to cursor-position queries met by the current
	// write. They are the one query a program may send in a flood (one per
	// line of output), so they skip the emulator's reply pipe and its
	// goroutine handoff: the writer sends them after the write.
	cpr []byte
}

// newTerminal returns a terminal of cols×rows.
func newTerminal(cols, rows int) *terminal {
	t := &terminal{emu: vt.NewEmulator(cols, rows)}
	// The log keeps the history; the emulator's own scrollback would clone
	// every line that scrolls off, for nothing. A zero Scrollback keeps
	// nothing (SetScrollbackSize refuses 0).
	*t.emu.Scrollback() = vt.Scrollback{}
	t.emu.SetCallbacks(vt.Callbacks{Title: func(s string) { t.title = s }})
	// Registered last, so they run before the emulator's own handlers.
	t.emu.RegisterCsiHandler('n', func(params ansi.Params) bool { return t.cursorReport(params, "") })
	t.emu.RegisterCsiHandler(ansi.Command('?', 0, 'n'), func(params ansi.Params) bool { return t.cursorReport(params, "?") })
	t.skip.rows = rows
	return t
}

// cursorReport answers DSR 6 (CPR) and DECXCPR with the cursor position,
// 1-based; other reports are left to the emulator.
func (t *terminal) cursorReport(params ansi.Params, prefix string) bool {
	if n, _, ok := params.Param(0, 0); !ok || n != 6 {
		return false
	}
	pos := t.emu.CursorPosition()
	if len(t.cpr) < maxCPR {
		t.cpr = fmt.Appendf(t.cpr, "\x1b[%s%d;%dR", prefix, pos.Y+1, pos.X+1)
	}
	return true
}

// maxCPR bounds the answers kept from one write: a child that floods
// queries without reading them could not take more anyway (a terminal's
// input buffer holds 4 KiB).
const maxCPR = 4 << 10

// write feeds raw output to the emulator and returns the answers to the
// cursor-position queries in it, which the caller must send (the slice is
// valid until the next write).
func (t *terminal) write(p []byte) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.emu == nil {
		return nil // closed: nothing feeds it any more
	}
	t.cpr = t.cpr[:0]
	t.out = t.skip.route(t.out[:0], p, t.feed)
	t.feed(t.out)
	if cap(t.out) > maxTermScratch {
		t.out = nil
	}
	return t.cpr
}

// maxTermScratch bounds the scratch buffer kept between writes.
const maxTermScratch = 64 << 10

func (t *terminal) feed(p []byte) {
	if len(p) > 0 {
		_, _ = t.emu.Write(p) // never fails while the emulator is open
	}
}

// resize changes the size.
func (t *terminal) resize(cols, rows int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resizeLocked(cols, rows)
}

func (t *terminal) resizeLocked(cols, rows int) {
	if t.emu == nil {
		return // ended: the last screen stays as it was
	}
	t.skip.flush(t.feed)
	t.skip.rows = rows
	t.emu.Resize(cols, rows)
}

// screen renders the current screen; with marked, Marked too.
func (t *terminal) screen(marked bool) Screen {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.emu == nil {
		sc := t.final
		if !marked {
			sc.Marked = ""
		}
		return sc
	}
	sc := t.screenLocked()
	if marked {
		sc.Marked = t.markedLocked()
	}
	return sc
}

func (t *terminal) screenLocked() Screen {
	t.skip.flush(t.feed)
	cols, rows := t.emu.Width(), t.emu.Height()
	pos := t.emu.CursorPosition()
	sc := Screen{
		Cols: cols, Rows: rows,
		CursorRow: pos.Y + 1, CursorCol: pos.X + 1,
		AlternateScreen: t.emu.IsAltScreen(),
		Title:           t.title,
	}
	b := make([]byte, 0, (cols+1)*rows)
	keep := 0 // length of b up to the last non-empty row
	for y := range rows {
		if y > 0 {
			b = append(b, '\n')
		}
		rowStart := len(b)
		end := rowStart // after the last non-blank cell of this row
		for x := range cols {
			c := t.emu.CellAt(x, y)
			switch {
			case c == nil:
				b = append(b, ' ')
			case c.Content == "":
				if c.Width != 0 {
					b = append(b, ' ')
				} // else the second half of a wide character
			case c.Content == " ":
				b = append(b, ' ')
			default:
				b = append(b, c.Content...)
				end = len(b)
			}
		}
		b = b[:end] // trailing blanks
		if end > rowStart {
			keep = end
		}
	}
	sc.Text = string(b[:keep])
	return sc
}

// replySource returns what replies reads. Call it before anything feeds
// the terminal: replies must not take the lock, which a write that waits
// for it to read holds.
func (t *terminal) replySource() io.Reader {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.emu == nil {
		return nil
	}
	return t.emu
}

// replies reads the emulator's answers from src (replySource) until close
// and hands each to answer, which must not block.
func replies(src io.Reader, answer func([]byte)) {
	if src == nil {
		return // closed already
	}
	buf := make([]byte, 256)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			answer(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// close ends replies and keeps only the last screen: an ended session
// may stay listed for the TTL, and the emulator holds megabytes.
func (t *terminal) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.emu == nil {
		return
	}
	// The emulator's input pipe is the write end of what replies reads.
	// Closing it there, rather than through Emulator.Close, keeps the
	// emulator's own closed flag (read by Read without a lock) untouched.
	if pw, ok := t.emu.InputPipe().(*io.PipeWriter); ok {
		_ = pw.CloseWithError(io.EOF) // always nil
	}
	t.final = t.screenLocked()
	t.final.Marked = t.markedLocked()
	t.emu, t.out, t.cpr = nil, nil, nil
	t.skip = skipper{}
}

// Screen renders a PTY session's screen (with marked, Marked too) once it settled (see
// settleLocked), and consumes the pending output it shows, so the next
// poll or wait returns only what came after: input no output has followed yet, or a session that
// printed nothing yet, is first given until d to print; with idle > 0 the
// screen then waits until no output has arrived for idle, counted from the
// later of the call's start, the last input and the last output. It stops
// at the end, after d or when ctx ends; quiet says whether the output
// settled. ok is false for a pipe session, which has no screen.
func (s *Session) Screen(ctx context.Context, idle, d time.Duration, marked bool) (scr Screen, sn Snapshot, quiet, ok bool) {
	if s.term == nil {
		return Screen{}, Snapshot{}, false, false
	}
	start := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	quiet = s.settleLocked(ctx, start, start.Add(d), idle, true, false) // a screen does not report the end
	// Rendered under s.mu: the reader feeds the emulator before it records
	// the text, so all the pending output is on this screen.
	scr = s.term.screen(marked)
	s.shownLocked()
	return scr, s.snapshotLocked(), quiet, true
}

// ResizeRemote resizes a PTY session whose terminal is elsewhere (a node's,
// over SSH): set resizes it while the emulator's lock holds back the
// output, then the emulator takes the new size. Without an emulator it
// only calls set.
func (s *Session) ResizeRemote(cols, rows int, set func() error) error {
	t := s.term
	if t == nil {
		return set()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := set(); err != nil {
		return err
	}
	t.resizeLocked(cols, rows)
	return nil
}

// ResizeTerminal resizes a PTY session's terminal: set resizes the PTY
// (the child then redraws) while the emulator's lock holds back the output,
// so no redraw is fed to the emulator at the old size. It reports false
// (and does not call set) for pipe sessions and after the end.
func (s *Session) ResizeTerminal(cols, rows int, set func(master *os.File) error) (bool, error) {
	if s.term == nil {
		return false, nil
	}
	return s.WithTerminal(func(master *os.File) error {
		t := s.term
		t.mu.Lock()
		defer t.mu.Unlock()
		if err := set(master); err != nil {
			return err
		}
		t.resizeLocked(cols, rows)
		return nil
	})
}
