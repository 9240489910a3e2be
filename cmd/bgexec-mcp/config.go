package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bgexec/bgexec"
)

// Defaults of the configuration keys that are not bgexec's own.
const (
	defaultMaxCallMs       = 50000
	defaultProgressMs      = 5000
	defaultMaxMessageBytes = 64 << 20
	defaultSessionIdle     = time.Hour
	defaultMaxHTTPSessions = 64
	defaultApprovalTimeout = 5 * time.Minute
)

// fileConfig is the configuration: the keys of the -config file (JSON),
// each of which a flag can override. The zero value is not the default;
// defaultConfig is.
type fileConfig struct {
	// Transport.
	HTTP            string `json:"http"`
	TokenFile       string `json:"tokenFile"`
	MaxHTTPSessions int    `json:"maxHttpSessions"`
	SessionIdle     string `json:"sessionIdle"`
	MaxMessageBytes int    `json:"maxMessageBytes"`
	// Calls and notices.
	MaxCallMs   int    `json:"maxCallMs"`
	ProgressMs  int    `json:"progressMs"`
	ExitNotices bool   `json:"exitNotices"`
	AuditLog    string `json:"auditLog"`
	// Where commands run.
	Workdir     string                `json:"workdir"`
	Sandbox     sandboxConfig         `json:"sandbox"`
	Host        string                `json:"host"`
	Nodes       map[string]nodeConfig `json:"nodes"`
	DefaultNode string                `json:"defaultNode"`
	Docker      dockerConfig          `json:"docker"`
	Elevated    bool                  `json:"elevated"`
	// Approvals.
	Security        string     `json:"security"`
	Ask             string     `json:"ask"`
	Allowlist       stringList `json:"allowlist"`
	ApprovalTimeout string     `json:"approvalTimeout"`
	ApprovalMode    string     `json:"approvalMode"`
	// Limits and quotas.
	Limits      limitsConfig `json:"limits"`
	Quotas      quotasConfig `json:"quotas"`
	Containment string       `json:"containment"`
	// Output.
	SpillDir string `json:"spillDir"`
}

type sandboxConfig struct {
	Enabled       bool       `json:"enabled"`
	Network       bool       `json:"network"`
	WritablePaths stringList `json:"writablePaths"`
	ReadOnlyPaths stringList `json:"readOnlyPaths"`
	HidePaths     stringList `json:"hidePaths"`
	MinimalRoot   bool       `json:"minimalRoot"`
}

type nodeConfig struct {
	Addr           string `json:"addr"`
	User           string `json:"user"`
	KeyFile        string `json:"keyFile"`
	KnownHostsFile string `json:"knownHostsFile"`
	Shell          string `json:"shell"`
	Workdir        string `json:"workdir"`
	MaxSessions    int    `json:"maxSessions"`
}

// dockerConfig is the Docker host (bgexec.Docker): set when Image is.
type dockerConfig struct {
	Host        string        `json:"host"`
	Image       string        `json:"image"`
	Shell       string        `json:"shell"`
	Network     bool          `json:"network"`
	User        string        `json:"user"`
	MemoryBytes int64         `json:"memoryBytes"`
	Pids        int64         `json:"pids"`
	CPUs        float64       `json:"cpus"`
	NoSpare     bool          `json:"noSpare"`
	PerScope    bool          `json:"perScope"`
	Mounts      []dockerMount `json:"mounts"`
}

type dockerMount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly"`
}

// set reports whether any key of the Docker host is given.
func (d *dockerConfig) set() bool {
	return d.Host != "" || d.Image != "" || d.Shell != "" || d.Network || d.User != "" ||
		d.MemoryBytes != 0 || d.Pids != 0 || d.CPUs != 0 || d.NoSpare || d.PerScope || d.Mounts != nil
}

type limitsConfig struct {
	MemoryBytes int64   `json:"memoryBytes"`
	Tasks       int     `json:"tasks"`
	CPU         float64 `json:"cpu"`
}

