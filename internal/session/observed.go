package session

// OutputBytes is how many bytes the command printed so far, on every
// stream, terminal escape sequences included.
func (s *Session) OutputBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rawBytes
}
