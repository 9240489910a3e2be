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
