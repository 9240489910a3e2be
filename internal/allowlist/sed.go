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
	sc := &sedScan{s: s}
	for sc.i < len(s) {
		c := s[sc.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '{' || c == '}' || c == '!' || c == ',' ||
			c == '$' || c == '~' || c == '+' || c >= '0' && c <= '9':
			sc.i++
		case c == '/' || c == '\\':
			if !sc.address() {
				return ""
			}
		case c == 's':
			sc.i++
			if !sc.skipDelimited(2) {
				return ""
			}
			if f := sc.sFlags(); f != "" {
				return f
			}
		case c == 'y':
			sc.i++
			if !sc.skipDelimited(2) {
				return ""
			}
		case c == 'e':
			return "e command"
		case c == 'w' || c == 'W':
			return string(c) + " command"
		case c == ':' || c == 'b' || c == 't' || c == 'T' || c == 'q' || c == 'Q' || c == 'l' || c == 'L':
			sc.i++
			sc.label()
		case c == 'a' || c == 'i' || c == 'c' || c == 'r' || c == 'R':
			// Text or a file name to the end of the line.
			for sc.i < len(s) && s[sc.i] != '\n' {
				sc.i++
			}
		default:
			sc.i++ // p d D n N g G h H x z = F v …
		}
	}
	return ""
}

// sedScan is a position i in a sed script s.
type sedScan struct {
	s string
	i int
}

// skipDelimited skips n parts delimited by s[i] (a backslash escapes the
// next byte); false when the script ends first.
func (sc *sedScan) skipDelimited(n int) bool {
	s := sc.s
	if sc.i >= len(s) {
		return false
	}
	d := s[sc.i]
	sc.i++
	for ; n > 0; n-- {
		for sc.i < len(s) && s[sc.i] != d {
			if s[sc.i] == '\\' {
				sc.i++
			}
			sc.i++
		}
		if sc.i >= len(s) {
			return false
		}
		sc.i++
	}
	return true
}

// address skips a regular expression address (/re/ or \cREc) and its I
// and M flags; false when the script ends first.
func (sc *sedScan) address() bool {
	if sc.s[sc.i] == '\\' {
		sc.i++
	}
	if !sc.skipDelimited(1) {
		return false
	}
	for sc.i < len(sc.s) && (sc.s[sc.i] == 'I' || sc.s[sc.i] == 'M') {
		sc.i++
	}
	return true
}

// sFlags reads an s command's flags, up to the command's end, and names
// the one that runs a command or writes a file, or "".
func (sc *sedScan) sFlags() string {
	s := sc.s
	for sc.i < len(s) && s[sc.i] != ';' && s[sc.i] != '\n' && s[sc.i] != '}' {
		switch s[sc.i] {
		case 'e':
			return "s///e flag"
		case 'w', 'W':
			return "s///w flag"
		}
		sc.i++
	}
	return ""
}

// label skips a label or a number: GNU sed ends it at ";" and at blanks
// too (":x e cmd" runs cmd).
func (sc *sedScan) label() {
	s := sc.s
	for sc.i < len(s) && (s[sc.i] == ' ' || s[sc.i] == '\t') {
		sc.i++
	}
	for sc.i < len(s) && s[sc.i] != '\n' && s[sc.i] != ';' && s[sc.i] != '}' && s[sc.i] != ' ' && s[sc.i] != '\t' {
		sc.i++
	}
}
