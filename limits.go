package bgexec

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bgexec/bgexec/internal/contain"
	"github.com/bgexec/bgexec/internal/session"
)

// Limits are the resource limits of each session, applied through the
// session's cgroup (see the package documentation's "Limits and the
// resource view" section, and docs/containment.md for the controller files
// used on cgroup v2 and hybrid hosts). Node sessions get none of them. The zero value
// means no memory and CPU limit and the default task limit.
// [Registry.Containment] says which limits are in force.
//
// A Limits is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type Limits struct {
	// MemoryBytes is the memory limit of each session in bytes (memory.max;
	// memory.limit_in_bytes on a cgroup v1 memory hierarchy), swap
	// included. When it is hit the kernel kills a process of the session,
	// which then ends "failed" with exitReason "oom". 0 means no limit;
	// negative is refused by NewRegistry.
	MemoryBytes int64
	// Tasks is the number of processes and threads each session may have
	// at once (pids.max): past it, fork and clone fail in the session with
	// EAGAIN, and other sessions and the host are not affected. 0 means
	// [DefaultTasks]; -1 means no limit of its own.
	//
	// Sessions' tasks count against the host's own cgroup too. When a
	// pids.max above the host limits tasks (a systemd service's TasksMax),
	// NewRegistry reads the tightest one, keeps a reserve for the host's
	// own threads (a quarter of that limit, at least 64, beyond what is
	// in use then) and gives the sessions together the rest, at least 8:
	// it becomes the registry cgroup's pids.max, and caps this limit; the
	// default is capped to half of it, so that other sessions can start
	// beside a runaway one. [ContainmentReport].TaskBudget shows it.
	// Each registry takes its budget at its own NewRegistry: two
	// registries in one host share the reserve, and the second sees the
	// first one's sessions as in use.
	Tasks int
	// CPU is the CPU time each session may use, in cores (cpu.max;
	// cfs_quota_us/cfs_period_us on cgroup v1): 1.5 is one and a half
	// cores' worth per 100 ms period. A session over it is throttled, not
	// killed. 0 means no limit; negative is refused by NewRegistry.
	CPU float64
}

// Defaults of the limits and quotas.
const (
	// DefaultTasks is the task limit (pids.max) of each session when
	// Limits.Tasks is 0.
	DefaultTasks = 4096
	// DefaultMaxSessions is how many sessions may run at once in a
	// registry, foreground runs included, when Config.MaxSessions is 0.
	DefaultMaxSessions = 1024
	// DefaultMaxSessionsPerScope is how many sessions may run at once in
	// one scope when Config.MaxSessionsPerScope is 0.
	DefaultMaxSessionsPerScope = 64
	// DefaultMaxOutputBytes is the budget in bytes for the output all
	// sessions retain together, when Config.MaxOutputBytes is 0 (1 GiB).
	DefaultMaxOutputBytes = 1 << 30
)

// trimKeepChars is how much of a finished session's output is kept when
// the output budget trims it: the list tail.
const trimKeepChars = tailChars

// limitSettings is the resolved form of the limit and quota fields.
type limitSettings struct {
	limits       Limits // Tasks resolved: -1 none, else the limit
	tasksSet     bool   // Limits.Tasks was given (not the default)
	maxSessions  int
	maxPerScope  int
	maxTimeout   time.Duration // 0: none
	outputBudget int64
	logger       *slog.Logger
}

