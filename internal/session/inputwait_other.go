//go:build !linux

package session

// lookReading cannot tell outside Linux.
func (s *Session) lookReading() (Reading, bool) { return ReadingUnknown, false }
