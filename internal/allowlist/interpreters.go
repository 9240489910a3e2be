package allowlist

import (
	"fmt"
	"strings"
)

// interpreter describes how a language runtime takes its program: the
// options that carry program text or load code (module, import, require,
// debugger), the options that only print something and exit, and its
// option syntax. Program text read from standard input (no script
// operand, "-", /dev/stdin …) is inline code too.
type interpreter struct {
	spec optSpec
	// code maps an option to what it does ("runs inline code").
	code map[string]string
	// exits are options after which the runtime reads no program.
	exits []string
}

var (
	pythonModel = interpreter{
		spec: optSpec{
			short: "bBc:dEhiIm:OPqsSuvVW:xX:R",
			long: map[string]argKind{"help": noArg, "version": noArg, "check-hash-based-pycs": requiredArg,
				"help-env": noArg, "help-xoptions": noArg, "help-all": noArg},
			stopAtOperand: true,
			stopAfter:     "cm",
		},
		code: map[string]string{
			"-c": "runs inline code",
			"-m": "runs a module as the program (timeit -s, pdb, code … run code from their arguments)",
			"-i": "reads code from standard input after the script (interactive)",
		},
		exits: []string{"-h", "-V", "--help", "--version", "--help-env", "--help-xoptions", "--help-all"},
	}
	perlModel = interpreter{
		spec: optSpec{
			// -0, -C, -i, -l, -x take an attached value; -d takes :Module.
			short:         "0aC::cd::D::e:E:f:F:hi::I:lm:M:npsStTuUvVwWx::X",
			stopAtOperand: true,
		},
		code: map[string]string{
			"-e": "runs inline code",
			"-E": "runs inline code",
			"-m": "loads a module named in its argument (-M'Mod;code' runs code)",
			"-M": "loads a module named in its argument (-M'Mod;code' runs code)",
			"-d": "runs the debugger, which reads commands from standard input, or a module named in its argument",
			"-D": "sets debugging flags",
		},
		exits: []string{"-v", "-V", "-h"},
	}
	nodeModel = interpreter{
		spec: optSpec{
			short: "e:p:r:C:ichv",
			long: map[string]argKind{"eval": requiredArg, "print": requiredArg, "require": requiredArg, "import": requiredArg,
				"loader": requiredArg, "experimental-loader": requiredArg, "interactive": noArg, "check": noArg,
				"help": noArg, "version": noArg, "title": requiredArg, "conditions": requiredArg, "input-type": requiredArg,
				"env-file": requiredArg, "env-file-if-exists": requiredArg, "run": requiredArg, "inspect": optionalArg,
				"inspect-brk": optionalArg, "inspect-wait": optionalArg, "inspect-port": requiredArg,
				"experimental-config-file": requiredArg, "watch": noArg, "test": noArg},
			stopAtOperand: true,
		},
		code: map[string]string{
			"-e": "runs inline code", "--eval": "runs inline code",
			"-p": "runs inline code", "--print": "runs inline code",
			"-r": "loads a module before the script", "--require": "loads a module before the script",
			"--import": "loads a module (data: URLs are inline code) before the script",
			"--loader": "loads a module that runs code", "--experimental-loader": "loads a module that runs code",
			"-i":                         "reads code from standard input (interactive)",
			"--interactive":              "reads code from standard input (interactive)",
			"--env-file":                 "reads options (NODE_OPTIONS) from a file",
			"--env-file-if-exists":       "reads options (NODE_OPTIONS) from a file",
			"--run":                      "runs a package.json script as a shell command",
			"--inspect":                  "opens a debugger port that runs code sent to it",
			"--inspect-brk":              "opens a debugger port that runs code sent to it",
			"--inspect-wait":             "opens a debugger port that runs code sent to it",
			"--inspect-port":             "opens a debugger port that runs code sent to it",
			"--experimental-config-file": "reads options from a file",
		},
		exits: []string{"-c", "--check", "-h", "--help", "-v", "--version"},
	}
	rubyModel = interpreter{
		spec: optSpec{short: "0aC:cde:E:F:hi::I:lnpr:sSTUvwW::xX:y", stopAtOperand: true,
			long: map[string]argKind{"version": noArg, "help": noArg}},
		code: map[string]string{
			"-e": "runs inline code", "-r": "loads a library named in its argument",
		},
		exits: []string{"-v", "--version", "-h", "--help", "-c"},
	}
	phpModel = interpreter{
		spec: optSpec{short: "aB:c:d:e:f:F:hHiI:lmnr:R:E:sS:t:vwz:", stopAtOperand: true},
		code: map[string]string{
			"-r": "runs inline code", "-B": "runs inline code", "-R": "runs inline code", "-E": "runs inline code",
			"-a": "reads code from standard input (interactive)", "-d": "sets ini entries (auto_prepend_file runs a file)",
			"-c": "reads a php.ini that can run files", "-z": "loads a Zend extension", "-S": "runs a web server that runs scripts",
			"-F": "runs a file for each input line",
		},
		exits: []string{"-v", "-h", "-i", "-m", "-l"},
	}
	luaModel = interpreter{
		spec:  optSpec{short: "e:il:vEW", stopAtOperand: true},
		code:  map[string]string{"-e": "runs inline code", "-l": "loads a library named in its argument", "-i": "reads code from standard input (interactive)"},
		exits: []string{"-v"},
	}
)

