//go:build !linux

package session

// ReadingInput cannot tell outside Linux.
func (s *Session) ReadingInput() Reading { return ReadingUnknown }