// resolveLimits checks and resolves the limit and quota fields of c.
func resolveLimits(c *Config) (limitSettings, error) {
	l := limitSettings{
		limits:       c.Limits,
		tasksSet:     c.Limits.Tasks != 0,
		maxSessions:  DefaultMaxSessions,
		maxPerScope:  DefaultMaxSessionsPerScope,
		outputBudget: DefaultMaxOutputBytes,
		logger:       c.Logger,
	}
	if l.logger == nil {
		l.logger = slog.Default()
	}
	lim := c.Limits
	switch {
	case lim.MemoryBytes < 0:
		return l, fmt.Errorf("bgexec: Limits.MemoryBytes %d: use a positive number of bytes, or 0 for no limit", lim.MemoryBytes)
	case lim.MemoryBytes > 0 && lim.MemoryBytes < 1<<20:
		return l, fmt.Errorf("bgexec: Limits.MemoryBytes %d: at least 1 MiB (1048576) is needed to start a shell", lim.MemoryBytes)
	case lim.Tasks < -1:
		return l, fmt.Errorf("bgexec: Limits.Tasks %d: use a positive count, 0 for the default (%d) or -1 for no limit", lim.Tasks, DefaultTasks)
	case math.IsNaN(lim.CPU) || math.IsInf(lim.CPU, 0) || lim.CPU < 0:
		return l, fmt.Errorf("bgexec: Limits.CPU %v: use a positive number of cores, or 0 for no limit", lim.CPU)
	case lim.CPU > 0 && lim.CPU*contain.CPUPeriod < 1000:
		return l, fmt.Errorf("bgexec: Limits.CPU %v: the smallest quota is 0.01 cores", lim.CPU)
	}
	if lim.Tasks == 0 {
		l.limits.Tasks = DefaultTasks
	}
	switch {
	case c.MaxSessions < 0:
		return l, fmt.Errorf("bgexec: MaxSessions %d: use a positive count, or 0 for the default (%d)", c.MaxSessions, DefaultMaxSessions)
	case c.MaxSessions > 0:
		l.maxSessions = c.MaxSessions
	}
	switch {
	case c.MaxSessionsPerScope < 0:
		return l, fmt.Errorf("bgexec: MaxSessionsPerScope %d: use a positive count, or 0 for the default (%d)", c.MaxSessionsPerScope, DefaultMaxSessionsPerScope)
	case c.MaxSessionsPerScope > 0:
		l.maxPerScope = c.MaxSessionsPerScope
	}
	switch v := c.MaxTimeoutSec; {
	case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
		return l, fmt.Errorf("bgexec: MaxTimeoutSec %v: use a positive number of seconds, or 0 for no cap", v)
	case v > 0:
		l.maxTimeout = time.Duration(min(v, maxTimeoutSec) * float64(time.Second))
	}
	switch {
	case c.MaxOutputBytes < 0:
		return l, fmt.Errorf("bgexec: MaxOutputBytes %d: use a positive number of bytes, or 0 for the default (1 GiB)", c.MaxOutputBytes)
	case c.MaxOutputBytes > 0:
		l.outputBudget = c.MaxOutputBytes
	}
	return l, nil
}

// capTimeout applies MaxTimeoutSec to a call's timeout (0: none). The
// warning is set when the call asked for more, or for none.
func capTimeout(t, limit time.Duration, requested *float64) (time.Duration, string) {
	if limit <= 0 || (t > 0 && t <= limit) {
		return t, ""
	}
	asked := "no timeout"
	if t > 0 {
		asked = formatSeconds(t) + " seconds"
	}
	if requested == nil {
		// The configured default: NewRegistry capped it already, so only a
		// default of "none" gets here. Capped without a warning: the call
		// asked for nothing.
		return limit, ""
	}
	return limit, fmt.Sprintf("Warning: the timeout is capped at %s seconds by the host (requested: %s).", formatSeconds(limit), asked)
}

// capWait applies MaxTimeoutSec to how long a poll or wait blocks, so no
// call runs longer than the cap; silently, since the call ends early with
// its usual "still running" answer.
func capWait(d, limit time.Duration) time.Duration {
	if limit > 0 {
		return min(d, limit)
	}
	return d
}

// quotas counts the running sessions, in all and per scope, so that an
// exec beyond MaxSessions or MaxSessionsPerScope is refused before
// anything is spawned. A slot is taken before the spawn and given back
// when the session ends (or the spawn failed). Safe for concurrent use.
type quotas struct {
	mu      sync.Mutex // guards the fields below
	running int
	byScope map[string]int
}

// take reserves a slot for scope, or returns the refusal text.
func (q *quotas) take(scope string, maxAll, maxScope int) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := q.byScope[scope]; n >= maxScope {
		return fmt.Sprintf("Too many running sessions for this agent (%d of %d). Kill or remove one (process list) and retry.", n, maxScope)
	}
	if q.running >= maxAll {
		return fmt.Sprintf("Too many running sessions on this host (%d of %d). Kill or remove one (process list) and retry.", q.running, maxAll)
	}
	if q.byScope == nil {
		q.byScope = make(map[string]int)
	}
	q.running++
	q.byScope[scope]++
	return ""
}

// give returns a slot of scope.
func (q *quotas) give(scope string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running--
	if q.byScope[scope]--; q.byScope[scope] <= 0 {
		delete(q.byScope, scope)
	}
}

// oomText is the failure reason of a session the memory limit killed.
func oomText(limit int64) string {
	if limit <= 0 {
		return "Command killed: out of memory."
	}
	return "Command killed: out of memory (limit " + formatBytes(limit) + ")."
}

