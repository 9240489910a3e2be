package allowlist

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// toolModel returns the checks of a program that can be told to run
// another program, or nil for one this package knows nothing about.
// name is the command name as written, base its last path element.
func toolModel(name, base string) func(name string, args []string) []finding {
	if m := interpreterFor(base); m != nil {
		return m.inspect
	}
	if flags, ok := otherInterpreters[base]; ok {
		return func(name string, args []string) []finding { return inspectOther(name, flags, args) }
	}
	switch base {
	case "sed", "gsed":
		return sedModel
	case "git":
		return gitModel
	case "tar", "gtar", "bsdtar":
		return tarModel
	case "ssh":
		return sshModel
	case "scp", "sftp":
		return scpModel
	case "rsync":
		return rsyncModel
	case "wget":
		return wgetModel
	case "zip":
		return zipModel
	case "sort":
		return sortModel
	case "find":
		return findModel
	}
	switch name { // bash builtins: by the name as written
	case "printf", "test", "[", "read", "unset", "wait", "getopts":
		return builtinModel
	}
	return nil
}

// unknownArg refuses a command with a word only known at run time where
// an option could go.
func unknownArg(name string, p parsed) []finding {
	if p.unknownAt < 0 {
		return nil
	}
	return []finding{{p.unknownAt, fmt.Sprintf("%s has an argument only known at run time, which could be any of its options", name)}}
}

// optFindings turns the options of p named in why into findings.
func optFindings(name string, p parsed, args []string, why map[string]string) []finding {
	var out []finding
	for _, o := range p.opts {
		for _, n := range slices.Sorted(maps.Keys(why)) {
			reason := why[n]
			if len(p.has(n)) == 0 {
				continue
			}
			if slices.ContainsFunc(p.has(n), func(x opt) bool { return x.idx == o.idx && x.name == o.name }) {
				out = append(out, finding{o.idx, fmt.Sprintf("%s option %s %s", name, spelledAs(o, n), reason)})
				break
			}
		}
	}
	return out
}

// spelledAs is how an option was written, with the option it stands for
// when that differs: "--expr= (--expression)".
func spelledAs(o opt, full string) string {
	if o.typed == "" {
		if o.name != full {
			return fmt.Sprintf("%s (%s)", o.name, full)
		}
		return o.name
	}
	written := "--" + o.typed
	if o.inline {
		written += "="
	}
	if "--"+o.typed != full {
		return fmt.Sprintf("%s (%s)", written, full)
	}
	return written
}

var sedSpec = optSpec{
	short: "nrEsuzi::l:e:f:b",
	long: map[string]argKind{"quiet": noArg, "silent": noArg, "expression": requiredArg, "file": requiredArg,
		"in-place": optionalArg, "line-length": requiredArg, "null-data": noArg, "zero-terminated": noArg,
		"regexp-extended": noArg, "separate": noArg, "unbuffered": noArg, "posix": noArg, "sandbox": noArg,
		"debug": noArg, "follow-symlinks": noArg, "binary": noArg, "help": noArg, "version": noArg},
}

// sedModel finds the e command and the e flag of s (they run the
// pattern space or a command), w and W (they write files), and scripts
// read from a file.
func sedModel(name string, args []string) []finding {
	p := sedSpec.parse(args, 1)
	if f := unknownArg(name, p); f != nil {
		return f
	}
	if f := optFindings(name, p, args, map[string]string{
		"-f": "runs a script from a file this check cannot read", "--file": "runs a script from a file this check cannot read",
	}); f != nil {
		return f
	}
	scripts := p.has("-e", "--expression")
	if len(scripts) == 0 {
		if len(p.operands) == 0 {
			return nil
		}
		s := p.operands[0]
		if construct := sedScriptRuns(s.value); construct != "" {
			return []finding{{s.idx, fmt.Sprintf("%s script %s (%s)", name, sedWhat(construct), construct)}}
		}
		return nil
	}
	for _, o := range scripts {
		if construct := sedScriptRuns(o.value); construct != "" {
			return []finding{{o.idx, fmt.Sprintf("%s option %s runs a script that %s (%s)", name, spelledAs(o, "--expression"), sedWhat(construct), construct)}}
		}
	}
	return nil
}

