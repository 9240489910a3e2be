package session

// Streams returns each stream's retained text (Options.SplitStreams),
// and whether the session keeps them; a PTY session's output is all on
// stdout.
func (s *Session) Streams() (stdout, stderr string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out.split == nil {
		return "", "", false
	}
	return s.out.split[Stdout].stringFrom(0), s.out.split[Stderr].stringFrom(0), true
}
