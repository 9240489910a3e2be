package session

import "strings"

// readOnlyError is the message of EROFS as the C library spells it.
const readOnlyError = "Read-only file system"

// WithHint returns text with Options.ReadOnlyHint appended on a line of
// its own when text shows the "Read-only file system" error and no
// earlier result of the session got the hint; otherwise text unchanged.
// Safe for concurrent use: the hint is handed out once.
func (s *Session) WithHint(text string) string {
	if s.opts.ReadOnlyHint == "" || !strings.Contains(text, readOnlyError) || !s.hinted.CompareAndSwap(false, true) {
		return text
	}
	return text + "\n" + s.opts.ReadOnlyHint
}