// sedWhat says what a construct sedScriptRuns found does.
func sedWhat(construct string) string {
	if strings.Contains(construct, "w") || strings.Contains(construct, "W") {
		return "writes files"
	}
	return "may execute commands"
}

// sedScriptRuns scans one sed script for e, w and W: as commands, or as
// flags of s, and names the construct it found. It errs on the side of
// refusing.
func sedScriptRuns(s string) string {
	i := 0
	skipDelimited := func(n int) bool { // skip n parts delimited by s[i]
		if i >= len(s) {
			return false
		}
		d := s[i]
		i++
		for ; n > 0; n-- {
			for i < len(s) && s[i] != d {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(s) {
				return false
			}
			i++
		}
		return true
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '{' || c == '}' || c == '!' || c == ',' ||
			c == '$' || c == '~' || c == '+' || c >= '0' && c <= '9':
			i++
		case c == '/' || c == '\\':
			if c == '\\' {
				i++
			}
			if !skipDelimited(1) {
				return ""
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case c == 's':
			i++
			if !skipDelimited(2) {
				return ""
			}
			for i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
				switch s[i] {
				case 'e':
					return "s///e flag"
				case 'w', 'W':
					return "s///w flag"
				}
				i++
			}
		case c == 'y':
			i++
			if !skipDelimited(2) {
				return ""
			}
		case c == 'e':
			return "e command"
		case c == 'w' || c == 'W':
			return string(c) + " command"
		case c == ':' || c == 'b' || c == 't' || c == 'T' || c == 'q' || c == 'Q' || c == 'l' || c == 'L':
			// A label or a number: GNU sed ends it at ";" and at blanks
			// too (":x e cmd" runs cmd).
			i++
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			for i < len(s) && s[i] != '\n' && s[i] != ';' && s[i] != '}' && s[i] != ' ' && s[i] != '\t' {
				i++
			}
		case c == 'a' || c == 'i' || c == 'c' || c == 'r' || c == 'R':
			// Text or a file name to the end of the line.
			for i < len(s) && s[i] != '\n' {
				i++
			}
		default:
			i++ // p d D n N g G h H x z = F v …
		}
	}
	return ""
}

// gitBuiltins are git's own commands. Any other subcommand is an alias
// (which can be "!command") or a git-NAME program found on PATH.
var gitBuiltins = set("add", "am", "annotate", "apply", "archive", "backfill", "bisect", "blame", "branch",
	"bugreport", "bundle", "cat-file", "check-attr", "check-ignore", "check-mailmap", "check-ref-format",
	"checkout", "checkout-index", "cherry", "cherry-pick", "clean", "clone", "column", "commit",
	"commit-graph", "commit-tree", "config", "count-objects", "describe", "diagnose", "diff", "diff-files",
	"diff-index", "diff-tree", "fast-export", "fast-import", "fetch", "fetch-pack", "for-each-ref",
	"format-patch", "fsck", "gc", "get-tar-commit-id", "grep", "hash-object", "help", "index-pack", "init",
	"interpret-trailers", "log", "ls-files", "ls-remote", "ls-tree", "mailinfo", "mailsplit", "maintenance",
	"merge", "merge-base", "merge-file", "merge-tree", "mktag", "mktree", "multi-pack-index", "mv",
	"name-rev", "notes", "pack-objects", "pack-refs", "prune", "prune-packed", "pull", "push", "range-diff",
	"read-tree", "rebase", "reflog", "refs", "remote", "repack", "replace", "replay", "rerere", "reset",
	"restore", "rev-list", "rev-parse", "revert", "rm", "shortlog", "show", "show-branch", "show-index",
	"show-ref", "sparse-checkout", "stash", "status", "stripspace", "submodule", "switch", "symbolic-ref",
	"tag", "unpack-file", "unpack-objects", "update-index", "update-ref", "var", "verify-commit",
	"verify-pack", "verify-tag", "version", "whatchanged", "worktree", "write-tree")

