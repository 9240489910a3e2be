package allowlist

import (
	"fmt"
	"strings"
)

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
	var b *badName
	switch name {
	case "printf":
		b = printfBadName(args)
	case "test", "[":
		b = testBadName(name, args)
	case "read":
		b = readBadName(args)
	case "unset":
		for i, a := range args {
			if !strings.HasPrefix(a, "-") && !isName(a) {
				b = &badName{i, "name"}
				break
			}
		}
	case "wait":
		b = waitBadName(args)
	case "getopts":
		if len(args) > 1 && !isName(args[1]) {
			b = &badName{1, "name"}
		}
	}
	if b == nil {
		return nil
	}
	return []finding{{b.arg + 1, fmt.Sprintf("%s %s must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it", name, b.what)}}
}

// badName is a builtin's argument (args[arg]) that names a variable and
// is not a plain name; what says which argument it is.
type badName struct {
	arg  int
	what string
}

// printfBadName checks printf -v NAME and -vNAME; a computed first word
// could be -v.
func printfBadName(args []string) *badName {
	if len(args) == 0 {
		return nil
	}
	switch {
	case args[0] == "-v" && len(args) > 1 && !isName(args[1]):
		return &badName{1, "-v's name"}
	case strings.HasPrefix(args[0], "-v") && len(args[0]) > 2 && !isName(args[0][2:]):
		return &badName{0, "-v's name"}
	case args[0] == unknownWord && len(args) > 1 && !isName(args[1]):
		return &badName{1, "argument after a computed first argument (which could be -v)"}
	}
	return nil
}

// testBadName checks the operands of test's (or ['s) -v and -R, and
// those after a computed word, which could be -v.
func testBadName(name string, args []string) *badName {
	for i, a := range args {
		if i+1 >= len(args) || name == "[" && i+1 == len(args)-1 {
			break
		}
		next := args[i+1]
		if (a == "-v" || a == "-R") && !isName(next) {
			return &badName{i + 1, a + "'s operand"}
		}
		if a == unknownWord && next != unknownWord && !isName(next) && !testBinary[next] {
			return &badName{i + 1, "operand after a computed argument (which could be -v)"}
		}
		if a == unknownWord && next == unknownWord {
			return &badName{i + 1, "operand after a computed argument (which could be -v)"}
		}
	}
	return nil
}

// readBadName checks read's -a name and its names.
func readBadName(args []string) *badName {
	p := optSpec{short: "ersa:d:i:n:N:p:t:u:", stopAtOperand: true}.parse(args, 1)
	for _, o := range p.has("-a") {
		if !isName(o.value) {
			return &badName{o.idx - 1, "-a's name"}
		}
	}
	for _, o := range p.operands {
		if !isName(o.value) {
			return &badName{o.idx - 1, "name"}
		}
	}
	return nil
}

// waitBadName checks wait -p's name (a computed word could be -p).
func waitBadName(args []string) *badName {
	for i, a := range args {
		if a == unknownWord || strings.HasPrefix(a, "-") && strings.Contains(a, "p") {
			if i+1 < len(args) && !isName(args[i+1]) && strings.Trim(args[i+1], "0123456789") != "" {
				return &badName{i + 1, "-p's name"}
			}
		}
	}
	return nil
}

// testBinary are test's binary operators: a computed word before one is
// an operand, not -v.
var testBinary = set("=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef", "-a", "-o", "=~")