// interpreterFor returns the model of an interpreter name (python3.12 is
// python), or nil.
func interpreterFor(base string) *interpreter {
	for prefix, m := range map[string]*interpreter{"python": &pythonModel, "perl": &perlModel, "ruby": &rubyModel,
		"php": &phpModel, "lua": &luaModel, "luajit": &luaModel, "node": &nodeModel, "nodejs": &nodeModel} {
		if rest, ok := strings.CutPrefix(base, prefix); ok && strings.Trim(rest, "0123456789.") == "" {
			return m
		}
	}
	return nil
}

// otherInterpreters are runtimes without a full model: these options of
// theirs take program text, and they read a program from standard input
// without a script.
var otherInterpreters = map[string][]string{
	"bun":       {"-e", "--eval", "-p", "--print", "-r", "--preload"},
	"deno":      {"eval", "repl"},
	"Rscript":   {"-e"},
	"R":         {"-e"},
	"tclsh":     {},
	"wish":      {},
	"osascript": {"-e"},
	"julia":     {"-e", "-E", "--eval", "--print", "-L", "--load", "-i"},
}

// stdinScript reports whether a script operand names standard input.
func stdinScript(s string) bool {
	switch s {
	case "-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "/proc/thread-self/fd/0":
		return true
	}
	return strings.HasPrefix(s, "/proc/") && strings.Contains(s, "/fd/") || strings.HasPrefix(s, "/dev/fd/")
}

// inspect applies an interpreter's model to args (word i+1 is args[i]).
func (m *interpreter) inspect(name string, args []string) []finding {
	p := m.spec.parse(args, 1)
	var out []finding
	for _, o := range p.opts {
		if why, ok := m.code[o.name]; ok {
			out = append(out, finding{o.idx, fmt.Sprintf("%s option %s %s", name, spelled(o, args), why)})
		} else if m == &pythonModel && o.name == "-X" && strings.HasPrefix(o.value, "presite") {
			out = append(out, finding{o.idx, fmt.Sprintf("%s option -X presite imports a module named in its argument", name)})
		} else if parts := strings.Split(o.value, ":"); m == &pythonModel && o.name == "-W" && len(parts) > 2 && strings.Contains(parts[2], ".") {
			out = append(out, finding{o.idx, fmt.Sprintf("%s option -W with a dotted category imports a module named in its argument", name)})
		}
	}
	if len(out) > 0 {
		return out
	}
	if p.unknownAt >= 0 && (len(p.operands) == 0 || p.unknownAt <= p.operands[0].idx) {
		return []finding{{p.unknownAt, fmt.Sprintf("%s has an argument only known at run time where an option or the script goes", name)}}
	}
	for _, o := range p.opts {
		for _, e := range m.exits {
			if o.name == e {
				return nil
			}
		}
	}
	if len(p.operands) == 0 {
		return []finding{{len(args) + 1, fmt.Sprintf("%s without a script reads its program from standard input (inline code)", name)}}
	}
	if s := p.operands[0]; stdinScript(s.value) {
		return []finding{{s.idx, fmt.Sprintf("%s script %s reads its program from standard input (inline code)", name, s.value)}}
	}
	return nil
}

// spelled is how an option was written, for a reason: "--ev (--eval)".
func spelled(o opt, args []string) string {
	if o.typed != "" && "--"+o.typed != o.name {
		return fmt.Sprintf("--%s (%s)", o.typed, o.name)
	}
	return o.name
}

// inspectOther applies the small table of otherInterpreters.
func inspectOther(name string, flags []string, args []string) []finding {
	for i, a := range args {
		if a == unknownWord {
			return []finding{{i + 1, fmt.Sprintf("%s has an argument only known at run time", name)}}
		}
		for _, f := range flags {
			long := strings.HasPrefix(f, "--")
			switch {
			case a == f, long && strings.HasPrefix(a, f+"="),
				!long && strings.HasPrefix(f, "-") && strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a[1:], f[1:]):
				return []finding{{i + 1, fmt.Sprintf("%s option %s runs inline code", name, f)}}
			}
		}
	}
	if len(args) == 0 || stdinScript(args[len(args)-1]) {
		return []finding{{len(args) + 1, fmt.Sprintf("%s without a script reads its program from standard input (inline code)", name)}}
	}
	return nil
}
