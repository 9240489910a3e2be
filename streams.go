package bgexec

import (
	"strings"

	"github.com/bgexec/bgexec/internal/session"
)

// parseStreams reads exec's streams parameter; a non-empty message is a
// failure text.
func parseStreams(req *ExecRequest) (split bool, msg string) {
	switch strings.ToLower(strings.TrimSpace(req.Streams)) {
	case "", "merged":
		return false, ""
	case "split":
		if req.PTY {
			return false, `streams "split" needs pipes: a PTY has one stream. Omit pty, or omit streams.`
		}
		return true, ""
	}
	return false, `Invalid streams "` + req.Streams + `": use "merged" or "split".`
}

// streamsOf returns a split session's stdout and stderr for details, nil
// when the session does not keep them apart.
func streamsOf(s *session.Session) (stdout, stderr *string) {
	out, errText, ok := s.Streams()
	if !ok {
		return nil, nil
	}
	return &out, &errText
}