// gitRunners are git commands whose job is to run a program named in an
// argument, a configuration or the environment.
var gitRunners = map[string]string{
	"difftool":      "runs a diff program",
	"mergetool":     "runs a merge program",
	"filter-branch": "runs shell code from its arguments",
	"send-email":    "runs programs from its arguments and configuration",
	"instaweb":      "runs a web server and a browser",
	"daemon":        "runs hooks named in its arguments",
	"shell":         "runs commands",
	"web--browse":   "runs a browser",
	"for-each-repo": "runs git with arguments from the configuration",
	"credential":    "runs credential helpers",
}

// gitLaunchers are subcommand options (in any subcommand; abbreviations
// count) that name a program git runs, or a template whose hooks it
// installs.
var gitLaunchers = map[string]string{
	"--upload-pack":         "names a program git runs",
	"--receive-pack":        "names a program git runs",
	"--exec":                "names a program git runs",
	"--extcmd":              "names a program git runs",
	"--open-files-in-pager": "names a program git runs",
	"--template":            "installs hooks that git runs later",
	"--config":              "sets configuration that can name a program git runs",
	"--tool":                "names a program git runs",
}

var gitGlobalSpec = optSpec{
	short: "c:C:pPvh",
	long: map[string]argKind{"exec-path": optionalArg, "git-dir": requiredArg, "work-tree": requiredArg,
		"namespace": requiredArg, "config-env": requiredArg, "super-prefix": requiredArg, "list-cmds": requiredArg,
		"attr-source": requiredArg, "paginate": noArg, "no-pager": noArg, "bare": noArg, "version": noArg,
		"help": noArg, "html-path": noArg, "man-path": noArg, "info-path": noArg, "no-replace-objects": noArg,
		"no-lazy-fetch": noArg, "literal-pathspecs": noArg, "glob-pathspecs": noArg, "noglob-pathspecs": noArg,
		"icase-pathspecs": noArg, "no-optional-locks": noArg, "no-advice": noArg},
	stopAtOperand: true,
}