type quotasConfig struct {
	MaxRunning     int     `json:"maxRunning"`
	MaxTimeoutSec  float64 `json:"maxTimeoutSec"`
	MaxOutputBytes int64   `json:"maxOutputBytes"`
}

// defaultConfig is the configuration before the file and the flags: the
// documented defaults, and BGEXEC_SANDBOX=1 from the environment.
func defaultConfig(getenv func(string) string) fileConfig {
	return fileConfig{
		MaxHTTPSessions: defaultMaxHTTPSessions,
		SessionIdle:     defaultSessionIdle.String(),
		MaxMessageBytes: defaultMaxMessageBytes,
		MaxCallMs:       defaultMaxCallMs,
		ProgressMs:      defaultProgressMs,
		ExitNotices:     true,
		Sandbox:         sandboxConfig{Enabled: getenv("BGEXEC_SANDBOX") == "1"},
		ApprovalTimeout: defaultApprovalTimeout.String(),
		ApprovalMode:    approvalPending,
	}
}

// stringList is a list flag: comma-separated, repeatable. The first Set
// replaces what the file gave; later ones append.
type stringList struct {
	items    []string
	fromFlag bool
}

func (l *stringList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(l.items, ",")
}

func (l *stringList) Set(s string) error {
	if !l.fromFlag {
		l.items, l.fromFlag = nil, true
	}
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			l.items = append(l.items, item)
		}
	}
	return nil
}

func (l *stringList) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &l.items) }

func (l stringList) MarshalJSON() ([]byte, error) { return json.Marshal(l.items) }

