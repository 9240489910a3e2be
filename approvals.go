package bgexec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bgexec/bgexec/internal/allowlist"
)

// ErrApprovalDeferred is returned (or wrapped) by an [Approver] that
// cannot decide now: exec then returns at once with status
// "approval-pending" and an approval id, and the decision comes later
// through [Scope.Decide].
var ErrApprovalDeferred = errors.New("bgexec: approval deferred")

// ErrUnknownApproval is returned by [Scope.Decide] for an approval id that
// is not pending in that scope: never issued, already decided, expired, or
// another scope's.
var ErrUnknownApproval = errors.New("bgexec: no pending approval with that id")

// StatusApprovalPending is the status of an exec that waits for a
// deferred approval; nothing has run yet.
const StatusApprovalPending Status = "approval-pending"

// Decisions on a pending approval, for [Scope.Decide].
const (
	// DecisionAllowOnce runs the command this once.
	DecisionAllowOnce = "allow-once"
	// DecisionAllowAlways runs it and adds a lasting allowlist rule for
	// it (see [Scope.Decide]).
	DecisionAllowAlways = "allow-always"
	// DecisionDeny refuses it.
	DecisionDeny = "deny"
)

// CheckResult says what an exec call would do, from [Scope.Check].
//
// A CheckResult is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type CheckResult struct {
	// Decision is "run", "refuse" or "approval" (an approver would be
	// asked).
	Decision string `json:"decision"`
	// Reason says why the call would be refused, or why it needs
	// approval; "" for "run".
	Reason string `json:"reason,omitzero"`
}

// ApprovalStore keeps the rules that allow-always decisions add, so they
// last across restarts (Config.ApprovalStore). Its methods may be called
// concurrently with each other.
type ApprovalStore interface {
	// Load returns the rules saved so far; NewRegistry calls it once and
	// fails when it fails.
	Load(ctx context.Context) ([]string, error)
	// Save records one rule (an allowlist entry such as "git status").
	Save(ctx context.Context, rule string) error
}

// pendingApproval is one deferred exec.
type pendingApproval struct {
	id, scope string
	req       ExecRequest
	areq      *ApprovalRequest
	expires   time.Time
}

// approvalBook holds the registry's pending approvals, the rules
// allow-always added, and the approval messages waiting for a scope's
// next result. One timer, armed for the earliest expiry, expires them.
type approvalBook struct {
	mu      sync.Mutex
	pending map[string]*pendingApproval
	rules   []string
	notes   map[string][]string // per scope, for ExitNoticesInResults
	timer   *time.Timer
	closed  bool
	firing  sync.WaitGroup // expiry callbacks in progress
}

// decidedKey marks the context of an exec that runs a decided approval.
type decidedKey struct{}

func isDecided(ctx context.Context) bool { return ctx.Value(decidedKey{}) != nil }

// checker is the allowlist checker with the rules allow-always added.
func (r *Registry) checker() *allowlist.Checker {
	b := &r.approvals
	b.mu.Lock()
	rules := b.rules
	b.mu.Unlock()
	if len(rules) == 0 {
		return r.allow
	}
	c := *r.allow
	c.Entries = append(slices.Clip(c.Entries), rules...)
	return &c
}

// loadApprovalRules reads the stored allow-always rules, at NewRegistry.
func loadApprovalRules(st *settings) ([]string, error) {
	if st.approvals == nil {
		return nil, nil
	}
	rules, err := st.approvals.Load(context.Background())
	if err != nil {
		return nil, fmt.Errorf("bgexec: loading approval rules: %w", err)
	}
	return slices.Clone(rules), nil
}

// Check says, without running anything or calling the approver, what
// Exec would do with req: run it, refuse it (Reason says why, as the
// refusal text would), or ask for approval. It applies the same checks as
// Exec before anything is spawned: the command, the per-call environment,
// the workdir, the host, elevation, security and the allowlist (with the
// rules allow-always added). The error is a Go error only when the call
// could not be made (nil request, registry closed). Safe for concurrent
// use.
func (sc *Scope) Check(ctx context.Context, req *ExecRequest) (*CheckResult, error) {
	if err := sc.begin(ctx, "check", req == nil); err != nil {
		return nil, err
	}
	refuse := func(why string) (*CheckResult, error) { return &CheckResult{Decision: "refuse", Reason: why}, nil }
	if strings.TrimSpace(req.Command) == "" {
		return refuse("Provide a command to start.")
	}
	if msg := sc.reg.env.ValidateOverrides(req.Env); msg != "" {
		return refuse(msg)
	}
	c := &execCall{req: req}
	var msg string
	if c.host, msg = sc.reg.hosts.pick(req, sc.key); msg != "" {
		return refuse(msg)
	}
	cwd := strings.TrimSpace(req.Workdir)
	if !c.host.remote {
		if cwd, _, msg = sc.localWorkdir(c, sc.reg.cfg.workdir); msg != "" {
			return refuse(msg)
		}
	}
	refusal, areq := sc.policyGate(req, cwd)
	switch {
	case refusal != "":
		return refuse(refusal)
	case areq == nil:
		return &CheckResult{Decision: "run"}, nil
	case sc.reg.cfg.approver == nil:
		return refuse(noApprover)
	}
	why := "approval required"
	if areq.Reason != "" {
		why += ": " + areq.Reason
	}
	return &CheckResult{Decision: "approval", Reason: why + " (ask=" + areq.Ask + ")"}, nil
}

