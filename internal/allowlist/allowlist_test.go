package allowlist

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testChecker lists ls, echo, grep, nohup and timeout, resolves names on
// the real PATH, and refuses PATH and LD_* assignments as the per-call env
// rules do.
func testChecker(shell string) *Checker {
	return &Checker{
		Entries:  []string{"ls", "echo", "grep", "nohup", "timeout", "env", "export"},
		Shell:    shell,
		LookPath: exec.LookPath,
		AssignKey: func(key string) string {
			if key == "PATH" || strings.HasPrefix(strings.ToUpper(key), "LD_") {
				return "assignment to " + key + " is forbidden"
			}
			return ""
		},
	}
}

func TestAllowlist(t *testing.T) {
	allowed := []string{
		"ls",
		"ls -la",
		`echo "a; b"`,
		`echo 'a && b' "$(echo nested)"`,
		"ls | grep x",
		"ls && echo ok || echo no",
		"ls; echo done",
		"FOO=1 echo ok",
		"ls > /dev/null 2>&1",
		"ls 2>/dev/null",
		"ls < /etc/hostname",
		"echo $HOME ${HOME:-/}",
		"(ls) && { echo a; }",
		"if ls; then echo y; else echo n; fi",
		"for f in a b; do echo $f; done",
		"while ls; do echo; done",
		"ls &",
		"echo $((1 + 2))",
		"nohup ls",
		"timeout 5 ls -la",
		"timeout -s KILL 5 ls",
		"env FOO=1 ls",
		"env -i ls",
		`\ls`,
		`"ls" -l`,
		"/usr/bin/ls",
		"echo <<EOF\nplain text\nEOF",
		"echo a\necho b",
		"grep -r x . | grep -v y",
		"export FOO=1 && echo $FOO",
		"! ls",
		"case x in x) echo x;; esac",
	}
	for _, line := range allowed {
		t.Run("allows "+line, func(t *testing.T) {
			for _, sh := range []string{"bash", "sh"} {
				v, err := testChecker(sh).Check(line)
				require.NoError(t, err, sh)
				assert.True(t, v.Allowed, "%s: %s (%+v)", sh, v.Reason(), v.Commands)
			}
		})
	}

	refused := []struct{ line, reason string }{
		{"ls; touch x", `"touch" is not on the allowlist`},
		{"ls && touch x", `"touch" is not on the allowlist`},
		{"ls || touch x", `"touch" is not on the allowlist`},
		{"ls & touch x", `"touch" is not on the allowlist`},
		{"ls\ntouch x", `"touch" is not on the allowlist`},
		{"ls $(touch x)", `"touch" is not on the allowlist`},
		{"echo `touch x`", `"touch" is not on the allowlist`},
		{"ls | sh -c x", `"sh" is not on the allowlist`},
		{"ls | bash", `"bash" is not on the allowlist`},
		{"ls > /etc/f", `output redirection to "/etc/f" is not allowlisted (only /dev/null is)`},
		{"ls >> f", `output redirection to "f" is not allowlisted (only /dev/null is)`},
		{"ls <> f", `output redirection to "f" is not allowlisted (only /dev/null is)`},
		{"ls &> f", `output redirection to "f" is not allowlisted (only /dev/null is)`},
		{"ls > $F", "redirection target $F is only known at run time"},
		{"echo x > /dev/tcp/127.0.0.1/80", `redirection to "/dev/tcp/127.0.0.1/80" opens a network connection`},
		{`"ls" && touch x`, `"touch" is not on the allowlist`},
		{"(touch x)", `"touch" is not on the allowlist`},
		{"{ touch x; }", `"touch" is not on the allowlist`},
		{"ls <(touch x)", `"touch" is not on the allowlist`},
		{"cat <<EOF\n$(touch x)\nEOF", `"cat" is not on the allowlist`},
		{"echo <<EOF\n$(touch x)\nEOF", `"touch" is not on the allowlist`},
		{"$X", "the command name $X is only known at run time"},
		{"l$X", "the command name l$X is only known at run time"},
		{"$(echo ls)", "the command name $(echo ls) is only known at run time"},
		{"eval ls", `"eval" is not on the allowlist`},
		{"./ls", `"./ls" is not on the allowlist`},
		{"l?", "the command name l? is only known at run time"},
		{"{ls,-la}", "the command name {ls,-la} is only known at run time"},
		{"~/ls", "the command name ~/ls is only known at run time"},
		{"PATH=. ls", "assignment to PATH is forbidden"},
		{"LD_PRELOAD=x ls", "assignment to LD_PRELOAD is forbidden"},
		{"PATH=/tmp; ls", "assignment to PATH is forbidden"},
		{"env PATH=/tmp ls", "assignment to PATH is forbidden"},
		{"BASH_CMDS[ls]=/tmp/x; ls", "assignment to BASH_CMDS changes how bash finds or runs commands"},
		{"ls() { echo hi; }; ls", `a function named "ls" would shadow the listed command`},
		{"f() { touch x; }; f", `"touch" is not on the allowlist`},
		{"nohup touch x", `"touch" is not on the allowlist`},
		{"timeout 5 touch x", `"touch" is not on the allowlist`},
		{"env touch x", `"touch" is not on the allowlist`},
		{"env -S 'touch x'", "env -S splits a string into a command this check cannot read"},
		{"timeout --weird 5 ls", `"timeout" wraps no command this check can read`},
		{"xargs touch", `"xargs" is not on the allowlist`},
		{"x='a[$(touch y)]'; echo $((x))", "arithmetic on variables is not allowlisted (bash can run code named in a variable's value)"},
		{"echo ${!X}", "indirect expansion ${!…} is not allowlisted (its target is only known at run time)"},
		{"echo ${X@P}", "${…@…} transformations are not allowlisted (@P expands prompts, which runs commands)"},
		{"declare -x FOO=1", "declare declares variables, which is not allowlisted"},
		{"export PATH=/tmp", "assignment to PATH is forbidden"},
		{"[[ $x -eq 1 ]]", "[[ ]] arithmetic comparisons of anything but numbers are not allowlisted"},
		{"alias ls=touch", `"alias" is not on the allowlist`},
		{"exec touch x", `"exec" is not on the allowlist`},
		{"echo $'\\' ; touch x ;\n echo '", "posix"},
	}
	for _, tc := range refused {
		t.Run("refuses "+tc.line, func(t *testing.T) {
			v, err := testChecker("bash").Check(tc.line)
			var pe *ParseError
			if errors.As(err, &pe) {
				// Only the dialect-confusion payload is a parse error, and only under sh.
				t.Fatalf("bash did not parse %q: %v", tc.line, err)
			}
			require.NoError(t, err)
			if tc.reason == "posix" {
				// One word to bash; under sh (dash) it runs touch, so the
				// sh checker must refuse it.
				_, err := testChecker("sh").Check(tc.line)
				require.ErrorAs(t, err, &pe)
				return
			}
			assert.False(t, v.Allowed)
			assert.Equal(t, tc.reason, v.Reason())
		})
	}
}