// bindFlags defines every flag of fs on the fields of c, so that parsing
// overrides exactly the keys whose flags are given.
func bindFlags(fs *flag.FlagSet, c *fileConfig, configFile *string) {
	fs.StringVar(configFile, "config", "", "read the configuration from the JSON `file` (its keys are listed in the README); flags given override its keys")
	fs.StringVar(&c.HTTP, "http", c.HTTP, "serve Streamable HTTP at `addr` (host:port) under /mcp instead of stdio (key http)")
	fs.StringVar(&c.TokenFile, "token-file", c.TokenFile, "`file` holding the bearer token HTTP requests must carry; required with -http (key tokenFile)")
	fs.IntVar(&c.MaxHTTPSessions, "max-http-sessions", c.MaxHTTPSessions, "most MCP sessions open at once over HTTP; each has its own registry (key maxHttpSessions)")
	fs.StringVar(&c.SessionIdle, "session-idle", c.SessionIdle, "close an HTTP session (killing its commands) after this `duration` without a request; 0 never does (key sessionIdle)")
	fs.IntVar(&c.MaxMessageBytes, "max-message-bytes", c.MaxMessageBytes, "largest JSON-RPC message (stdio line or HTTP body) in `bytes` (key maxMessageBytes)")
	fs.IntVar(&c.MaxCallMs, "max-call-ms", c.MaxCallMs, "longest wait of one tool call in `ms` (yield window, poll and wait timeouts); 0 means no cap (key maxCallMs)")
	fs.IntVar(&c.ProgressMs, "progress-ms", c.ProgressMs, "interval of progress notifications in `ms` while a call with a progress token waits; 0 disables them (key progressMs)")
	fs.BoolVar(&c.ExitNotices, "exit-notices", c.ExitNotices, "put exit notices of background commands into the next tool result (key exitNotices)")
	fs.StringVar(&c.Workdir, "workdir", c.Workdir, "default working `dir` of commands (key workdir; default: the client's first root, else the server's directory)")
	fs.BoolVar(&c.Sandbox.Enabled, "sandbox", c.Sandbox.Enabled, "run every command in the bubblewrap sandbox (key sandbox.enabled; BGEXEC_SANDBOX=1 sets the default)")
	fs.BoolVar(&c.Sandbox.Network, "sandbox-network", c.Sandbox.Network, "give sandboxed commands the network (key sandbox.network)")
	fs.Var(&c.Sandbox.WritablePaths, "sandbox-writable", "`paths` (comma-separated, repeatable) sandboxed commands may write besides the workdir and /tmp (key sandbox.writablePaths)")
	fs.Var(&c.Sandbox.ReadOnlyPaths, "sandbox-readonly", "`paths` (comma-separated, repeatable) bound read-only into the sandbox (key sandbox.readOnlyPaths)")
	fs.Var(&c.Sandbox.HidePaths, "sandbox-hide", "`paths` (comma-separated, repeatable) hidden from sandboxed commands (key sandbox.hidePaths)")
	fs.StringVar(&c.Host, "host", c.Host, "where commands run: auto, gateway, sandbox, node or docker (key host; nodes come from the file's key nodes)")
	fs.StringVar(&c.Docker.Host, "docker-host", c.Docker.Host, "the Docker daemon's `address` in DOCKER_HOST form (key docker.host; default unix:///var/run/docker.sock)")
	fs.StringVar(&c.Docker.Image, "docker-image", c.Docker.Image, "run every command in a container of this `image`, which must be on the daemon (key docker.image; sets up the Docker host)")
	fs.BoolVar(&c.Docker.Network, "docker-network", c.Docker.Network, "give the containers the daemon's default network; default none but loopback (key docker.network)")
	fs.StringVar(&c.Docker.User, "docker-user", c.Docker.User, "`user` the commands run as in the container: name, uid or uid:gid (key docker.user; default the image's)")
	fs.Int64Var(&c.Docker.MemoryBytes, "docker-memory-bytes", c.Docker.MemoryBytes, "memory cap of each container in `bytes`, swap included; 0 means none (key docker.memoryBytes)")
	fs.Int64Var(&c.Docker.Pids, "docker-pids", c.Docker.Pids, "process cap of each container; 0 means none (key docker.pids)")
	fs.Float64Var(&c.Docker.CPUs, "docker-cpus", c.Docker.CPUs, "CPU cap of each container in `cores`; 0 means none (key docker.cpus)")
	fs.StringVar(&c.DefaultNode, "default-node", c.DefaultNode, "`node` of an exec that names none (key defaultNode)")
	fs.BoolVar(&c.Elevated, "elevated", c.Elevated, "allow exec's elevated: true (outside the sandbox) (key elevated)")
	fs.StringVar(&c.Security, "security", c.Security, "exec security: full, allowlist or deny (key security; default full)")
	fs.StringVar(&c.Ask, "ask", c.Ask, "ask the person before a command runs: off, on-miss (commands not on the allowlist) or always (key ask; default off)")
	fs.Var(&c.Allowlist, "allowlist", "`programs` (comma-separated, repeatable) that run without asking (key allowlist)")
	fs.StringVar(&c.ApprovalTimeout, "approval-timeout", c.ApprovalTimeout, "how long to wait for the person's answer before denying, a `duration` (key approvalTimeout)")
	fs.StringVar(&c.ApprovalMode, "approval-mode", c.ApprovalMode, "pending: exec returns approval-pending at once and the person's answer decides the command later; wait: exec waits for the answer (key approvalMode)")
	fs.Int64Var(&c.Limits.MemoryBytes, "memory-bytes", c.Limits.MemoryBytes, "memory limit of each command in `bytes`; 0 means none (key limits.memoryBytes)")
	fs.IntVar(&c.Limits.Tasks, "tasks", c.Limits.Tasks, "process and thread limit of each command; 0 means bgexec's default (key limits.tasks)")
	fs.Float64Var(&c.Limits.CPU, "cpu", c.Limits.CPU, "CPU limit of each command in `cores`; 0 means none (key limits.cpu)")
	fs.IntVar(&c.Quotas.MaxRunning, "max-running", c.Quotas.MaxRunning, "most commands running at once in one MCP session; 0 means bgexec's default (key quotas.maxRunning)")
	fs.Float64Var(&c.Quotas.MaxTimeoutSec, "max-timeout-sec", c.Quotas.MaxTimeoutSec, "longest run of any command in `seconds`; 0 means bgexec's default (key quotas.maxTimeoutSec)")
	fs.Int64Var(&c.Quotas.MaxOutputBytes, "max-output-bytes", c.Quotas.MaxOutputBytes, "most output a command may print in `bytes`; 0 means bgexec's default (key quotas.maxOutputBytes)")
	fs.StringVar(&c.Containment, "containment", c.Containment, "auto, off or required: whether limits need cgroups (key containment)")
	fs.StringVar(&c.SpillDir, "spill-dir", c.SpillDir, "copy each command's whole output to a file in this `dir`, named by results whose text was cut; deleted with the session (key spillDir; default off)")
	fs.StringVar(&c.AuditLog, "audit-log", c.AuditLog, "append a JSON line for every command's spawn, decision, input and end to `file` (created 0600 if missing; key auditLog)")
}

