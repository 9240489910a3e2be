package bgexec

import (
	"context"
	"sync"

	"github.com/bgexec/bgexec/internal/session"
)

// delivery is what a result took from the registry that must go back when
// the result never reaches the model: the output a poll or wait drained, the exit
// it reported, and the exit notices it carried.
type delivery struct {
	mu      sync.Mutex // guards the lists: a give-back empties them
	drained []drainedFrom
	notices []*session.Session
	// approvalNotes are approval outcome notices the result carried, of
	// scope approvalScope.
	approvalNotes []string
	approvalScope string
}

type drainedFrom struct {
	s  *session.Session
	dr session.Drained
}

// tookDrain records that res carries output drained from s.
func (res *Result) tookDrain(s *session.Session, dr *session.Drained) {
	if res.delivery == nil {
		res.delivery = &delivery{}
	}
	res.delivery.mu.Lock()
	defer res.delivery.mu.Unlock()
	res.delivery.drained = append(res.delivery.drained, drainedFrom{s, *dr})
}

// tookNotices records that res carries the exit notices of these sessions.
func (res *Result) tookNotices(ss []*session.Session) {
	if len(ss) == 0 {
		return
	}
	if res.delivery == nil {
		res.delivery = &delivery{}
	}
	res.delivery.mu.Lock()
	defer res.delivery.mu.Unlock()
	res.delivery.notices = append(res.delivery.notices, ss...)
}

// tookApprovalNotes records that res carries these approval notices.
func (res *Result) tookApprovalNotes(scope string, lines []string) {
	if len(lines) == 0 {
		return
	}
	if res.delivery == nil {
		res.delivery = &delivery{}
	}
	res.delivery.mu.Lock()
	defer res.delivery.mu.Unlock()
	res.delivery.approvalNotes = append(res.delivery.approvalNotes, lines...)
	res.delivery.approvalScope = scope
}

// Undelivered tells the registry that res, a result of this scope's Exec,
// Process or Call, never reached the model: its MCP request was
// cancelled, writing it failed, or the runtime dropped it. What the
// result took is given back: output a poll or wait drained comes again from the
// next poll, in front of newer output (within the pending cap; the
// oldest is dropped, with the usual notice, when it does not fit); an exit
// the poll reported is reported again (by the next poll, or by an exit
// event and the next result's notice, as for any unreported end); exit
// notices the result carried come with the next result. A result that
// took nothing, or was already given back, is a no-op, so calling it
// twice is harmless. Exec, Process and Call give their result back
// themselves when ctx has ended by the time they return, since such a
// result is normally dropped. The error is always nil today; ctx is for
// future stores. Safe for concurrent use.
func (sc *Scope) Undelivered(ctx context.Context, res *Result) error {
	if ctx == nil {
		panic("bgexec: Undelivered with nil context")
	}
	if res == nil || res.delivery == nil {
		return nil
	}
	d := res.delivery
	d.mu.Lock()
	if !d.mine(sc.key) {
		d.mu.Unlock()
		return nil
	}
	drained, notices, approvalNotes := d.drained, d.notices, d.approvalNotes
	d.drained, d.notices, d.approvalNotes = nil, nil, nil // given back once
	d.mu.Unlock()
	sc.reg.giveBackApprovalNotes(sc.key, approvalNotes)
	for _, df := range drained {
		if df.s.Undrain(&df.dr) {
			sc.reg.addNotice(df.s)
			sc.reg.enqueueNote(df.s)
		}
	}
	for _, s := range notices {
		if s.UnclaimNotice() {
			sc.reg.addNotice(s)
		}
	}
	return nil
}

// mine reports whether everything the result took is scope's: another
// scope's result is not its to give back. d.mu is held.
func (d *delivery) mine(scope string) bool {
	for _, df := range d.drained {
		if df.s.Scope() != scope {
			return false
		}
	}
	for _, s := range d.notices {
		if s.Scope() != scope {
			return false
		}
	}
	return len(d.approvalNotes) == 0 || d.approvalScope == scope
}

// giveBackIfCancelled gives res back when ctx ended before the call
// returned: the host that cancelled it will not show it.
func (sc *Scope) giveBackIfCancelled(ctx context.Context, res *Result) {
	if res != nil && res.delivery != nil && ctx.Err() != nil {
		_ = sc.Undelivered(context.WithoutCancel(ctx), res) // never fails
	}
}
