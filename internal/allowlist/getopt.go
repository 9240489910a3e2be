package allowlist

import "strings"

// unknownWord stands for a word only known at run time ($x, $(cmd)).
const unknownWord = "\x00"

// argKind is what an option takes.
type argKind int

const (
	noArg       argKind = iota
	requiredArg         // attached (-evalue, --opt=value) or the next word
	optionalArg         // attached only (-i.bak, --in-place=.bak)
)

// optSpec describes a program's options the way GNU getopt_long reads
// them. Options not in it are read as flags without a value: a value
// misread that way is then looked at as an option itself, which errs on
// the side of refusing.
type optSpec struct {
	short string             // letters; ':' after one takes a value, '::' an attached one
	long  map[string]argKind // names without "--"
	// stopAtOperand ends the options at the first operand (POSIX, and
	// interpreters whose first operand is the script); GNU tools permute.
	stopAtOperand bool
	// stopAfter lists short options whose value ends the options
	// (python -c and -m: the words after them are the program's).
	stopAfter string
}

// opt is one option found in the words: its name ("-e" or
// "--expression", the full name when a prefix named one known option),
// its value, and the index of the word that named it.
type opt struct {
	name     string
	value    string
	hasValue bool
	idx      int
	// typed is a long option's name as written, and exact whether it is
	// a known name: otherwise it may abbreviate any name it begins
	// (GNU getopt accepts an unambiguous prefix).
	typed string
	exact bool
	// inline is true when a long option's value was written after "=".
	inline bool
}

// operand is a word that is not an option.
type operand struct {
	value string
	idx   int
}

// parsed is what getopt made of a command's arguments.
type parsed struct {
	opts     []opt
	operands []operand
	// unknownAt is the index of the first word only known at run time in
	// an option position, or -1: it could be any option.
	unknownAt int
}

func (s optSpec) shortKind(c byte) (argKind, bool) {
	i := strings.IndexByte(s.short, c)
	if i < 0 || c == ':' {
		return noArg, false
	}
	switch {
	case strings.HasPrefix(s.short[i+1:], "::"):
		return optionalArg, true
	case strings.HasPrefix(s.short[i+1:], ":"):
		return requiredArg, true
	}
	return noArg, true
}

// longMatches returns the known long names that name may stand for: an
// exact match alone, else every name it is a prefix of.
func (s optSpec) longMatches(name string) []string {
	if _, ok := s.long[name]; ok {
		return []string{name}
	}
	var out []string
	for n := range s.long {
		if strings.HasPrefix(n, name) {
			out = append(out, n)
		}
	}
	return out
}

// parse reads args (the words after the program name, index base in the
// command's words) with getopt_long's rules: bundled short options, values
// attached or in the next word, --name=value, abbreviated long names, and
// "--" to end the options.
func (s optSpec) parse(args []string, base int) parsed {
	p := parsed{unknownAt: -1}
	for i := 0; i < len(args); i++ {
		a, idx := args[i], base+i
		switch {
		case a == unknownWord:
			if p.unknownAt < 0 {
				p.unknownAt = idx
			}
			p.operands = append(p.operands, operand{a, idx})
			if s.stopAtOperand {
				p.rest(args[i+1:], idx+1)
				return p
			}
		case a == "--":
			p.rest(args[i+1:], idx+1)
			return p
		case strings.HasPrefix(a, "--"):
			i = s.longOpt(&p, args, i, base)
		case strings.HasPrefix(a, "-") && a != "-":
			var stop bool
			if i, stop = s.shortOpts(&p, args, i, base); stop {
				p.rest(args[i+1:], base+i+1)
				return p
			}
		default:
			p.operands = append(p.operands, operand{a, idx})
			if s.stopAtOperand {
				p.rest(args[i+1:], idx+1)
				return p
			}
		}
	}
	return p
}

// longOpt reads the long option args[i] into p, and its value from the
// next word when it takes one and has none inline; it returns the index
// of the last word it read.
func (s optSpec) longOpt(p *parsed, args []string, i, base int) int {
	name, value, hasValue := strings.Cut(args[i][2:], "=")
	o := opt{name: "--" + name, value: value, hasValue: hasValue, idx: base + i, typed: name, inline: hasValue}
	matches := s.longMatches(name)
	kind := noArg
	if len(matches) == 1 {
		o.name = "--" + matches[0]
		o.exact = matches[0] == name
		kind = s.long[matches[0]]
	}
	if kind == requiredArg && !hasValue && i+1 < len(args) {
		i++
		o.value, o.hasValue = args[i], true
	}
	p.opts = append(p.opts, o)
	return i
}

// shortOpts reads the bundle of short options args[i] into p: each up to
// the first that takes a value, which is the rest of the word or, when it
// requires one, the next word. It returns the index of the last word it
// read, and whether that option ends the options (stopAfter).
func (s optSpec) shortOpts(p *parsed, args []string, i, base int) (last int, stop bool) {
	a, idx := args[i], base+i
	for j := 1; j < len(a); j++ {
		kind, _ := s.shortKind(a[j])
		o := opt{name: "-" + a[j:j+1], idx: idx}
		if kind == noArg {
			p.opts = append(p.opts, o)
			continue
		}
		if j+1 < len(a) {
			o.value, o.hasValue = a[j+1:], true
		} else if kind == requiredArg && i+1 < len(args) {
			i++
			o.value, o.hasValue = args[i], true
		}
		p.opts = append(p.opts, o)
		return i, strings.IndexByte(s.stopAfter, a[j]) >= 0
	}
	return i, false
}

// rest adds words after the options as operands.
func (p *parsed) rest(args []string, base int) {
	for i, a := range args {
		p.operands = append(p.operands, operand{a, base + i})
	}
}

// has returns the options named by any of names (short "-e", long
// "--eval"). A long option that is not exactly a known name matches every
// name it begins, so --ev and --e both count as --eval.
func (p parsed) has(names ...string) []opt {
	var out []opt
	for _, o := range p.opts {
		for _, n := range names {
			long, isLong := strings.CutPrefix(n, "--")
			switch {
			case !isLong && o.name == n,
				isLong && o.typed != "" && o.exact && o.typed == long,
				isLong && o.typed != "" && !o.exact && strings.HasPrefix(long, o.typed):
				out = append(out, o)
			default:
				continue
			}
			break
		}
	}
	return out
}
