package allowlist

import (
	"fmt"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// codeBuiltins run code, or change which program a name runs, in ways only
// known at run time.
var codeBuiltins = map[string]string{
	"eval":      "runs its arguments as shell code",
	"exec":      "replaces the shell with a program only known at run time",
	"source":    "runs a file as shell code",
	".":         "runs a file as shell code",
	"command":   "runs a command by a name this check does not follow",
	"builtin":   "runs a builtin by a name this check does not follow",
	"trap":      "runs shell code later, on a signal",
	"alias":     "changes what a command name runs",
	"unalias":   "changes what a command name runs",
	"enable":    "loads or replaces builtins",
	"hash":      "changes which file a command name runs",
	"fc":        "re-runs shell history",
	"let":       "evaluates arithmetic, which can run code in bash",
	"coproc":    "runs a command this check does not follow",
	"mapfile":   "can run a callback",
	"readarray": "can run a callback",
	"bind":      "binds keys to shell code",
	"complete":  "registers shell code to run",
	"compgen":   "can run shell code",
}

// toolEnv are variables that hand options to a modelled tool, options
// the checker cannot see on the command line.
var toolEnv = map[string]string{
	"TAR_OPTIONS":        "gives tar options (--to-command, --use-compress-program run programs)",
	"ZIPOPT":             "gives zip options (-TT runs a program)",
	"ZIP":                "gives zip options (-TT runs a program)",
	"UNZIP":              "gives unzip options",
	"UNZIPOPT":           "gives unzip options",
	"RSYNC_RSH":          "names the remote shell program rsync runs",
	"RSYNC_CONNECT_PROG": "names a program rsync runs",
	"PYTHONINSPECT":      "makes python read code from standard input after the script (as -i does)",
}

// shells run a script, standard input or -c code: never known here.
var shells = set("sh", "bash", "rbash", "dash", "ash", "zsh", "ksh", "mksh", "pdksh", "oksh", "yash",
	"posh", "fish", "csh", "tcsh", "busybox", "toybox", "elvish", "nu", "xonsh", "pwsh", "powershell", "rc", "es")

// runners run their arguments (or parts of them) as a command line.
var runners = set("xargs", "parallel", "watch", "flock", "chroot", "ionice", "taskset", "chrt",
	"strace", "ltrace", "gdb", "unshare", "nsenter", "runuser", "su", "doas", "pkexec", "script",
	"systemd-run", "schroot", "firejail", "bwrap", "env-exec", "time", "unbuffer", "expect",
	"nohup-exec", "setpriv", "capsh", "prlimit", "numactl", "cgexec", "sg", "newgrp", "dbus-launch",
	"ssh-agent", "sudoedit", "vim", "vi", "nvim", "ex", "emacs", "ed", "less", "more", "man",
	"awk", "gawk", "mawk", "nawk")

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// finding is one way a command runs code this check cannot read: the
// reason, and the index of the word responsible (an allowlist entry's own
// words are exempt from findings about them).
type finding struct {
	idx    int
	reason string
}

// runner looks at a command for ways it runs other code. It returns the
// findings, and the index of the wrapped command's name in words (0: not
// a wrapper; -1: a wrapper whose command cannot be read).
func (w *walker) runner(name string, words []*syntax.Word) ([]finding, int) {
	base := filepath.Base(name)
	if why, ok := codeBuiltins[name]; ok {
		return []finding{{0, fmt.Sprintf("%q %s", name, why)}}, 0
	}
	if shells[base] {
		// The first argument: an entry "bash build.sh" means that script.
		return []finding{{1, fmt.Sprintf("%q is a shell: the code it runs is only known at run time", name)}}, 0
	}
	if runners[base] {
		return []finding{{0, fmt.Sprintf("%q runs commands or code this check cannot read", name)}}, 0
	}
	args := make([]string, 0, len(words)-1)
	for _, wd := range words[1:] {
		v, ok := w.value(wd, false)
		if !ok {
			v = unknownWord
		}
		args = append(args, v)
	}
	switch base {
	case "env", "nice", "nohup", "setsid", "stdbuf", "timeout", "sudo":
		reason, inner := w.wrapper(base, args)
		if reason != "" {
			return []finding{{0, reason}}, 0
		}
		return nil, inner
	}
	if m := toolModel(name, base); m != nil {
		return m(name, args), 0
	}
	return nil, 0
}

// The short options of the wrappers: those that take a value, and those
// that do not. Any other option makes the wrapped command unreadable.
var (
	wrapperValueOpts = map[string]string{
		"env": "uSC", "nice": "n", "stdbuf": "ioe", "timeout": "sk", "sudo": "ugCDhpURrTt",
	}
	wrapperFlagOpts = map[string]string{
		"env": "i0v", "setsid": "cfw", "timeout": "v", "sudo": "nbEHkPSAl",
	}
)

// wrapper finds the command a wrapper runs, by its options. Unknown
// options make the command unreadable (-1).
func (w *walker) wrapper(base string, args []string) (string, int) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "\x00" {
			return "", -1
		}
		if a == "--" {
			i++
			break
		}
		if base == "env" && strings.Contains(a, "=") && !strings.HasPrefix(a, "-") {
			if why := w.envAssignment(a); why != "" {
				return why, 0
			}
			i++
			continue
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		why, words := wrapperOption(base, a)
		if why != "" {
			return why, 0
		}
		if words == 0 {
			return "", -1
		}
		i += words
	}
	if base == "timeout" {
		i++ // the duration
	}
	if i >= len(args) {
		if base == "env" {
			return "", 0 // env alone prints the environment
		}
		return "", -1
	}
	return "", i + 1 // words[0] is the wrapper
}

