package contain

// CPUPeriod is the CPU quota period (cpu.max's second field, cpu.cfs_period_us
// on cgroup v1), in microseconds: the kernel's default.
const CPUPeriod = 100000

// Limits are the limits of each session, as the registry resolved them.
// The zero value limits nothing.
type Limits struct {
	// MemoryBytes is each session's memory limit in bytes, swap included;
	// 0 for none.
	MemoryBytes int64
	// Tasks is each session's task limit (pids.max); 0 or less for none
	// of its own.
	Tasks int
	// TasksSet is whether the caller set Tasks rather than took the
	// default: a default is capped to half the host's task budget.
	TasksSet bool
	// CPU is each session's CPU quota, in cores; 0 for none.
	CPU float64
}

// Report says how sessions are contained and where each limit comes from;
// package bgexec turns it into its ContainmentReport.
type Report struct {
	// Cgroup is whether sessions get cgroups; CgroupDir is the registry's.
	Cgroup    bool
	CgroupDir string
	// CgroupNamespace is whether gateway sessions get a cgroup namespace;
	// MigrationRefused whether the kernel refuses a move out of their v2
	// cgroup; Migration says in words what a move achieves ("" without
	// cgroups).
	CgroupNamespace  bool
	MigrationRefused bool
	Migration        string
	// TaskBudget is the sessions' tasks together (the registry cgroup's
	// pids.max), 0 for none; TaskBudgetSource says where it comes from.
	TaskBudget       int
	TaskBudgetSource string
	// SessionTasks is each session's task limit as applied, 0 for none.
	SessionTasks int
	// Memory, Tasks and CPU say which controller applies each limit.
	Memory, Tasks, CPU Controller
	// BudgetWarning says why the host's task budget could not be applied
	// ("" when it was, or when there is none).
	BudgetWarning string
}

// Controller says where one limit comes from.
type Controller struct {
	// File names the interface file that applies the limit, with its
	// hierarchy ("cgroup2 memory.max", "cgroup1 pids.max" …), "" when no
	// controller applies it.
	File string
	// Reason says why no controller applies it, when one was needed.
	Reason string
}
