package allowlist

import (
	"fmt"
	"strings"
)

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
