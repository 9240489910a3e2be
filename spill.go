package bgexec

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bgexec/bgexec/internal/session"
)

// Defaults of the spill quotas (Config.SpillDir).
const (
	// DefaultSpillMaxBytesPerSession is the default of
	// Config.SpillMaxBytesPerSession: 64 MiB.
	DefaultSpillMaxBytesPerSession = 64 << 20
	// DefaultSpillMaxBytes is the default of Config.SpillMaxBytes: 512 MiB.
	DefaultSpillMaxBytes = 512 << 20
)

// spillOpts are the resolved spill settings; dir is "" when spilling is off.
type spillOpts struct {
	dir               string
	perSession, total int64
}

// resolveSpill checks Config.SpillDir and its quotas. The directory must
// exist and take a new file now, so a typo fails at NewRegistry rather
// than as a note on the first long output.
func resolveSpill(c *Config) (spillOpts, error) {
	o := spillOpts{perSession: DefaultSpillMaxBytesPerSession, total: DefaultSpillMaxBytes}
	switch {
	case c.SpillMaxBytesPerSession < 0:
		return o, fmt.Errorf("bgexec: Config.SpillMaxBytesPerSession %d: use a positive number of bytes, or 0 for the default", c.SpillMaxBytesPerSession)
	case c.SpillMaxBytes < 0:
		return o, fmt.Errorf("bgexec: Config.SpillMaxBytes %d: use a positive number of bytes, or 0 for the default", c.SpillMaxBytes)
	case c.SpillDir == "":
		return o, nil
	}
	if c.SpillMaxBytesPerSession > 0 {
		o.perSession = c.SpillMaxBytesPerSession
	}
	if c.SpillMaxBytes > 0 {
		o.total = c.SpillMaxBytes
	}
	dir, err := filepath.Abs(c.SpillDir)
	if err != nil {
		return o, fmt.Errorf("bgexec: Config.SpillDir %q: %w", c.SpillDir, err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return o, fmt.Errorf("bgexec: Config.SpillDir %q is not an existing directory", c.SpillDir)
	}
	probe, err := os.CreateTemp(dir, ".bgexec-probe-*")
	if err != nil {
		return o, fmt.Errorf("bgexec: Config.SpillDir %q is not writable: %w", c.SpillDir, err)
	}
	_ = probe.Close()           // Best effort: it is empty.
	_ = os.Remove(probe.Name()) // Best effort: an empty file.
	o.dir = dir
	return o, nil
}

// spillKeeper holds the registry's spill quota and the files of finished
// foreground runs, which outlive their session (it is forgotten as its
// exec returns) for the job TTL, so the agent can still read the file the
// exec result named.
type spillKeeper struct {
	quota session.SpillQuota

	mu     sync.Mutex // guards the fields below
	kept   []keptSpill
	closed bool
}

// keptSpill is a finished foreground run whose file is kept until at.
type keptSpill struct {
	at time.Time
	s  *session.Session
}

// spillSpec is a new session's Options.Spill: nil when spilling is off.
func (r *Registry) spillSpec() *session.SpillSpec {
	o := &r.cfg.spill
	if o.dir == "" {
		return nil
	}
	return &session.SpillSpec{Dir: o.dir, MaxBytes: o.perSession, Quota: &r.spills.quota, QuotaBytes: o.total}
}

// releaseSpill is called as a session is forgotten (r.mu is held; this
// takes only the keeper's lock and does local file calls). A finished
// foreground run whose text was cut keeps its file for the job TTL; every
// other session's file goes now.
func (r *Registry) releaseSpill(s *session.Session) {
	if !s.Spill().On {
		return
	}
	sn := s.Snapshot(0)
	k := &r.spills
	k.mu.Lock()
	if sn.Ended && !sn.Backgrounded && sn.Truncated && !k.closed {
		k.kept = append(k.kept, keptSpill{at: time.Now().Add(r.cfg.ttl), s: s})
		k.mu.Unlock()
		kick(r.sweepKick)
		return
	}
	k.mu.Unlock()
	s.RemoveSpill()
}

// reapSpills deletes the kept files whose time has come and returns the
// wait until the next one (an hour when none is kept).
func (k *spillKeeper) reap(now time.Time) time.Duration {
	k.mu.Lock()
	var due []keptSpill
	for len(k.kept) > 0 && !k.kept[0].at.After(now) {
		due = append(due, k.kept[0])
		k.kept[0] = keptSpill{}
		k.kept = k.kept[1:]
	}
	next := time.Hour
	if len(k.kept) > 0 {
		next = k.kept[0].at.Sub(now)
	}
	k.mu.Unlock()
	for _, e := range due {
		e.s.RemoveSpill()
	}
	return next
}

// close deletes the files of sessions (the registry's, at Close) and the
// kept ones; a file released later is deleted at once.
func (k *spillKeeper) close(sessions []*session.Session) {
	k.mu.Lock()
	kept := k.kept
	k.kept, k.closed = nil, true
	k.mu.Unlock()
	for _, e := range kept {
		e.s.RemoveSpill()
	}
	for _, s := range sessions {
		s.RemoveSpill()
	}
}

// noteSpill names the session's spill file in a result whose text was
// cut: details.outputFile (with outputFileTruncated and, for an
// incomplete file, outputFileIncomplete) and a last paragraph of the text.
func (r *Registry) noteSpill(res *Result, s *session.Session, cut bool) {
	st := s.Spill()
	if !cut || !st.On || st.Removed || (st.Path == "" && st.Stop == "") || len(res.Content) == 0 {
		return // off, gone, or its first bytes are being written right now
	}
	d := &res.Details
	d.OutputFile, d.OutputFileTruncated, d.OutputFileIncomplete = st.Path, ptr(st.Stop != ""), spillWhy(st.Stop, &r.cfg.spill)
	var line string
	switch {
	case st.Path == "":
		line = fmt.Sprintf("[The full output could not be saved to a file: %s.]", d.OutputFileIncomplete)
	case st.Stop != "":
		line = fmt.Sprintf("[The output file %s is incomplete: it holds the first %d bytes of the output; %s.]", st.Path, st.Bytes, d.OutputFileIncomplete)
	default:
		line = fmt.Sprintf("[The full output, with what this text leaves out, is in the file %s (%d bytes).]", st.Path, st.Bytes)
	}
	if sn := s.Snapshot(0); sn.Ended && !sn.Backgrounded {
		line = line[:len(line)-1] + " It is deleted in " + ttlWords(r.cfg.ttl) + ".]"
	} else if st.Path != "" {
		line = line[:len(line)-1] + " It is deleted with the session.]"
	}
	res.Content[0].Text += "\n\n" + line
}

// spillWhy says why a spill file stopped growing ("" when it did not).
func spillWhy(stop string, o *spillOpts) string {
	switch stop {
	case "":
		return ""
	case session.SpillSessionQuota:
		return fmt.Sprintf("the per-session spill quota (%d bytes) was reached", o.perSession)
	case session.SpillRegistryQuota:
		return fmt.Sprintf("the spill quota of all sessions together (%d bytes) was reached", o.total)
	}
	return stop
}

// ttlWords is a TTL for a text: "30 minutes", "90 seconds".
func ttlWords(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%d %s", d/time.Minute, plural(int64(d/time.Minute), "minute", "minutes"))
	}
	return formatSeconds(d) + " seconds"
}

// withSpill is noteSpill for an exec result, whose text was cut when the
// retention cap dropped output.
func (r *Registry) withSpill(res *Result, s *session.Session) *Result {
	r.noteSpill(res, s, s.Snapshot(0).Truncated)
	return res
}
