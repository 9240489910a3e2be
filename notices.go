package bgexec

import (
	"slices"
	"strings"

	"github.com/bgexec/bgexec/internal/session"
)

// NoticePrefix starts every exit notice line that
// [Config.ExitNoticesInResults] puts before a tool result's text.
const NoticePrefix = "[bgexec] "

// addNotice keeps an ended session for its scope's next tool result, when
// notices are on and its end is to be told by an event (no call reported
// it, and the skip rules of exit events do not apply).
func (r *Registry) addNotice(s *session.Session) {
	if !r.cfg.notices || !s.EventDue() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.sessions[s.ID()] != s { // cleared meanwhile
		return
	}
	if r.notices == nil {
		r.notices = make(map[string][]*session.Session)
	}
	r.notices[s.Scope()] = append(r.notices[s.Scope()], s)
}

// dropNoticeLocked forgets the pending notice of a forgotten session, so
// the list never keeps a session reachable past its TTL. r.mu is held.
func (r *Registry) dropNoticeLocked(s *session.Session) {
	list := r.notices[s.Scope()]
	if i := slices.Index(list, s); i >= 0 {
		list = slices.Delete(list, i, i+1)
		if len(list) == 0 {
			delete(r.notices, s.Scope())
		} else {
			r.notices[s.Scope()] = list
		}
	}
}

// takeNotices returns the exit notice lines due in the scope's next
// result and marks them shown. A session whose end a poll, wait or kill
// reported meanwhile yields none: the choice between the two is the
// session's, made under its lock. The notice of the session named keep
// stays for the result after this one.
func (r *Registry) takeNotices(scope, keep string) ([]string, []*session.Session) {
	r.mu.Lock()
	list := r.notices[scope]
	delete(r.notices, scope)
	if i := slices.IndexFunc(list, func(s *session.Session) bool { return s.ID() == keep }); i >= 0 {
		r.notices[scope] = []*session.Session{list[i]}
		list = slices.Delete(list, i, i+1)
	}
	r.mu.Unlock()
	var lines []string
	var from []*session.Session
	for _, s := range list {
		if sn, ok := s.ClaimNotice(); ok {
			lines = append(lines, NoticePrefix+exitEventText(s.ID(), &sn.Exit, sn.Tail))
			from = append(from, s)
		}
	}
	return lines, from
}

// withNotices puts the scope's due exit notices before res's text, one
// line each and a blank line. A nil res (the call could not be made)
// carries none; they stay for the next result. Nor does a result that
// reports a session running carry that session's notice, which is there
// when the session ended just after the result's status was taken: the
// notice comes with the next result, so one result never says both.
func (sc *Scope) withNotices(res *Result) *Result {
	if res == nil || !sc.reg.cfg.notices {
		return res
	}
	keep := ""
	if res.Details.Status == StatusRunning {
		keep = res.Details.SessionID
	}
	lines, from := sc.reg.takeNotices(sc.key, keep)
	approvals := sc.reg.takeApprovalNotes(sc.key)
	lines = append(lines, approvals...)
	if len(lines) == 0 {
		return res
	}
	res.tookNotices(from)
	res.tookApprovalNotes(sc.key, approvals)
	head := strings.Join(lines, "\n") + "\n\n"
	if len(res.Content) == 0 {
		res.Content = []Content{{Type: "text", Text: strings.TrimSuffix(head, "\n\n")}}
		return res
	}
	res.Content[0].Text = head + res.Content[0].Text
	return res
}
