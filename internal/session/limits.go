package session

// LimitReporter is an optional interface of a Process that runs under
// resource limits (a memory cgroup). OOMKilled is asked once, after the
// leader was reaped and before Release, and reports whether the kernel's
// OOM killer ended a process of the session.
type LimitReporter interface {
	OOMKilled() bool
}

func limitHit(p Process) bool {
	l, ok := p.(LimitReporter)
	return ok && l.OOMKilled()
}

// markOOMLocked records an end caused by the memory limit. It overrides
// only ends the command caused itself (an exit or a signal): a kill, a
// timeout or a removal asked for by someone keeps its reason. A command
// that exited with code 0 although one of its processes was OOM-killed
// (`hog || true`) succeeded and stays an exit. s.mu must be held.
func (s *Session) markOOMLocked() {
	e := &s.exit
	if e.Reason != ReasonExit && e.Reason != ReasonSignal {
		return
	}
	if e.Reason == ReasonExit && e.Code != nil && *e.Code == 0 {
		return
	}
	e.Reason, e.MemoryLimit = ReasonOOM, s.opts.MemoryLimit
}

// RetainedBytes is the memory the session's output holds now, in bytes:
// the retained text's array, the pending chunks and the partial line.
func (s *Session) RetainedBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.retainedBytes()
}

// TrimRetained cuts the retained output of an ended session to its last
// keep code points, and drops the output no poll has taken (it stays in
// the kept part if it was recent). What is cut counts as discarded at the
// retention cap, so log and poll show their notices, and line numbers
// stay those of the first line ever printed. It returns the bytes freed;
// a running session is left alone and 0 returned.
func (s *Session) TrimRetained(keep int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		return 0
	}
	before := s.out.retainedBytes()
	s.out.trim(keep)
	return before - s.out.retainedBytes()
}

// NoteListeners records the TCP ports the session was last seen listening
// on (":3000" each), for the text of its end. Safe for concurrent use.
func (s *Session) NoteListeners(ports []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.listeners = append(s.listeners[:0:0], ports...)
	}
}

// Listeners returns the ports last recorded by NoteListeners.
func (s *Session) Listeners() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.listeners...)
}

// retainedBytes counts the memory held by the buffers.
func (o *output) retainedBytes() int64 {
	n := int64(cap(o.agg.buf)) + int64(cap(o.linePrefix)) + int64(cap(o.pending.spare))
	for _, c := range o.pending.chunks {
		n += int64(cap(c.mem))
	}
	return n
}

// trim keeps the last keep code points of the aggregate and drops the
// pending output, recording it as lost for good.
func (o *output) trim(keep int) {
	if o.agg.runes > keep {
		o.agg.trimTo(keep)
	}
	for _, c := range o.pending.chunks {
		o.pending.lose(c.start)
	}
	o.pending.chunks, o.pending.runes, o.pending.spare = nil, [2]int{}, nil
	o.linePrefix, o.prefixAt = nil, -1
}

// trimTo drops all but the last keep code points into a new, exactly
// sized array, so the old one can be freed.
func (r *runeRing) trimTo(keep int) {
	over := r.runes - keep
	off := r.offsetOf(over)
	gone := r.countNewlines(0, off)
	r.newlines -= gone
	r.droppedNewlines += int64(gone)
	r.dropped += int64(over)
	kept := []byte(r.stringFrom(off))
	if len(kept) == 0 {
		kept = nil
	}
	r.buf, r.head, r.size, r.runes = kept, 0, len(kept), keep
	r.viewed, r.cacheOK, r.cache = false, false, ""
}