// gitModel refuses -c, --config-env and --exec-path, subcommands that are
// not built in (aliases), configuration writes, and the options and
// subcommands that run a program named in an argument.
func gitModel(name string, args []string) []finding {
	p := gitGlobalSpec.parse(args, 1)
	for _, o := range p.opts {
		switch o.name {
		case "-c", "--config-env":
			return []finding{{o.idx, fmt.Sprintf("git option %s sets configuration, which can make git run any program", o.name)}}
		case "--exec-path":
			return []finding{{o.idx, "git option --exec-path picks the directory git runs its commands from"}}
		}
	}
	if len(p.operands) == 0 {
		return nil
	}
	sub := p.operands[0]
	if sub.value == unknownWord {
		return []finding{{sub.idx, "git subcommand only known at run time"}}
	}
	if why, ok := gitRunners[sub.value]; ok {
		return []finding{{sub.idx, fmt.Sprintf("git %s %s", sub.value, why)}}
	}
	if !gitBuiltins[sub.value] {
		return []finding{{sub.idx, fmt.Sprintf("git %s is not one of git's own commands: an alias (which can be \"!command\") or a git-%s program runs", sub.value, sub.value)}}
	}
	rest := args[sub.idx:] // the words after the subcommand
	for i, a := range rest {
		idx := sub.idx + 1 + i
		if a == "--" {
			break
		}
		if a == unknownWord {
			if i > 0 && slices.Contains([]string{"-m", "--message", "-b", "-B", "--author", "--date", "-F", "--file"}, rest[i-1]) {
				continue
			}
			return []finding{{idx, fmt.Sprintf("git %s has an argument only known at run time, which could be an option that runs a program", sub.value)}}
		}
		if typed, ok := strings.CutPrefix(a, "--"); ok && typed != "" {
			typed, _, _ = strings.Cut(typed, "=")
			for _, opt := range slices.Sorted(maps.Keys(gitLaunchers)) {
				why := gitLaunchers[opt]
				if strings.HasPrefix(opt, "--"+typed) {
					spelled := "--" + typed
					if spelled != opt {
						spelled += " (" + opt + ")"
					}
					return []finding{{idx, fmt.Sprintf("git %s option %s %s", sub.value, spelled, why)}}
				}
			}
		}
	}
	shortOpt := func(letter string) []finding {
		for i, a := range rest {
			if a == "--" {
				break
			}
			if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a[1:], letter) {
				return []finding{{sub.idx + 1 + i, fmt.Sprintf("git %s option -%s names a program git runs", sub.value, letter)}}
			}
		}
		return nil
	}
	switch sub.value {
	case "config":
		return gitConfig(sub.idx, rest)
	case "rebase":
		return shortOpt("x")
	case "grep":
		return shortOpt("O")
	case "clone", "ls-remote", "fetch", "pull", "archive":
		if f := shortOpt("u"); f != nil {
			return f
		}
		if sub.value == "clone" {
			return shortOpt("c")
		}
	case "bisect":
		if len(rest) > 0 && rest[0] == "run" {
			return []finding{{sub.idx + 1, "git bisect run runs the command in its arguments"}}
		}
	case "submodule":
		for i, a := range rest {
			if a == "foreach" {
				return []finding{{sub.idx + 1 + i, "git submodule foreach runs the command in its arguments"}}
			}
		}
	}
	return nil
}

// gitConfig allows reading configuration and refuses every write (any
// key can name a program: core.fsmonitor, core.pager, alias.*, …) and
// --edit, which runs an editor.
func gitConfig(subIdx int, rest []string) []finding {
	refuse := func(i int, what string) []finding {
		return []finding{{subIdx + 1 + i, "git config " + what + ": a configuration value can name a program git runs (core.fsmonitor, core.pager, alias.x=!cmd …)"}}
	}
	if len(rest) > 0 {
		switch rest[0] {
		case "get", "list":
			return nil
		case "set", "unset", "rename-section", "remove-section", "edit":
			return refuse(0, rest[0]+" writes the configuration")
		}
	}
	reads := false
	var operands []int
	for i, a := range rest {
		switch {
		case a == unknownWord:
			return refuse(i, "with an argument only known at run time")
		case a == "-e" || strings.HasPrefix(a, "--ed"):
			return refuse(i, "--edit runs an editor")
		case a == "-l" || a == "--list" || strings.HasPrefix(a, "--get"):
			reads = true
		case a == "--add" || a == "--replace-all" || strings.HasPrefix(a, "--unset") || strings.HasPrefix(a, "--rename") || strings.HasPrefix(a, "--remove"):
			return refuse(i, a+" writes the configuration")
		case a == "-f" || a == "--file" || a == "--blob" || a == "--type" || a == "--default" || a == "--comment":
			operands = append(operands, -1) // its value follows; not an operand
		case strings.HasPrefix(a, "-"):
		default:
			if len(operands) > 0 && operands[len(operands)-1] == -1 {
				operands[len(operands)-1] = -2
				continue
			}
			operands = append(operands, i)
		}
	}
	n := 0
	last := -1
	for _, o := range operands {
		if o >= 0 {
			n++
			last = o
		}
	}
	if reads || n <= 1 {
		return nil
	}
	return refuse(last, "with a value writes the configuration")
}