// formatBytes writes a size the way the texts show it: "64 MiB",
// "1.5 GiB", "412 KiB", "900 B".
func formatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v == math.Trunc(v) || v >= 100 || u == 0 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64) + " " + units[u]
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[u]
}

// ContainmentReport says how a registry contains its sessions and which
// limits are in force ([Registry.Containment]). It is a copy: changing it
// changes nothing.
//
// A ContainmentReport is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type ContainmentReport struct {
	// Cgroup reports whether each session runs in a cgroup v2 child cgroup
	// of its own (so kill, timeout, remove and Close reach processes that
	// left the process group). CgroupDir is the registry's cgroup then.
	Cgroup    bool
	CgroupDir string
	// CgroupNamespace reports whether each gateway session (a sandboxed
	// one is contained by bubblewrap instead) runs in a cgroup namespace
	// rooted at its own cgroup. Its processes are found by that namespace
	// even after they moved to another cgroup, and are killed with the
	// session, on Close and by the watchdog when the host dies. It needs
	// CAP_SYS_ADMIN; an unprivileged host runs sessions without one.
	CgroupNamespace bool
	// MigrationRefused reports whether the kernel refuses to move a
	// gateway session's process out of its cgroup v2 cgroup (cgroup2
	// mounted with nsdelegate, and a cgroup namespace per session).
	// Otherwise a process allowed to write another cgroup's cgroup.procs
	// (root, or the owner of a delegated subtree) can leave its cgroup and
	// with it its limits; Migration says what still ends it.
	MigrationRefused bool
	// Migration says in words what a gateway session's process that
	// writes itself into another cgroup's cgroup.procs achieves on this
	// host; "" without session cgroups.
	Migration string
	// TaskBudget is how many tasks (processes and threads) all sessions
	// together may have: what the tightest pids.max above the host's
	// cgroup leaves, read at NewRegistry, minus what was in use then and
	// minus the host's reserve (a quarter of that pids.max, at least 64).
	// It is the registry cgroup's pids.max, and caps each session's task
	// limit too. 0 when no pids.max above the host limits tasks, or
	// without session cgroups. TaskBudgetSource says where it comes from.
	TaskBudget       int
	TaskBudgetSource string
	// SessionTasks is each session's task limit as applied: Limits.Tasks
	// capped to TaskBudget, or DefaultTasks capped to half of it; 0 for
	// none of its own (the budget still holds).
	SessionTasks int
	// Memory, Tasks and CPU say what became of each limit.
	Memory, Tasks, CPU LimitReport
	// Warnings are the reasons for every limit that is not in force, as
	// NewRegistry logged them.
	Warnings []string
}

// LimitReport is the state of one limit.
//
// A LimitReport is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type LimitReport struct {
	// Requested is the limit asked for, as text ("64 MiB", "4096 tasks",
	// "1.5 cores"); "" when none was.
	Requested string
	// Applied reports whether every session gets the limit.
	Applied bool
	// Controller names the interface file that applies it, with its
	// hierarchy: "cgroup2 memory.max", "cgroup1 pids.max" …; for a limit
	// not applied, the controller that would have been used, if any.
	Controller string
	// Reason says why the limit is not applied; "" when it is, or when
	// none was asked for.
	Reason string
}

// limitsCheck returns the gateway host's check of what its limiter found
// (see local.Options.Check): it sets *rep, the public report, and logs
// the limits not applied. Under ContainmentRequired a limit the Config
// set that cannot be applied is an error; the default task limit only
// warns.
func limitsCheck(st *settings, required bool, rep *ContainmentReport) func(contain.Report) error {
	return func(found contain.Report) error {
		r := containmentReport(found, st.limits)
		all, explicit := limitWarnings(&r, found.BudgetWarning, st.tasksSet)
		if required && len(explicit) > 0 {
			return fmt.Errorf("containment required: %s", strings.Join(explicit, "; "))
		}
		r.Warnings = all
		for _, w := range all {
			st.logger.Warn(w)
		}
		*rep = r
		return nil
	}
}