// envAssignment says why env's assignment a (KEY=value) is refused, or "".
func (w *walker) envAssignment(a string) string {
	key, _, _ := strings.Cut(a, "=")
	if strings.HasPrefix(key, "BASH") || key == "EXECIGNORE" {
		return fmt.Sprintf("env %s= changes how the shell finds or runs commands", key)
	}
	if why, ok := toolEnv[key]; ok {
		return fmt.Sprintf("env %s= %s", key, why)
	}
	if w.c.AssignKey != nil {
		return w.c.AssignKey(key)
	}
	return ""
}

// wrapperOption reads the option word a of wrapper base: why it is
// refused, or how many words it takes (2 when its value is the next
// word), 0 when it is not one this check knows.
func wrapperOption(base, a string) (why string, words int) {
	if strings.HasPrefix(a, "--") {
		// Long options: only the harmless ones, with their value inline.
		opt, _, _ := strings.Cut(a, "=")
		if base == "env" && len(opt) > 2 && strings.HasPrefix("--split-string", opt) {
			return "env --split-string (-S) splits a string into a command this check cannot read", 0
		}
		switch base + opt {
		case "timeout--preserve-status", "timeout--foreground", "timeout--verbose", "timeout--kill-after", "timeout--signal",
			"nice--adjustment", "env--ignore-environment", "env--null", "env--unset":
			if !strings.Contains(a, "=") && (opt == "--kill-after" || opt == "--signal" || opt == "--adjustment" || opt == "--unset") {
				return "", 2
			}
			return "", 1
		}
		return "", 0
	}
	if base == "nice" && len(a) > 1 && strings.Trim(a[1:], "0123456789") == "" {
		return "", 1 // nice -10
	}
	withValue, noValue := wrapperValueOpts[base], wrapperFlagOpts[base]
	words = 1
	for j := 1; j < len(a); {
		ch := a[j]
		switch {
		case strings.IndexByte(withValue, ch) >= 0:
			if base == "env" && ch == 'S' {
				return "env -S splits a string into a command this check cannot read", 0
			}
			if j == len(a)-1 {
				words = 2 // the value is the next word
			}
			j = len(a)
		case strings.IndexByte(noValue, ch) >= 0:
			j++
		default:
			return "", 0
		}
	}
	return "", words
}