func TestWrappedCommandsAreCheckedEvenWhenListed(t *testing.T) {
	c := &Checker{Entries: []string{"sh", "python3", "find", "git", "sed", "eval", "xargs", "awk"}, LookPath: exec.LookPath}
	for line, reason := range map[string]string{
		"sh -c 'touch x'":            `"sh" is a shell: the code it runs is only known at run time`,
		"sh script.sh":               `"sh" is a shell: the code it runs is only known at run time`,
		"python3 -c 'print(1)'":      "python3 option -c runs inline code",
		"python3 -Bc 'print(1)'":     "python3 option -c runs inline code",
		"find . -exec touch {} ;":    "find -exec runs commands or writes files",
		"git -c core.pager=x log":    "git option -c sets configuration, which can make git run any program",
		"sed 's/a/b/e' f":            "sed script may execute commands (s///e flag)",
		"sed -e '1e touch x' f":      "sed option -e (--expression) runs a script that may execute commands (e command)",
		"sed 'w /etc/x' f":           "sed script writes files (w command)",
		"eval ls":                    `"eval" runs its arguments as shell code`,
		"xargs touch":                `"xargs" runs commands or code this check cannot read`,
		"awk 'BEGIN{system(\"x\")}'": `"awk" runs commands or code this check cannot read`,
	} {
		v, err := c.Check(line)
		require.NoError(t, err, line)
		assert.False(t, v.Allowed, line)
		assert.Equal(t, reason, v.Reason(), line)
	}
	for _, line := range []string{"python3 x.py", "find . -name '*.go'", "git log --oneline", "sed 's/hello/world/g' f", "sed -n '1,5p' f"} {
		v, err := c.Check(line)
		require.NoError(t, err, line)
		assert.True(t, v.Allowed, "%s: %s", line, v.Reason())
	}
}

func TestCommandsAreReportedInOrder(t *testing.T) {
	v, err := testChecker("bash").Check("ls -la | grep $(echo x) && nohup touch f")
	require.NoError(t, err)
	var got [][]string
	var listed []bool
	for _, c := range v.Commands {
		got = append(got, c.Args)
		listed = append(listed, c.Allowlisted)
	}
	assert.Equal(t, [][]string{{"ls", "-la"}, {"grep", "$(echo x)"}, {"echo", "x"}, {"nohup", "touch", "f"}, {"touch", "f"}}, got)
	assert.Equal(t, []bool{true, true, true, true, false}, listed)
	assert.False(t, v.Allowed)
}

func TestAbsolutePathsMatchTheSameFile(t *testing.T) {
	lsPath, err := exec.LookPath("ls")
	require.NoError(t, err)
	c := &Checker{Entries: []string{"ls"}, LookPath: exec.LookPath}
	v, err := c.Check(lsPath + " -l")
	require.NoError(t, err)
	assert.True(t, v.Allowed, v.Reason())
	c = &Checker{Entries: []string{lsPath}, LookPath: exec.LookPath}
	v, err = c.Check("ls -l")
	require.NoError(t, err)
	assert.True(t, v.Allowed, v.Reason())
	v, err = c.Check("/bin/true")
	require.NoError(t, err)
	assert.False(t, v.Allowed)
}

func TestUnparsableLinesAreErrors(t *testing.T) {
	_, err := testChecker("bash").Check("ls 'unterminated")
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "bash syntax: 1:4: reached EOF without closing quote `'`")
}
