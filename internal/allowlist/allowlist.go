package allowlist

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Checker checks command lines against a list of allowed programs. Its
// zero value allows nothing. It is safe for concurrent use once set up.
type Checker struct {
	// Entries are the allowlist rules, split on white space (a word of an
	// entry cannot contain a space, and quotes are not removed). The first
	// word is the program: a bare name ("ls") matches a command of that
	// name, or a command given by an absolute path that is the same file
	// as the name found on PATH; an absolute path matches commands that
	// resolve to the same file; a relative path ("./ls") matches nothing.
	// Further words are an argument prefix ("git status", "python3 -m
	// pytest"): the command's words after quote removal must start with
	// them, and the program's own model does not apply to them. See the
	// package documentation for what a listed program can still do.
	Entries []string
	// Shell is the shell that will run the line ("bash", "/bin/sh" …); it
	// picks the parser dialects. Empty means sh.
	Shell string
	// LookPath resolves a command name on PATH; nil means no name resolves
	// (names then match by name only).
	LookPath func(name string) (string, error)
	// HostLookPath, when set, is how the host resolves names, and
	// LookPath resolves them on another PATH (a shell state's): a bare
	// name then matches its entry only when both resolve it to the same
	// file, so a program of the same name earlier on the other PATH is
	// not the listed one. Nil: a bare name matches by name.
	HostLookPath func(name string) (string, error)
	// AssignKey vets the key of a variable assignment (FOO=1 cmd, FOO=1):
	// it returns "" to accept it, else the reason it is refused. Nil
	// accepts every key.
	AssignKey func(key string) string
}

// Command is one simple command of a checked line.
type Command struct {
	// Args are its words: their values where known statically, else the
	// source text as written.
	Args []string
	// Allowlisted reports whether this command may run.
	Allowlisted bool
	// Reason says why it may not, when Allowlisted is false.
	Reason string
}

// Verdict is the outcome of a check.
type Verdict struct {
	// Commands lists every simple command of the line, in source order
	// (a wrapped command follows its wrapper).
	Commands []Command
	// Problems are reasons that belong to no single command (a redirection
	// of a group, arithmetic on variables, a function definition).
	Problems []string
	// Allowed is true when every command is allowlisted and there are no
	// problems.
	Allowed bool
}

// Reason is the first reason the line is not allowed, or "".
func (v *Verdict) Reason() string {
	if v.Allowed {
		return ""
	}
	for _, c := range v.Commands {
		if !c.Allowlisted {
			return c.Reason
		}
	}
	if len(v.Problems) > 0 {
		return v.Problems[0]
	}
	return "the line runs no command"
}