// deferExec records a deferred approval and returns the approval-pending
// result.
func (sc *Scope) deferExec(req *ExecRequest, areq *ApprovalRequest) *Result {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
	p := &pendingApproval{
		id: "approval-" + hex.EncodeToString(b[:]), scope: sc.key, req: *req, areq: areq,
		expires: time.Now().Add(sc.reg.cfg.approvalTTL),
	}
	p.req.Env = maps.Clone(req.Env)
	sc.reg.approvals.add(p, sc.reg.expireApprovals)
	text := fmt.Sprintf("Approval required (id %s): %s. Nothing has run yet; the result will follow once it is decided.", p.id, req.Command)
	return textResult(text, Details{
		Status: StatusApprovalPending, ApprovalID: p.id, ExpiresAtMs: p.expires.UnixMilli(),
		AllowedDecisions: []string{DecisionAllowOnce, DecisionAllowAlways, DecisionDeny},
	})
}

// add records p and arms the timer for the earliest expiry.
func (b *approvalBook) add(p *pendingApproval, expire func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending == nil {
		b.pending = make(map[string]*pendingApproval)
	}
	b.pending[p.id] = p
	b.armLocked(expire)
}

// armLocked sets the one timer to the earliest expiry. b.mu is held.
func (b *approvalBook) armLocked(expire func()) {
	if b.closed {
		return
	}
	var next time.Time
	for _, p := range b.pending {
		if next.IsZero() || p.expires.Before(next) {
			next = p.expires
		}
	}
	if next.IsZero() {
		if b.timer != nil {
			b.timer.Stop()
		}
		return
	}
	d := max(time.Until(next), 0)
	if b.timer == nil {
		b.timer = time.AfterFunc(d, expire)
	} else {
		b.timer.Reset(d)
	}
}

// take removes and returns the pending approval id of scope, or nil.
func (b *approvalBook) take(scope, id string, expire func()) *pendingApproval {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pending[id]
	if p == nil || p.scope != scope || b.closed {
		return nil
	}
	delete(b.pending, id)
	b.armLocked(expire)
	return p
}

// expireApprovals is the timer's callback: every approval past its
// expiry is denied, and the timer is armed for the next.
func (r *Registry) expireApprovals() {
	b := &r.approvals
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.firing.Add(1)
	defer b.firing.Done()
	now := time.Now()
	var due []*pendingApproval
	for id, p := range b.pending {
		if !p.expires.After(now) {
			due = append(due, p)
			delete(b.pending, id)
		}
	}
	b.armLocked(r.expireApprovals)
	b.mu.Unlock()
	slices.SortFunc(due, func(a, b *pendingApproval) int { return a.expires.Compare(b.expires) })
	for _, p := range due {
		r.observeApproval(p, DecisionDenied, DecidedByExpiry, "the approval expired after "+r.cfg.approvalTTL.String())
		r.approvalEvent(p.scope, p.id, fmt.Sprintf("Exec denied (approval %s): the approval expired after %s; nothing ran: %s", p.id, r.cfg.approvalTTL, p.req.Command))
	}
}

// closeApprovals drops the pending approvals (no events: the registry is
// closing) and waits for an expiry in progress.
func (r *Registry) closeApprovals() {
	b := &r.approvals
	b.mu.Lock()
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
	}
	b.pending = nil
	b.mu.Unlock()
	b.firing.Wait()
}

// approvalEvent tells the scope's agent the outcome of an approval: an
// event through the Notifier with a heartbeat, and with
// ExitNoticesInResults a notice in the scope's next result.
func (r *Registry) approvalEvent(scope, id, text string) {
	if r.cfg.notices {
		b := &r.approvals
		b.mu.Lock()
		if b.notes == nil {
			b.notes = make(map[string][]string)
		}
		b.notes[scope] = append(b.notes[scope], NoticePrefix+text)
		b.mu.Unlock()
	}
	if n := r.cfg.notifier; n != nil && !r.isClosed() {
		n.SystemEvent(scope, text)
		n.Heartbeat(scope, "exec:"+id+":decided")
	}
}

// takeApprovalNotes returns the approval notices waiting for scope.
func (r *Registry) takeApprovalNotes(scope string) []string {
	b := &r.approvals
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := b.notes[scope]
	delete(b.notes, scope)
	return lines
}