var tarSpec = optSpec{
	short: "Ab:cC:dfF:g:GhH:iI:jJkK:lL:mMN:OpPrRsStT:uvV:wWxX:zZ",
	long: map[string]argKind{"checkpoint": optionalArg, "checkpoint-action": requiredArg, "to-command": requiredArg,
		"use-compress-program": requiredArg, "rsh-command": requiredArg, "rmt-command": requiredArg,
		"info-script": requiredArg, "new-volume-script": requiredArg, "file": requiredArg, "directory": requiredArg,
		"exclude": requiredArg, "files-from": requiredArg, "exclude-from": requiredArg, "transform": requiredArg,
		"xform": requiredArg, "owner": requiredArg, "group": requiredArg, "mode": requiredArg, "format": requiredArg,
		"label": requiredArg, "listed-incremental": requiredArg, "blocking-factor": requiredArg},
}

// tarModel refuses the options that run a program: --checkpoint-action
// (exec=), --to-command, -I/--use-compress-program, --rsh-command,
// --rmt-command and -F/--info-script.
func tarModel(name string, args []string) []finding {
	if len(args) > 0 && args[0] != unknownWord && args[0] != "" && !strings.HasPrefix(args[0], "-") {
		// Old style: "tar cIf prog a.tar": the letters' values follow in order.
		for _, c := range args[0] {
			if c == 'I' || c == 'F' {
				return []finding{{1, fmt.Sprintf("%s option %c (in %s) names a program tar runs", name, c, args[0])}}
			}
		}
		args = append([]string{"-" + args[0]}, args[1:]...)
	}
	p := tarSpec.parse(args, 1)
	if f := unknownArg(name, p); f != nil {
		return f
	}
	const runs = "names a program tar runs"
	return optFindings(name, p, args, map[string]string{
		"--checkpoint-action": "can run a command (exec=)", "--to-command": runs, "-I": runs,
		"--use-compress-program": runs, "--rsh-command": runs, "--rmt-command": runs, "-F": runs,
		"--info-script": runs, "--new-volume-script": runs,
	})
}

// ssh reads options after the host name too.
var sshSpec = optSpec{short: "46AaB:b:c:CD:E:e:F:fGgI:i:J:KkL:l:m:MNnO:o:P:p:qQ:R:S:sTtVvW:w:XxYy"}

// sshDangerousKeys are ssh_config keywords whose value ssh runs or loads.
var sshDangerousKeys = set("proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand",
	"pkcs11provider", "securitykeyprovider", "include", "match")

// sshOptions refuses -F (a config file can name programs), -I (a PKCS#11
// library) and -o keywords that run a program.
func sshOptions(name string, p parsed, extra map[string]string) []finding {
	if f := unknownArg(name, p); f != nil {
		return f
	}
	for _, o := range p.opts {
		switch o.name {
		case "-F":
			return []finding{{o.idx, fmt.Sprintf("%s option -F reads a configuration file, which can name a program ssh runs (ProxyCommand)", name)}}
		case "-I":
			return []finding{{o.idx, fmt.Sprintf("%s option -I loads a PKCS#11 library", name)}}
		case "-o":
			key := sshKey(o.value)
			if strings.Contains(o.value, unknownWord) || sshDangerousKeys[key] {
				return []finding{{o.idx, fmt.Sprintf("%s option -o %s names a program ssh runs", name, key)}}
			}
		}
		if why, ok := extra[o.name]; ok {
			return []finding{{o.idx, fmt.Sprintf("%s option %s %s", name, o.name, why)}}
		}
	}
	return nil
}

// sshKey is the keyword of an -o value: "Key=value", "Key value".
func sshKey(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.IndexAny(v, "= \t"); i >= 0 {
		v = v[:i]
	}
	return strings.ToLower(v)
}

func sshModel(name string, args []string) []finding {
	p := sshSpec.parse(args, 1)
	return sshOptions(name, p, nil)
}