// containmentReport is the public form of what the limiter found for the
// resolved limits lim.
func containmentReport(c contain.Report, lim Limits) ContainmentReport {
	rep := ContainmentReport{
		Cgroup:           c.Cgroup,
		CgroupDir:        c.CgroupDir,
		CgroupNamespace:  c.CgroupNamespace,
		MigrationRefused: c.MigrationRefused,
		Migration:        c.Migration,
		TaskBudget:       c.TaskBudget,
		TaskBudgetSource: c.TaskBudgetSource,
		SessionTasks:     c.SessionTasks,
	}
	limit := func(set bool, text string, ctrl contain.Controller) LimitReport {
		r := LimitReport{Controller: ctrl.File}
		if set {
			r.Requested = text
			r.Applied = ctrl.File != ""
			if !r.Applied {
				r.Reason = ctrl.Reason
			}
		}
		return r
	}
	rep.Memory = limit(lim.MemoryBytes > 0, formatBytes(lim.MemoryBytes), c.Memory)
	rep.Tasks = limit(lim.Tasks > 0, strconv.Itoa(lim.Tasks)+" tasks", c.Tasks)
	rep.CPU = limit(lim.CPU > 0, strconv.FormatFloat(lim.CPU, 'f', -1, 64)+" cores", c.CPU)
	return rep
}

// limitWarnings lists the limits asked for but not applied: all of them
// (and budgetWarning, the task budget's), and explicit, those the Config
// set (the task limit only when tasksSet, that is when Limits.Tasks was
// given).
func limitWarnings(rep *ContainmentReport, budgetWarning string, tasksSet bool) (all, explicit []string) {
	for _, x := range []struct {
		name     string
		r        *LimitReport
		explicit bool
	}{
		{"memory limit", &rep.Memory, true},
		{"task limit", &rep.Tasks, tasksSet},
		{"CPU limit", &rep.CPU, true},
	} {
		if x.r.Requested == "" || x.r.Applied {
			continue
		}
		w := fmt.Sprintf("bgexec: the %s (%s) is not applied: %s", x.name, x.r.Requested, x.r.Reason)
		all = append(all, w)
		if x.explicit {
			explicit = append(explicit, w)
		}
	}
	if budgetWarning != "" {
		all = append(all, budgetWarning)
	}
	return all, explicit
}

// Containment reports how sessions are contained and which limits are in
// force, as NewRegistry found them. Safe for concurrent use.
func (r *Registry) Containment() ContainmentReport {
	rep := r.containment
	rep.Warnings = append([]string(nil), rep.Warnings...)
	return rep
}

// takeSlot reserves a running-session slot for scope before a spawn, or
// returns the refusal text: a quota is full, or the host process is
// short of file descriptors even after the hosts gave up what they hold
// for sessions not started yet (the sandboxes waiting in the pool, the
// descriptors the spare cgroups keep open). The slot is given back when
// the session ends, or by the caller when the spawn fails.
func (r *Registry) takeSlot(scope string) string {
	if text := r.quota.take(scope, r.cfg.maxSessions, r.cfg.maxPerScope); text != "" {
		return text
	}
	text := contain.DescriptorRefusal()
	if text != "" && r.hosts.shedDescriptors() > 0 {
		// A session comes first.
		text = contain.DescriptorRefusal()
	}
	if text != "" {
		r.quota.give(scope)
	}
	return text
}

// budgetRecheck is how often the sweeper looks at the output budget
// again while finished sessions hold output it could trim: running
// sessions grow without an end to trigger a look.
const budgetRecheck = 2 * time.Second

// enforceOutputBudget trims the retained output of the sessions that
// ended first until all sessions together hold no more than the budget.
// Running sessions are never trimmed. It reports whether finished
// sessions still hold output that a later look could trim.
func (r *Registry) enforceOutputBudget() (trimmable bool) {
	r.mu.Lock()
	all := make([]*session.Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		all = append(all, s)
	}
	r.mu.Unlock()
	type ended struct {
		s  *session.Session
		at time.Time
	}
	var total int64
	var done []ended
	for _, s := range all {
		b := s.RetainedBytes()
		total += b
		if sn := s.Snapshot(0); sn.Ended && b > trimmedBytes {
			done = append(done, ended{s, sn.Exit.At})
		}
	}
	if total <= r.cfg.outputBudget {
		// Look again soon only when running sessions could push the
		// total over before the next session ends.
		return len(done) > 0 && total > r.cfg.outputBudget/2
	}
	slices.SortFunc(done, func(a, b ended) int { return a.at.Compare(b.at) })
	for i, e := range done {
		if total <= r.cfg.outputBudget {
			return i < len(done)
		}
		total -= e.s.TrimRetained(trimKeepChars)
	}
	return false
}

// trimmedBytes is about what a trimmed session still holds at most
// (trimKeepChars code points of up to 4 bytes each).
const trimmedBytes = trimKeepChars * 4