// giveBackApprovalNotes puts approval notices of a result that never
// reached the model back in front of the scope's waiting ones.
func (r *Registry) giveBackApprovalNotes(scope string, lines []string) {
	if len(lines) == 0 {
		return
	}
	b := &r.approvals
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.notes == nil {
		b.notes = make(map[string][]string)
	}
	b.notes[scope] = append(slices.Clone(lines), b.notes[scope]...)
}

// Decide decides a pending approval of this scope (an exec that returned
// status "approval-pending"): "allow-once" runs the command as if the
// exec had been approved then, as a background session; "allow-always"
// does the same and adds a lasting allowlist rule for each command of the
// line that was not allowlisted (its words, such as "git status --short";
// an argument-prefix rule), saved through Config.ApprovalStore when set;
// "deny" refuses it. The outcome reaches the agent as a background
// session's end does: "Exec approved (approval <id>): running as session
// <sessionId>." when it starts (then the session's own exit event), or
// "Exec denied (approval <id>): …" when it is denied, refused by the
// checks made again now, or could not start; through the Notifier (with a
// heartbeat) and, with Config.ExitNoticesInResults, the scope's next
// result. An approval not decided within Config.ApprovalTimeout is denied
// the same way. Where background execution is disabled
// (Config.BackgroundDisabled), Decide runs the command to its end and the
// message carries its result.
//
// Decide returns ErrUnknownApproval for an id that is not pending in this
// scope, an error for a decision that is not one of the three, ErrClosed
// after Close, and the error of ApprovalStore.Save (the command ran and
// the rule holds until restart). ctx bounds the start of the command (not
// the command) and the store's Save. Safe for concurrent use.
func (sc *Scope) Decide(ctx context.Context, approvalID, decision string) error {
	if ctx == nil {
		panic("bgexec: Decide with nil context")
	}
	switch decision {
	case DecisionAllowOnce, DecisionAllowAlways, DecisionDeny:
	default:
		return fmt.Errorf("bgexec: decision %q is not one of %s, %s, %s", decision, DecisionAllowOnce, DecisionAllowAlways, DecisionDeny)
	}
	if sc.reg.isClosed() {
		return ErrClosed
	}
	r := sc.reg
	p := r.approvals.take(sc.key, approvalID, r.expireApprovals)
	if p == nil {
		return fmt.Errorf("%w: %q", ErrUnknownApproval, approvalID)
	}
	if decision == DecisionDeny {
		r.observeApproval(p, DecisionDenied, DecidedByDecide, "deny")
		r.approvalEvent(p.scope, p.id, fmt.Sprintf("Exec denied (approval %s): not approved; nothing ran: %s", p.id, p.req.Command))
		return nil
	}
	var saveErr error
	if decision == DecisionAllowAlways {
		saveErr = r.addApprovalRules(ctx, p.areq)
	}
	req := p.req
	req.Background = true
	res, err := sc.exec(context.WithValue(ctx, decidedKey{}, p.id+" "+decision), &req, &callTrace{id: newCallID()})
	switch {
	case err != nil:
		r.approvalEvent(p.scope, p.id, fmt.Sprintf("Exec denied (approval %s): it could not start (%v); nothing ran: %s", p.id, err, p.req.Command))
		return errors.Join(err, saveErr)
	case res.Details.Status == StatusRunning:
		r.approvalEvent(p.scope, p.id, fmt.Sprintf("Exec approved (approval %s): running as session %s: %s", p.id, res.Details.SessionID, p.req.Command))
	case res.IsError:
		// Refused by the checks made again now, or it could not start.
		r.approvalEvent(p.scope, p.id, fmt.Sprintf("Exec denied (approval %s): %s", p.id, strings.ReplaceAll(res.Text(), "\n", " ")))
	default:
		// Background execution is disabled here: it ran to its end.
		r.approvalEvent(p.scope, p.id, fmt.Sprintf("Exec %s (approval %s): %s", res.Details.Status, p.id, strings.ReplaceAll(res.Text(), "\n", " ")))
	}
	return saveErr
}

// addApprovalRules adds a rule for each command of the line that was not
// allowlisted, and saves it.
func (r *Registry) addApprovalRules(ctx context.Context, areq *ApprovalRequest) error {
	var add []string
	for _, c := range areq.Commands {
		if c.Allowlisted || len(c.Args) == 0 {
			continue
		}
		add = append(add, strings.Join(c.Args, " "))
	}
	if len(add) == 0 && len(areq.Commands) == 0 {
		add = append(add, strings.TrimSpace(areq.Command))
	}
	b := &r.approvals
	b.mu.Lock()
	var fresh []string
	for _, rule := range add {
		if !slices.Contains(b.rules, rule) {
			b.rules = append(b.rules, rule)
			fresh = append(fresh, rule)
		}
	}
	b.mu.Unlock()
	if r.cfg.approvals == nil {
		return nil
	}
	var errs []error
	for _, rule := range fresh {
		if err := r.cfg.approvals.Save(ctx, rule); err != nil {
			errs = append(errs, fmt.Errorf("bgexec: saving approval rule %q: %w", rule, err))
		}
	}
	return errors.Join(errs...)
}