// ParseError is a line that does not parse as shell.
type ParseError struct {
	Dialect string // "bash" or "posix"
	Err     error
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s syntax: %v", e.Dialect, e.Err) }

func (e *ParseError) Unwrap() error { return e.Err }

// Check parses line and reports what it runs. A line that does not parse
// in one of the shell's dialects is a *ParseError. The commands reported
// are those of the first dialect; the line is allowed only when every
// dialect allows it.
func (c *Checker) Check(line string) (Verdict, error) {
	var first Verdict
	for i, lang := range c.dialects() {
		f, err := syntax.NewParser(syntax.Variant(lang), syntax.KeepComments(false)).Parse(strings.NewReader(line), "")
		if err != nil {
			return Verdict{}, &ParseError{Dialect: lang.String(), Err: err}
		}
		w := walker{c: c, src: line, handled: map[*syntax.CallExpr]bool{}}
		w.file(f)
		v := Verdict{Commands: w.cmds, Problems: w.problems}
		v.Allowed = len(v.Commands) > 0 && len(v.Problems) == 0 &&
			!slices.ContainsFunc(v.Commands, func(c Command) bool { return !c.Allowlisted })
		if i == 0 {
			first = v
		} else if !v.Allowed && first.Allowed {
			// The other dialect sees something else: report its view.
			first = v
		}
	}
	return first, nil
}

func (c *Checker) dialects() []syntax.LangVariant {
	switch base := filepath.Base(c.Shell); base {
	case "bash", "rbash":
		return []syntax.LangVariant{syntax.LangBash}
	case "mksh", "ksh":
		return []syntax.LangVariant{syntax.LangMirBSDKorn, syntax.LangPOSIX}
	default:
		// sh, dash, ash and anything unknown: both readings must allow it.
		return []syntax.LangVariant{syntax.LangPOSIX, syntax.LangBash}
	}
}

// walker collects the commands and problems of one parsed line.
type walker struct {
	c        *Checker
	src      string
	cmds     []Command
	problems []string
	handled  map[*syntax.CallExpr]bool
}

func (w *walker) file(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			w.stmt(n)
		case *syntax.CallExpr:
			if !w.handled[n] {
				w.call(n)
			}
		case *syntax.FuncDecl:
			if n.Name != nil && w.c.listed(n.Name.Value) {
				w.problem(fmt.Sprintf("a function named %q would shadow the listed command", n.Name.Value))
			}
			for _, l := range n.Names {
				if w.c.listed(l.Value) {
					w.problem(fmt.Sprintf("a function named %q would shadow the listed command", l.Value))
				}
			}
		case *syntax.DeclClause:
			w.decl(n)
		case *syntax.LetClause:
			w.problem("let evaluates arithmetic, which can run code in bash")
		case *syntax.ArithmCmd:
			w.arith(n.X)
		case *syntax.ArithmExp:
			w.arith(n.X)
		case *syntax.CStyleLoop:
			w.arith(n.Init)
			w.arith(n.Cond)
			w.arith(n.Post)
		case *syntax.ParamExp:
			w.param(n)
		case *syntax.TestClause:
			w.test(n.X)
		case *syntax.Assign:
			if n.Index != nil {
				w.arith(n.Index)
			}
		case *syntax.ExtGlob:
			// A pattern, not a command; fine as an argument.
		}
		return true
	})
}

// stmt checks one statement's redirections; a simple command is checked
// here so the redirections can be charged to it.
func (w *walker) stmt(s *syntax.Stmt) {
	idx := -1
	if call, ok := s.Cmd.(*syntax.CallExpr); ok {
		idx = w.call(call)
	}
	for _, r := range s.Redirs {
		reason := w.redirect(r)
		if reason == "" {
			continue
		}
		if idx >= 0 {
			w.refuse(idx, reason)
		} else {
			w.problem(reason)
		}
	}
}

// redirect returns why a redirection is not allowed, or "".
func (w *walker) redirect(r *syntax.Redirect) string {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return "" // the body's substitutions are walked as words
	}
	target, static := w.value(r.Word, false)
	if !static {
		return fmt.Sprintf("redirection target %s is only known at run time", w.text(r.Word))
	}
	if strings.HasPrefix(target, "/dev/tcp/") || strings.HasPrefix(target, "/dev/udp/") {
		return fmt.Sprintf("redirection to %q opens a network connection", target)
	}
	switch r.Op {
	case syntax.RdrIn:
		return ""
	case syntax.DplIn, syntax.DplOut:
		if isFD(target) {
			return ""
		}
		if r.Op == syntax.DplIn {
			return ""
		}
	}
	if target == "/dev/null" {
		return ""
	}
	return fmt.Sprintf("output redirection to %q is not allowlisted (only /dev/null is)", target)
}

