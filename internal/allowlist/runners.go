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
	"eval":     "runs its arguments as shell code",
	"exec":     "replaces the shell with a program only known at run time",
	"source":   "runs a file as shell code",
	".":        "runs a file as shell code",
	"command":  "runs a command by a name this check does not follow",
	"builtin":  "runs a builtin by a name this check does not follow",
	"trap":     "runs shell code later, on a signal",
	"alias":    "changes what a command name runs",
	"unalias":  "changes what a command name runs",
	"enable":   "loads or replaces builtins",
	"hash":     "changes which file a command name runs",
	"fc":       "re-runs shell history",
	"let":      "evaluates arithmetic, which can run code in bash",
	"coproc":   "runs a command this check does not follow",
	"mapfile":  "can run a callback",
	"bind":     "binds keys to shell code",
	"complete": "registers shell code to run",
	"compgen":  "can run shell code",
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

// inlineCode maps interpreters to the flags that take program text.
var inlineCode = map[string][]string{
	"python":    {"-c"},
	"perl":      {"-e", "-E"},
	"ruby":      {"-e"},
	"node":      {"-e", "--eval", "-p", "--print"},
	"nodejs":    {"-e", "--eval", "-p", "--print"},
	"bun":       {"-e", "--eval", "-p", "--print"},
	"deno":      {"eval"},
	"php":       {"-r", "-B", "-R", "-E"},
	"lua":       {"-e"},
	"luajit":    {"-e"},
	"Rscript":   {"-e"},
	"R":         {"-e"},
	"tclsh":     {},
	"osascript": {"-e"},
	"julia":     {"-e", "-E", "--eval", "--print"},
	"pwsh":      {"-c", "-Command"},
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// interpreterFlags returns the inline-code flags of an interpreter name
// (python3.12 is python), and whether it is one.
func interpreterFlags(base string) ([]string, bool) {
	if f, ok := inlineCode[base]; ok {
		return f, true
	}
	for _, p := range []string{"python", "perl", "ruby", "lua", "php", "node"} {
		if rest, ok := strings.CutPrefix(base, p); ok && strings.Trim(rest, "0123456789.") == "" {
			return inlineCode[p], true
		}
	}
	return nil, false
}

// runner looks at a listed-or-not command for ways it runs other code.
// It returns a refusal reason, or the index of the wrapped command's name
// in words (0: not a wrapper; -1: a wrapper whose command cannot be read).
func (w *walker) runner(name string, words []*syntax.Word) (string, int) {
	base := filepath.Base(name)
	if why, ok := codeBuiltins[name]; ok {
		return fmt.Sprintf("%q %s", name, why), 0
	}
	if shells[base] {
		return fmt.Sprintf("%q is a shell: the code it runs is only known at run time", name), 0
	}
	if runners[base] {
		return fmt.Sprintf("%q runs commands or code this check cannot read", name), 0
	}
	args := make([]string, 0, len(words)-1)
	for _, wd := range words[1:] {
		v, ok := w.value(wd, false)
		if !ok {
			v = "\x00" // a word only known at run time
		}
		args = append(args, v)
	}
	if flags, ok := interpreterFlags(base); ok {
		for _, a := range args {
			for _, f := range flags {
				// -c, -cCODE, -Bc (short flags bundled before it)
				if a == f || strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "--") && strings.HasPrefix(a, "-") &&
					!strings.HasPrefix(a, "--") && strings.Contains(a[1:], f[1:]) {
					return fmt.Sprintf("%q %s runs inline code", name, f), 0
				}
			}
		}
		return "", 0
	}
	switch base {
	case "find":
		for _, a := range args {
			switch a {
			case "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls", "-delete", "\x00":
				return fmt.Sprintf("find %s runs commands or writes files", strings.ReplaceAll(a, "\x00", "with a computed expression")), 0
			}
		}
	case "git":
		for _, a := range args {
			if a == "-c" || strings.HasPrefix(a, "--config-env") || strings.HasPrefix(a, "--exec-path") {
				return fmt.Sprintf("git %s can make git run any program", a), 0
			}
		}
	case "sed":
		if reason := sedRuns(args); reason != "" {
			return "sed " + reason, 0
		}
	case "env", "nice", "nohup", "setsid", "stdbuf", "timeout", "sudo":
		return w.wrapper(base, args)
	}
	return "", 0
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
	withValue, noValue := wrapperValueOpts[base], wrapperFlagOpts[base]
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
			key, _, _ := strings.Cut(a, "=")
			if strings.HasPrefix(key, "BASH") || key == "EXECIGNORE" {
				return fmt.Sprintf("env %s= changes how the shell finds or runs commands", key), 0
			}
			if w.c.AssignKey != nil {
				if reason := w.c.AssignKey(key); reason != "" {
					return reason, 0
				}
			}
			i++
			continue
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		if strings.HasPrefix(a, "--") {
			// Long options: only the harmless ones, with their value inline.
			opt, _, _ := strings.Cut(a, "=")
			switch base + opt {
			case "timeout--preserve-status", "timeout--foreground", "timeout--verbose", "timeout--kill-after", "timeout--signal",
				"nice--adjustment", "env--ignore-environment", "env--null", "env--unset":
				if !strings.Contains(a, "=") && (opt == "--kill-after" || opt == "--signal" || opt == "--adjustment" || opt == "--unset") {
					i++
				}
				i++
				continue
			}
			return "", -1
		}
		if base == "nice" && len(a) > 1 && strings.Trim(a[1:], "0123456789") == "" {
			i++ // nice -10
			continue
		}
		j := 1
		for j < len(a) {
			ch := a[j]
			switch {
			case strings.IndexByte(withValue, ch) >= 0:
				if base == "env" && ch == 'S' {
					return "env -S splits a string into a command this check cannot read", 0
				}
				if j == len(a)-1 {
					i++ // the value is the next word
				}
				j = len(a)
			case strings.IndexByte(noValue, ch) >= 0:
				j++
			default:
				return "", -1
			}
		}
		i++
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

// sedRuns reports what in a sed invocation can run commands or write
// files: the e command, the e and w flags of s, the w and W commands, or a
// script from a file. Scripts are the -e/--expression values, or the first
// operand without them.
func sedRuns(args []string) string {
	var scripts []string
	explicit := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "\x00":
			return "with a computed argument cannot be read"
		case a == "-f" || strings.HasPrefix(a, "--file") || strings.HasPrefix(a, "-f"):
			return "-f runs a script this check cannot read"
		case a == "-e" || a == "--expression":
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
				i++
			}
			explicit = true
		case strings.HasPrefix(a, "--expression="):
			scripts = append(scripts, strings.TrimPrefix(a, "--expression="))
			explicit = true
		case strings.HasPrefix(a, "-e") && len(a) > 2:
			scripts = append(scripts, a[2:])
			explicit = true
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			if !explicit {
				scripts = append(scripts, a)
				explicit = true
			}
		}
	}
	for _, s := range scripts {
		if c := sedScriptRuns(s); c != "" {
			return c
		}
	}
	return ""
}

// sedScriptRuns scans one sed script for e, w and W: as commands, or as
// flags of s. It errs on the side of refusing.
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
			c == '$' || c == '~' || c >= '0' && c <= '9':
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
					return "s///e runs the pattern space as a command"
				case 'w', 'W':
					return "s///w writes a file"
				}
				i++
			}
		case c == 'y':
			i++
			if !skipDelimited(2) {
				return ""
			}
		case c == 'e':
			return "e runs a command"
		case c == 'w' || c == 'W':
			return "w writes a file"
		case c == 'a' || c == 'i' || c == 'c' || c == 'r' || c == 'R' || c == ':' || c == 'b' || c == 't' || c == 'T' || c == 'q' || c == 'Q' || c == 'l' || c == 'L':
			// Text, file or label to the end of the line (GNU: q, l take a number).
			for i < len(s) && s[i] != '\n' {
				if (c == 'b' || c == 't' || c == 'T' || c == 'q' || c == 'Q' || c == 'l') && s[i] == ';' {
					break
				}
				i++
			}
		default:
			i++ // p d D n N g G h H x z = F …
		}
	}
	return ""
}