var scpSpec = optSpec{short: "346ABCc:D:F:i:J:l:o:P:pqRrS:TvX:"}

func scpModel(name string, args []string) []finding {
	return sshOptions(name, scpSpec.parse(args, 1), map[string]string{
		"-S": "names the program scp runs instead of ssh",
		"-D": "names a local sftp server program scp runs",
	})
}

var rsyncSpec = optSpec{
	short: "vqcarRbuUdLlkKHpEAXogDtONJSnWxB:e:CT:yzhPif:F0M:s4 6@:",
	long: map[string]argKind{"rsh": requiredArg, "rsync-path": requiredArg, "remote-option": requiredArg,
		"filter": requiredArg, "exclude": requiredArg, "include": requiredArg, "temp-dir": requiredArg,
		"block-size": requiredArg, "config": requiredArg, "daemon": noArg},
}

func rsyncModel(name string, args []string) []finding {
	p := rsyncSpec.parse(args, 1)
	if f := unknownArg(name, p); f != nil {
		return f
	}
	return optFindings(name, p, args, map[string]string{
		"-e": "names the remote shell program rsync runs", "--rsh": "names the remote shell program rsync runs",
		"--rsync-path": "names a program run through a shell", "-M": "passes options to the remote rsync",
		"--remote-option": "passes options to the remote rsync", "--config": "reads a daemon configuration",
		"--daemon": "runs a daemon that runs configured commands",
	})
}

var wgetSpec = optSpec{
	short: "Vhbe:o:a:dqvnNi:FB:t:O:ncT:w:Q:P:U:l:A:R:D:I:X:kKEHLrmpSx46",
	long: map[string]argKind{"use-askpass": requiredArg, "execute": requiredArg, "config": requiredArg,
		"output-file": requiredArg, "output-document": requiredArg, "user": requiredArg, "password": requiredArg,
		"header": requiredArg, "user-agent": requiredArg, "directory-prefix": requiredArg, "input-file": requiredArg},
}

// wgetModel refuses --use-askpass, --config and -e/--execute of the
// use_askpass command (wgetrc commands ignore "_" and "-").
func wgetModel(name string, args []string) []finding {
	p := wgetSpec.parse(args, 1)
	if f := unknownArg(name, p); f != nil {
		return f
	}
	if f := optFindings(name, p, args, map[string]string{
		"--use-askpass": "names a program wget runs", "--config": "reads a wgetrc, which can name a program wget runs (use_askpass)",
	}); f != nil {
		return f
	}
	for _, o := range p.has("-e", "--execute") {
		cmd, _, _ := strings.Cut(o.value, "=")
		cmd = strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "", "\t", "").Replace(cmd))
		if cmd == "useaskpass" || strings.Contains(o.value, unknownWord) {
			return []finding{{o.idx, fmt.Sprintf("%s option %s %s names a program wget runs", name, spelledAs(o, "--execute"), o.value)}}
		}
	}
	return nil
}

// zipModel refuses -TT/--unzip-command (the program zip -T runs); zip
// reads -TT as one two-letter option.
func zipModel(name string, args []string) []finding {
	for i, a := range args {
		switch {
		case a == unknownWord:
			return []finding{{i + 1, name + " has an argument only known at run time, which could be -TT"}}
		case a == "--":
			return nil
		case strings.HasPrefix(a, "--"):
			typed, _, _ := strings.Cut(a[2:], "=")
			if typed != "" && strings.HasPrefix("unzip-command", typed) {
				return []finding{{i + 1, fmt.Sprintf("%s option --%s (-TT, --unzip-command) names a program zip runs", name, typed)}}
			}
		case strings.HasPrefix(a, "-") && strings.Contains(a, "TT"):
			return []finding{{i + 1, fmt.Sprintf("%s option -TT (--unzip-command) names a program zip runs", name)}}
		}
	}
	return nil
}