func isFD(s string) bool {
	s = strings.TrimSuffix(s, "-")
	if s == "" {
		return true // ">&-" closes
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// call records one simple command (and what a wrapper runs) and returns
// its index, or -1 for a bare assignment.
func (w *walker) call(ce *syntax.CallExpr) int {
	w.handled[ce] = true
	for _, a := range ce.Assigns {
		w.assign(a)
	}
	if len(ce.Args) == 0 {
		return -1
	}
	return w.argv(ce.Args)
}

func (w *walker) assign(a *syntax.Assign) {
	if a.Name == nil {
		return
	}
	key := a.Name.Value
	if strings.HasPrefix(key, "BASH") || key == "EXECIGNORE" {
		w.problem(fmt.Sprintf("assignment to %s changes how bash finds or runs commands", key))
		return
	}
	if why, ok := toolEnv[key]; ok {
		w.problem(fmt.Sprintf("assignment to %s %s", key, why))
		return
	}
	if w.c.AssignKey != nil {
		if reason := w.c.AssignKey(key); reason != "" {
			w.problem(reason)
		}
	}
}

// argv records the command made of words and returns its index.
func (w *walker) argv(words []*syntax.Word) int {
	args := make([]string, len(words))
	for i, wd := range words {
		v, ok := w.value(wd, false)
		if !ok {
			v = w.text(wd)
		}
		args[i] = v
	}
	idx := len(w.cmds)
	w.cmds = append(w.cmds, Command{Args: args, Allowlisted: true})
	name, static := w.value(words[0], true)
	if !static {
		w.refuse(idx, fmt.Sprintf("the command name %s is only known at run time", w.text(words[0])))
		return idx
	}
	findings, inner := w.runner(name, words)
	if reason := w.c.match(name, w.staticArgs(words), findings); reason != "" {
		w.refuse(idx, reason)
	}
	if inner > 0 {
		w.argv(words[inner:])
	} else if inner < 0 {
		w.refuse(idx, fmt.Sprintf("%q wraps no command this check can read", name))
	}
	return idx
}

// staticArgs are the words after the command name, with unknownWord for
// those only known at run time.
func (w *walker) staticArgs(words []*syntax.Word) []string {
	out := make([]string, 0, len(words)-1)
	for _, wd := range words[1:] {
		v, ok := w.value(wd, false)
		if !ok {
			v = unknownWord
		}
		out = append(out, v)
	}
	return out
}

func (w *walker) refuse(idx int, reason string) {
	if w.cmds[idx].Allowlisted {
		w.cmds[idx].Allowlisted = false
		w.cmds[idx].Reason = reason
	}
}

func (w *walker) problem(reason string) { w.problems = append(w.problems, reason) }

// decl handles export, declare, local, readonly, typeset and nameref.
func (w *walker) decl(d *syntax.DeclClause) {
	variant := d.Variant.Value
	if variant != "export" || !w.c.listed("export") {
		w.problem(fmt.Sprintf("%s declares variables, which is not allowlisted", variant))
		return
	}
	for _, a := range d.Args {
		if a.Name == nil || a.Naked && a.Value != nil {
			w.problem("export with options or computed names is not allowlisted")
			continue
		}
		w.assign(a)
	}
}

// arith refuses arithmetic that reads anything but number literals: in
// bash, evaluating a variable whose value is a[$(cmd)] runs cmd.
func (w *walker) arith(x syntax.ArithmExpr) {
	if x == nil {
		return
	}
	ok := true
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Word:
			if lit := n.Lit(); lit == "" || !isNumber(lit) {
				ok = false
			}
			return false
		case *syntax.ParamExp:
			ok = false
			return false
		case *syntax.UnaryArithm:
			if n.Op == syntax.Inc || n.Op == syntax.Dec {
				ok = false
			}
		case *syntax.BinaryArithm:
			if n.Op >= syntax.Assgn && n.Op <= syntax.ShrAssgn {
				ok = false
			}
		}
		return true
	})
	if !ok {
		w.problem("arithmetic on variables is not allowlisted (bash can run code named in a variable's value)")
	}
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '#' || r == '_' || r == '@') {
			return false
		}
	}
	// Starts with a digit: 10, 0x1f, 2#101. A leading letter is a name.
	return s[0] >= '0' && s[0] <= '9'
}

func (w *walker) param(p *syntax.ParamExp) {
	switch {
	case p.Excl && p.Names == 0:
		w.problem("indirect expansion ${!…} is not allowlisted (its target is only known at run time)")
	case p.Exp != nil && p.Exp.Op == syntax.OtherParamOps:
		w.problem("${…@…} transformations are not allowlisted (@P expands prompts, which runs commands)")
	}
	if p.Index != nil {
		if wd, ok := p.Index.(*syntax.Word); ok && (wd.Lit() == "@" || wd.Lit() == "*") {
			return
		}
		w.arith(p.Index)
	}
	if p.Slice != nil {
		w.arith(p.Slice.Offset)
		w.arith(p.Slice.Length)
	}
}