// loadFile reads a JSON configuration file over c. Unknown keys are
// refused, and a value of the wrong type names its key.
func loadFile(path string, c *fileConfig) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return fmt.Errorf("key %q: a JSON %s is not a %s", te.Field, te.Value, te.Type)
		case errors.As(err, &se):
			return fmt.Errorf("not valid JSON at byte %d: %w", se.Offset, err)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fmt.Errorf("unknown key %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// settings are the validated configuration.
type settings struct {
	opts            *options
	addr            string
	tokenFile       string
	maxMessage      int
	idle            time.Duration
	maxHTTPSessions int
	auditLog        string // the audit log's path; "" for none
}

// parseFlags reads the configuration: the defaults, then the -config file,
// then the flags given, each overriding the one before. Registry settings
// not listed as keys come from the environment ([bgexec.ConfigFromEnv]).
func parseFlags(args []string, stderr io.Writer) (*settings, error) {
	return parseConfig(args, stderr, os.Getenv)
}

func parseConfig(args []string, stderr io.Writer, getenv func(string) string) (*settings, error) {
	// The first pass finds -config; the second parses the flags over the
	// file, so that flags win whatever their position.
	var configFile string
	probe := defaultConfig(getenv)
	fs := flag.NewFlagSet("bgexec-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bindFlags(fs, &probe, &configFile)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c := defaultConfig(getenv)
	if configFile != "" {
		if err := loadFile(configFile, &c); err != nil {
			return nil, fmt.Errorf("config %s: %w", configFile, err)
		}
	}
	fs = flag.NewFlagSet("bgexec-mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bindFlags(fs, &c, &configFile)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	st, err := c.validate(getenv, stderr)
	if err != nil {
		if configFile != "" {
			return nil, fmt.Errorf("config %s and flags: %w", configFile, err)
		}
		return nil, err
	}
	return st, nil
}

// keyError names the key (and its flag) whose value is wrong.
func keyError(key, flagName, format string, a ...any) error {
	return fmt.Errorf("key %s (flag -%s): %s", key, flagName, fmt.Sprintf(format, a...))
}

func parseDuration(key, flagName, s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, keyError(key, flagName, "%q is not a duration such as 30s, 5m or 1h", s)
	}
	return d, nil
}

func oneOf(key, flagName, v string, allowed ...string) error {
	if v == "" || slices.Contains(allowed, strings.ToLower(strings.TrimSpace(v))) {
		return nil
	}
	return keyError(key, flagName, "%q is not one of %s", v, strings.Join(allowed, ", "))
}

// validate checks every key and builds the settings; the registry
// configuration is then tried once (NewRegistry, Close), so that a
// sandbox without bwrap or a bad node fails at start, not at the first
// session.
func (c *fileConfig) validate(getenv func(string) string, stderr io.Writer) (*settings, error) {
	idle, err := parseDuration("sessionIdle", "session-idle", c.SessionIdle)
	if err != nil {
		return nil, err
	}
	approval, err := parseDuration("approvalTimeout", "approval-timeout", c.ApprovalTimeout)
	if err != nil {
		return nil, err
	}
	if err := c.checkValues(approval); err != nil {
		return nil, err
	}
	cfg, err := c.bgexecConfig(getenv)
	if err != nil {
		return nil, err
	}
	if err := tryConfig(cfg); err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return &settings{
		opts: &options{
			cfg: cfg, progressEvery: time.Duration(c.ProgressMs) * time.Millisecond, logger: logger,
			approvalTimeout: approval, approvalMode: strings.ToLower(strings.TrimSpace(c.ApprovalMode)),
		},
		addr: c.HTTP, tokenFile: c.TokenFile, maxMessage: c.MaxMessageBytes, idle: idle,
		maxHTTPSessions: c.MaxHTTPSessions, auditLog: c.AuditLog,
	}, nil
}

// checkValues checks the values that need no registry: ranges, choices,
// absolute paths, the workdir, and keys that need one another.
func (c *fileConfig) checkValues(approval time.Duration) error {
	checks := []struct {
		bad             bool
		key, flag, want string
	}{
		{c.MaxCallMs < 0, "maxCallMs", "max-call-ms", "must not be negative"},
		{c.ProgressMs < 0, "progressMs", "progress-ms", "must not be negative"},
		{c.MaxMessageBytes < 1024, "maxMessageBytes", "max-message-bytes", "must be at least 1024"},
		{c.MaxHTTPSessions < 1, "maxHttpSessions", "max-http-sessions", "must be at least 1"},
		{approval == 0, "approvalTimeout", "approval-timeout", "must be more than 0"},
		{c.Limits.MemoryBytes < 0, "limits.memoryBytes", "memory-bytes", "must not be negative"},
		{c.Limits.Tasks < 0, "limits.tasks", "tasks", "must not be negative"},
		{c.Limits.CPU < 0, "limits.cpu", "cpu", "must not be negative"},
		{c.Quotas.MaxRunning < 0, "quotas.maxRunning", "max-running", "must not be negative"},
		{c.Quotas.MaxTimeoutSec < 0, "quotas.maxTimeoutSec", "max-timeout-sec", "must not be negative"},
		{c.Quotas.MaxOutputBytes < 0, "quotas.maxOutputBytes", "max-output-bytes", "must not be negative"},
		{c.HTTP == "" && c.TokenFile != "", "tokenFile", "token-file", "needs http (-http)"},
		{c.HTTP != "" && c.TokenFile == "", "tokenFile", "token-file", "is required with http: the HTTP transport requires a bearer token"},
	}
	for _, ch := range checks {
		if ch.bad {
			return keyError(ch.key, ch.flag, "%s", ch.want)
		}
	}
	for _, e := range []error{
		oneOf("security", "security", c.Security, "full", "allowlist", "deny"),
		oneOf("ask", "ask", c.Ask, "off", "on-miss", "always"),
		oneOf("approvalMode", "approval-mode", c.ApprovalMode, approvalPending, approvalWait),
		oneOf("host", "host", c.Host, "auto", "gateway", "sandbox", "node", "docker"),
		oneOf("containment", "containment", c.Containment, "auto", "off", "required"),
	} {
		if e != nil {
			return e
		}
	}
	if err := c.checkSandbox(); err != nil {
		return err
	}
	if err := c.checkDocker(); err != nil {
		return err
	}
	if c.Workdir != "" {
		if fi, err := os.Stat(c.Workdir); err != nil || !fi.IsDir() {
			return keyError("workdir", "workdir", "%q is not an existing directory", c.Workdir)
		}
	}
	return nil
}

// checkSandbox checks the sandbox's settings: absolute paths, and no
// paths or network without the sandbox enabled.
func (c *fileConfig) checkSandbox() error {
	for _, l := range []struct {
		key, flag string
		paths     []string
	}{
		{"sandbox.writablePaths", "sandbox-writable", c.Sandbox.WritablePaths.items},
		{"sandbox.readOnlyPaths", "sandbox-readonly", c.Sandbox.ReadOnlyPaths.items},
		{"sandbox.hidePaths", "sandbox-hide", c.Sandbox.HidePaths.items},
	} {
		for _, p := range l.paths {
			if !filepath.IsAbs(p) {
				return keyError(l.key, l.flag, "%q is not an absolute path", p)
			}
		}
	}
	sandboxSet := c.Sandbox.Network || c.Sandbox.MinimalRoot || len(c.Sandbox.WritablePaths.items)+len(c.Sandbox.ReadOnlyPaths.items)+len(c.Sandbox.HidePaths.items) > 0
	if sandboxSet && !c.Sandbox.Enabled {
		return keyError("sandbox.enabled", "sandbox", "the sandbox's paths or network are set but the sandbox is not enabled")
	}
	return nil
}

// checkDocker checks the Docker host's keys: an image whenever any of
// them is set or the host is docker, a daemon address in DOCKER_HOST
// form, caps that Docker accepts, and absolute mount paths.
func (c *fileConfig) checkDocker() error {
	d := &c.Docker
	if strings.TrimSpace(d.Image) == "" {
		switch {
		case strings.EqualFold(strings.TrimSpace(c.Host), "docker"):
			return keyError("docker.image", "docker-image", "host docker needs an image: name one that is on the daemon (it is never pulled)")
		case d.set():
			return keyError("docker.image", "docker-image", "the Docker host's keys are set but no image is: name one that is on the daemon (it is never pulled)")
		}
		return nil
	}
	if d.Host != "" {
		proto, addr, ok := strings.Cut(d.Host, "://")
		if !ok || addr == "" || !slices.Contains([]string{"unix", "tcp", "npipe", "http", "https"}, proto) {
			return keyError("docker.host", "docker-host", "%q is not a daemon address such as unix:///var/run/docker.sock or tcp://host:2375", d.Host)
		}
	}
	checks := []struct {
		bad             bool
		key, flag, want string
	}{
		{d.MemoryBytes < 0, "docker.memoryBytes", "docker-memory-bytes", "must not be negative"},
		{d.MemoryBytes > 0 && d.MemoryBytes < 6<<20, "docker.memoryBytes", "docker-memory-bytes", "must be 0 (no cap) or at least 6291456 (6 MiB, Docker's minimum)"},
		{d.Pids < 0, "docker.pids", "docker-pids", "must not be negative"},
		{d.CPUs < 0, "docker.cpus", "docker-cpus", "must not be negative"},
	}
	for _, ch := range checks {
		if ch.bad {
			return keyError(ch.key, ch.flag, "%s", ch.want)
		}
	}
	for i, m := range d.Mounts {
		if !filepath.IsAbs(m.Source) || (m.Target != "" && !filepath.IsAbs(m.Target)) {
			return fmt.Errorf("key docker.mounts[%d]: source %q and target %q must be absolute paths (an empty target is the source)", i, m.Source, m.Target)
		}
	}
	return nil
}

// bgexecConfig is the library's Config for these settings, over what the
// BGEXEC_* environment variables set.
func (c *fileConfig) bgexecConfig(getenv func(string) string) (bgexec.Config, error) {
	cfg := bgexec.ConfigFromEnv(getenv)
	cfg.Workdir = c.Workdir
	if c.Sandbox.Enabled {
		cfg.Sandbox = &bgexec.Sandbox{
			Network: c.Sandbox.Network, MinimalRoot: c.Sandbox.MinimalRoot,
			WritablePaths: c.Sandbox.WritablePaths.items, ReadOnlyPaths: c.Sandbox.ReadOnlyPaths.items, HidePaths: c.Sandbox.HidePaths.items,
		}
	}
	cfg.Host, cfg.DefaultNode = c.Host, c.DefaultNode
	for name, n := range c.Nodes {
		if n.Addr == "" {
			return cfg, fmt.Errorf("key nodes.%s.addr: every node needs an address (host:port)", name)
		}
		if cfg.Nodes == nil {
			cfg.Nodes = map[string]bgexec.Node{}
		}
		cfg.Nodes[name] = bgexec.Node{Addr: n.Addr, User: n.User, KeyFile: n.KeyFile, KnownHostsFile: n.KnownHostsFile, Shell: n.Shell, Workdir: n.Workdir, MaxSessions: n.MaxSessions}
	}
	if err := c.dockerHost(&cfg); err != nil {
		return cfg, err
	}
	cfg.Elevation = bgexec.ElevationPolicy{Enabled: c.Elevated}
	cfg.Security, cfg.Ask, cfg.Allowlist = c.Security, c.Ask, c.Allowlist.items
	cfg.Limits = bgexec.Limits{MemoryBytes: c.Limits.MemoryBytes, Tasks: c.Limits.Tasks, CPU: c.Limits.CPU}
	// One MCP session is one registry with one scope: its quota of
	// running commands is both.
	cfg.MaxSessions, cfg.MaxSessionsPerScope = c.Quotas.MaxRunning, c.Quotas.MaxRunning
	cfg.MaxTimeoutSec, cfg.MaxOutputBytes = c.Quotas.MaxTimeoutSec, c.Quotas.MaxOutputBytes
	switch strings.ToLower(strings.TrimSpace(c.Containment)) {
	case "off":
		cfg.Containment = bgexec.ContainmentOff
	case "required":
		cfg.Containment = bgexec.ContainmentRequired
	}
	cfg.ExitNoticesInResults = c.ExitNotices
	cfg.SpillDir = c.SpillDir
	cfg.MaxCallWaitMs = c.MaxCallMs
	return cfg, nil
}

// dockerHost sets cfg.Docker when the Docker host's image is given. The
// containers' mount is fixed when the registry is made, before a client
// names its roots, so without a workdir key the workdir is the server's
// directory (mounted by default) rather than the client's first root.
func (c *fileConfig) dockerHost(cfg *bgexec.Config) error {
	d := &c.Docker
	if strings.TrimSpace(d.Image) == "" {
		return nil
	}
	cfg.Docker = &bgexec.Docker{
		Host: d.Host, Image: d.Image, Shell: d.Shell, Network: d.Network, User: d.User,
		MemoryBytes: d.MemoryBytes, Pids: d.Pids, CPUs: d.CPUs, NoSpare: d.NoSpare, PerScope: d.PerScope,
	}
	for _, m := range d.Mounts {
		cfg.Docker.Mounts = append(cfg.Docker.Mounts, bgexec.DockerMount{Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	if cfg.Workdir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("key workdir (flag -workdir): the Docker host needs a workdir to mount and the server's directory is unknown (%w): set workdir", err)
		}
		cfg.Workdir = wd
	}
	if len(d.Mounts) == 0 {
		return nil
	}
	// A command without a workdir runs in the workdir: it must be mounted.
	wd := filepath.Clean(cfg.Workdir)
	for _, m := range d.Mounts {
		src := filepath.Clean(m.Source)
		if wd == src || src == "/" || strings.HasPrefix(wd, src+"/") {
			return nil
		}
	}
	return keyError("workdir", "workdir", "%q is not inside any source of docker.mounts: set workdir to a directory inside one, or mount it", cfg.Workdir)
}

// tryConfig builds a registry from cfg and closes it at once, so every
// check of NewRegistry (the sandbox's probe, nodes' keys, limits) runs
// before the server starts.
func tryConfig(cfg bgexec.Config) error {
	trial := cfg
	trial.Logger = slog.New(slog.DiscardHandler)
	reg, err := bgexec.NewRegistry(trial)
	if err != nil {
		// bgexec names its Config field; the keys are the same words.
		return fmt.Errorf("the configuration is refused: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return reg.Close(ctx)
}

// attachAuditLog opens the audit log (-audit-log) for appending, creating
// it (mode 0600) when it is missing, and makes it the registries'
// observer; what the file holds is never rewritten. Every connection's
// registry shares it. The returned func closes it.
func attachAuditLog(st *settings) (func(), error) {
	if st.auditLog == "" {
		return func() {}, nil
	}
	f, err := os.OpenFile(st.auditLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("key auditLog (flag -audit-log): %w", err)
	}
	st.opts.cfg.Observer = bgexec.NewAuditLog(f)
	return func() { _ = f.Close() }, nil
}
