package bgexec

import (
	"fmt"

	"github.com/bgexec/bgexec/internal/session"
)

// The output buffers themselves live in internal/session: per session, the
// retained text (the last MaxOutputChars code points, cleaned) and, per
// stream, the pending text that the next poll returns. This file holds the
// texts that tell the model what those caps dropped.

// discardNotice starts exec/poll/log texts when output was dropped at the
// retention cap.
const discardNotice = "[earlier output was discarded at the retention cap and cannot be recovered]"

// pollDropNotice starts a poll or wait text when output was dropped only
// from the poll buffer: log still has it.
const pollDropNotice = "[some output since the last poll was dropped from the poll buffer at its cap; it is still retained: use process log to read it]"

// tailChars is the size of the tail shown in running results and list.
const tailChars = 2000

// withNotice prefixes text with the discard notice when dropped is true.
func withNotice(text string, dropped bool) string {
	if !dropped {
		return text
	}
	return discardNotice + "\n\n" + text
}

// withLossNotice prefixes a poll or wait text with what its drain lost.
func withLossNotice(text string, loss session.Loss) string {
	switch loss {
	case session.LostForGood:
		return discardNotice + "\n\n" + text
	case session.LostFromPoll:
		return pollDropNotice + "\n\n" + text
	}
	return text
}

// logDropNotice says which lines the retention cap dropped; log line
// numbers still count from the first line ever printed.
func logDropNotice(firstLine int64) string {
	if firstLine == 1 {
		return "[line 0 was dropped; the log starts at line 1]"
	}
	return fmt.Sprintf("[lines 0-%d were dropped; the log starts at line %d]", firstLine-1, firstLine)
}
