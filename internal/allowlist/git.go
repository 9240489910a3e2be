package allowlist

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

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
	if f := gitGlobalFindings(p.opts); f != nil {
		return f
	}
	if len(p.operands) == 0 {
		return nil
	}
	sub := p.operands[0]
	if f := gitSubcommandFindings(sub); f != nil {
		return f
	}
	rest := args[sub.idx:] // the words after the subcommand
	if f := gitArgFindings(sub, rest); f != nil {
		return f
	}
	return gitSubcommandArgFindings(sub, rest)
}

// gitGlobalFindings refuses the global options that set configuration or
// pick where git's commands come from.
func gitGlobalFindings(opts []opt) []finding {
	for _, o := range opts {
		switch o.name {
		case "-c", "--config-env":
			return []finding{{o.idx, fmt.Sprintf("git option %s sets configuration, which can make git run any program", o.name)}}
		case "--exec-path":
			return []finding{{o.idx, "git option --exec-path picks the directory git runs its commands from"}}
		}
	}
	return nil
}

// gitSubcommandFindings refuses a subcommand only known at run time, one
// that runs a program, and one that is not built in.
func gitSubcommandFindings(sub operand) []finding {
	if sub.value == unknownWord {
		return []finding{{sub.idx, "git subcommand only known at run time"}}
	}
	if why, ok := gitRunners[sub.value]; ok {
		return []finding{{sub.idx, fmt.Sprintf("git %s %s", sub.value, why)}}
	}
	if !gitBuiltins[sub.value] {
		return []finding{{sub.idx, fmt.Sprintf("git %s is not one of git's own commands: an alias (which can be \"!command\") or a git-%s program runs", sub.value, sub.value)}}
	}
	return nil
}

// gitArgFindings refuses, among the words rest after the subcommand sub
// (up to "--"), one only known at run time (unless it is the value of an
// option that takes text) and a long option, however abbreviated, that
// runs a program.
func gitArgFindings(sub operand, rest []string) []finding {
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
	return nil
}

// gitSubcommandArgFindings refuses what particular subcommands do with
// their arguments: configuration writes, short options that name a
// program, bisect run and submodule foreach.
func gitSubcommandArgFindings(sub operand, rest []string) []finding {
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