// test refuses [[ ]] operators that evaluate arithmetic or variable names.
func (w *walker) test(x syntax.TestExpr) {
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryTest:
			switch n.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				for _, side := range []syntax.TestExpr{n.X, n.Y} {
					if wd, ok := side.(*syntax.Word); !ok || !isNumber(wd.Lit()) {
						w.problem("[[ ]] arithmetic comparisons of anything but numbers are not allowlisted")
						return false
					}
				}
			}
		case *syntax.UnaryTest:
			if n.Op == syntax.TsVarSet || n.Op == syntax.TsRefVar {
				w.problem("[[ -v ]] and [[ -R ]] are not allowlisted (a subscript can run code)")
				return false
			}
		}
		return true
	})
}

// listed reports whether a static command name matches the program of
// an entry.
func (c *Checker) listed(name string) bool {
	for _, r := range c.rules() {
		if c.programMatches(r.program, name) {
			return true
		}
	}
	return false
}

// programMatches reports whether the command name matches an entry's
// program: the same bare name, or the same file (an absolute path, or a
// bare name resolved on PATH). A relative path ("./ls") matches nothing.
func (c *Checker) programMatches(entry, name string) bool {
	if name == "" || entry == "" {
		return false
	}
	hasSlash := strings.Contains(name, "/")
	if hasSlash && !filepath.IsAbs(name) {
		return false // ./ls never matches ls
	}
	if strings.Contains(entry, "/") && !filepath.IsAbs(entry) {
		return false
	}
	if !hasSlash && entry == name {
		return c.HostLookPath == nil || c.sameOnBothPaths(name)
	}
	if c.LookPath == nil {
		return false
	}
	target := name
	if !hasSlash {
		p, err := c.LookPath(name)
		if err != nil {
			return false
		}
		target = p
	}
	p := entry
	if !filepath.IsAbs(entry) {
		// A listed name means the host's program, not one a carried PATH
		// puts first.
		look := c.LookPath
		if c.HostLookPath != nil {
			look = c.HostLookPath
		}
		var err error
		if p, err = look(entry); err != nil {
			return false
		}
	}
	ti, err := os.Stat(target)
	if err != nil {
		return false
	}
	ei, err := os.Stat(p)
	return err == nil && os.SameFile(ti, ei)
}

// sameOnBothPaths reports whether LookPath and HostLookPath resolve name
// to the same file.
func (c *Checker) sameOnBothPaths(name string) bool {
	if c.LookPath == nil {
		return false
	}
	p, err := c.LookPath(name)
	if err != nil {
		return false
	}
	h, err := c.HostLookPath(name)
	if err != nil {
		return false
	}
	pi, err1 := os.Stat(p)
	hi, err2 := os.Stat(h)
	return err1 == nil && err2 == nil && os.SameFile(pi, hi)
}

// value returns a word's value after quote removal, and whether it is
// known statically. For a command name, unquoted glob, brace and tilde
// characters also make it not static.
func (w *walker) value(wd *syntax.Word, name bool) (string, bool) {
	if wd == nil {
		return "", false
	}
	var b strings.Builder
	for i, part := range wd.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			// "[" alone is the test command: a bracket with no closing
			// bracket matches itself.
			if name && len(wd.Parts) == 1 && p.Value == "[" {
				return "[", true
			}
			if name && (strings.ContainsAny(p.Value, "*?[{") || i == 0 && strings.HasPrefix(p.Value, "~")) {
				return "", false
			}
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescape(lit.Value, true))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unescape removes backslash quoting: outside double quotes a backslash
// quotes any character (and a backslash-newline disappears); inside, only
// $ ` " \ and newline.
func unescape(s string, dquoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		next := s[i+1]
		if dquoted && !strings.ContainsRune("$`\"\\\n", rune(next)) {
			b.WriteByte('\\')
			continue
		}
		i++
		if next != '\n' {
			b.WriteByte(next)
		}
	}
	return b.String()
}

// text is a word as written in the line.
func (w *walker) text(wd *syntax.Word) string {
	if wd == nil {
		return ""
	}
	start, end := int(wd.Pos().Offset()), int(wd.End().Offset())
	if start < 0 || end > len(w.src) || start > end {
		return "?"
	}
	return w.src[start:end]
}
