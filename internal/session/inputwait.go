package session

import "time"

// Reading is what a session's foreground processes are doing with its
// input, as far as the operating system tells.
type Reading uint8

// Answers of [Session.ReadingInput].
const (
	// ReadingUnknown: the kernel would not say (another OS, no access to
	// /proc/<pid>/syscall, a node session), or the session has no input.
	ReadingUnknown Reading = iota
	// ReadingNo: no foreground process is blocked reading the input.
	ReadingNo
	// ReadingYes: a foreground process is blocked in a read (or a poll,
	// select or epoll wait) of the session's stdin pipe or terminal.
	ReadingYes
)

// TreeLister is a [Process] that can list the live processes of its
// session (the leader included) without reading every process of the
// host: from its cgroup, or by walking down from the leader. The
// input-wait look asks it which processes to check; a Process that is not
// a TreeLister has only its leader checked.
type TreeLister interface {
	// TreePids lists the session's live processes, the leader first when
	// alive. An incomplete list is allowed (what could not be read is left
	// out).
	TreePids() []int
}

// readingTTL is how long an answer of [Session.ReadingInput] is reused
// while the session neither printed nor was written to.
const readingTTL = 250 * time.Millisecond

// ReadingInput tells whether the session's foreground process is blocked
// reading its input (on Linux, from /proc/<pid>/syscall of the session's
// processes; elsewhere ReadingUnknown). An answer is reused for up to
// 250 ms while no output arrived and no input was sent since it was read,
// so polls and lists in a row ask the kernel once.
func (s *Session) ReadingInput() Reading {
	now := time.Now()
	s.mu.Lock()
	if s.readingAt.After(s.lastOutput) && s.readingAt.After(s.inputAt) && now.Sub(s.readingAt) < readingTTL {
		ans := s.reading
		s.mu.Unlock()
		return ans
	}
	s.mu.Unlock()
	ans, busy := s.lookReading()
	if !busy {
		s.mu.Lock()
		s.readingAt, s.reading = now, ans
		s.mu.Unlock()
	}
	return ans
}

// LastOutput is when the last bytes arrived (the start before any).
func (s *Session) LastOutput() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastOutput
}
