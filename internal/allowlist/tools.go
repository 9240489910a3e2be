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
