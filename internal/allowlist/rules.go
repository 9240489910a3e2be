package allowlist

import (
	"fmt"
	"strings"
)

// rule is one allowlist entry: a program and the words its arguments
// must start with ("git status" is git with the prefix [status]).
type rule struct {
	program string
	prefix  []string
}

// rules splits the entries on white space; an empty entry is no rule.
func (c *Checker) rules() []rule {
	out := make([]rule, 0, len(c.Entries))
	for _, e := range c.Entries {
		f := strings.Fields(e)
		if len(f) == 0 {
			continue
		}
		out = append(out, rule{program: f[0], prefix: f[1:]})
	}
	return out
}

// match decides a command whose program is name and whose arguments are
// args (unknownWord where only known at run time), given what the tool
// model found. It returns "" when an entry allows it, else the reason.
//
// An entry allows the command when its program matches, its prefix words
// equal the first arguments, and every finding is about a later word: the
// entry's own words are what the operator listed, so "python3 -m pytest"
// allows -m pytest, but nothing more.
func (c *Checker) match(name string, args []string, findings []finding) string {
	matched := false
	reason := ""
	var prefixes []string
	for _, r := range c.rules() {
		if !c.programMatches(r.program, name) {
			continue
		}
		if len(r.prefix) > 0 {
			prefixes = append(prefixes, strings.Join(append([]string{r.program}, r.prefix...), " "))
		}
		if !hasPrefix(args, r.prefix) {
			continue
		}
		matched = true
		left := ""
		for _, f := range findings {
			if f.idx < 1 || f.idx > len(r.prefix) { // 0: the program itself
				left = f.reason
				break
			}
		}
		if left == "" {
			return ""
		}
		if reason == "" {
			reason = left
		}
	}
	switch {
	case matched:
		return reason
	case len(prefixes) > 0:
		return fmt.Sprintf("%q is on the allowlist only as %s", name, strings.Join(prefixes, ", "))
	}
	return fmt.Sprintf("%q is not on the allowlist", name)
}

func hasPrefix(args, prefix []string) bool {
	if len(prefix) > len(args) {
		return false
	}
	for i, p := range prefix {
		if args[i] != p {
			return false
		}
	}
	return true
}