var sortSpec = optSpec{
	short: "bdfgiMhnRrVck:mo:sS:t:T:uz",
	long: map[string]argKind{"compress-program": requiredArg, "key": requiredArg, "output": requiredArg,
		"buffer-size": requiredArg, "field-separator": requiredArg, "temporary-directory": requiredArg,
		"files0-from": requiredArg, "random-source": requiredArg, "sort": requiredArg, "parallel": requiredArg,
		"check": optionalArg},
}

func sortModel(name string, args []string) []finding {
	p := sortSpec.parse(args, 1)
	if f := unknownArg(name, p); f != nil {
		return f
	}
	return optFindings(name, p, args, map[string]string{"--compress-program": "names a program sort runs"})
}

// findModel refuses the actions that run a command or write a file.
func findModel(name string, args []string) []finding {
	for i, a := range args {
		switch a {
		case "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls", "-delete":
			return []finding{{i + 1, fmt.Sprintf("find %s runs commands or writes files", a)}}
		case unknownWord:
			return []finding{{i + 1, "find with a computed expression runs commands or writes files"}}
		}
	}
	return nil
}

// isName reports whether s is a plain shell variable name: bash evaluates
// the subscript of name[subscript] as arithmetic, which runs $(…).
func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// builtinModel refuses variable names of bash builtins that are not plain
// names (bash evaluates x[$(cmd)] in them): printf -v, test/[ -v and -R,
// read, unset, wait -p, getopts.
func builtinModel(name string, args []string) []finding {
	bad := func(i int, what string) []finding {
		return []finding{{i + 1, fmt.Sprintf("%s %s must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it", name, what)}}
	}
	switch name {
	case "printf":
		// printf -v NAME, -vNAME; and a computed first word could be -v.
		if len(args) > 0 {
			switch {
			case args[0] == "-v" && len(args) > 1 && !isName(args[1]):
				return bad(1, "-v's name")
			case strings.HasPrefix(args[0], "-v") && len(args[0]) > 2 && !isName(args[0][2:]):
				return bad(0, "-v's name")
			case args[0] == unknownWord && len(args) > 1 && !isName(args[1]):
				return bad(1, "argument after a computed first argument (which could be -v)")
			}
		}
	case "test", "[":
		for i, a := range args {
			if i+1 >= len(args) || name == "[" && i+1 == len(args)-1 {
				break
			}
			next := args[i+1]
			if (a == "-v" || a == "-R") && !isName(next) {
				return bad(i+1, a+"'s operand")
			}
			if a == unknownWord && next != unknownWord && !isName(next) && !testBinary[next] {
				return bad(i+1, "operand after a computed argument (which could be -v)")
			}
			if a == unknownWord && next == unknownWord {
				return bad(i+1, "operand after a computed argument (which could be -v)")
			}
		}
	case "read":
		p := optSpec{short: "ersa:d:i:n:N:p:t:u:", stopAtOperand: true}.parse(args, 1)
		for _, o := range p.has("-a") {
			if !isName(o.value) {
				return bad(o.idx-1, "-a's name")
			}
		}
		for _, o := range p.operands {
			if !isName(o.value) {
				return bad(o.idx-1, "name")
			}
		}
	case "unset":
		for i, a := range args {
			if !strings.HasPrefix(a, "-") && !isName(a) {
				return bad(i, "name")
			}
		}
	case "wait":
		for i, a := range args {
			if a == unknownWord || strings.HasPrefix(a, "-") && strings.Contains(a, "p") {
				if i+1 < len(args) && !isName(args[i+1]) && strings.Trim(args[i+1], "0123456789") != "" {
					return bad(i+1, "-p's name")
				}
			}
		}
	case "getopts":
		if len(args) > 1 && !isName(args[1]) {
			return bad(1, "name")
		}
	}
	return nil
}

// testBinary are test's binary operators: a computed word before one is
// an operand, not -v.
var testBinary = set("=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef", "-a", "-o", "=~")
