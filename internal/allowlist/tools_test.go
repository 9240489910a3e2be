package allowlist

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// developerEntries is a list a developer would configure: each of these
// can be told to run another program, and the checker must know how.
var developerEntries = []string{"ls", "echo", "cat", "printf", "test", "[", "sed", "git", "python3", "node",
	"perl", "tar", "ssh", "scp", "rsync", "wget", "zip", "sort", "grep", "head", "env", "timeout", "true",
	"find", "read", "unset", "wait", "getopts", "ruby", "php", "lua"}

func TestListedToolsStillDoTheirJob(t *testing.T) {
	for _, line := range []string{
		"git status", "git log --oneline -5", "git diff HEAD~1 -- f", `git commit -m "$msg"`, "git config user.name",
		"git config --get user.name", "git config --list", "git config get user.email", "git -C sub status",
		"git --no-pager log", "git show HEAD:f", "git checkout -b topic", "git ls-remote origin",
		"git clone https://example.com/r.git", "git push origin main", "git rebase -i HEAD~2", "git grep -n x",
		"git stash pop", "git -p log", "git fetch --all --prune",
		"sed -n '1,5p' f", "sed -i 's/a/b/' f", "sed -e 's/a/b/' -e 's/c/d/' f", `sed -E 's/(a)/\1/' f`,
		"sed --expression='s/x/y/' f", "sed -n '/start/,/end/p' f", "sed 's/a/b/g;s/c/d/' f", "sed -n '$p' f",
		"sed '/^#/d' f", "sed -n 'l' f", "sed ':a;N;$!ba;s/\\n/ /g' f", "sed -s -n '1p' f g",
		"python3 script.py -c x", "python3 -u script.py", "python3 -V", "python3 --version",
		"python3 -B -W ignore script.py", "python3 -X importtime script.py", "python3 script.py - /dev/stdin",
		"node app.js", "node --version", "node --max-old-space-size=4096 app.js", "node app.js -e x",
		"perl script.pl", "perl -w script.pl", "perl -v", "perl -i.bak -p script.pl f", "ruby app.rb", "php index.php", "lua s.lua",
		"tar -czf a.tgz dir", "tar xzf a.tgz", "tar -tvf a.tar", "tar --exclude=.git -cf a.tar .",
		"tar --checkpoint=1000 -cf a.tar d", "tar -C /tmp -xf a.tar",
		"ssh host uptime", "ssh -p 2222 -i key host ls", "ssh -o StrictHostKeyChecking=no host", "scp f host:x",
		"rsync -av src/ dst/", "rsync -a --delete src/ host:dst/",
		"wget -q -O out http://x", "wget -e robots=off -r http://x",
		"zip -r a.zip dir", "zip -T a.zip f",
		"sort -k2 -n f", "sort -u f", "sort -o out f", "sort --check f",
		"env FOO=1 python3 x.py", "timeout 5 python3 x.py", "find . -name '*.go' -type f",
		"test -f x", `[ -n "$x" ]`, `test "$a" = "$b"`, "[ -v HOME ]", `printf '%s\n' "$x"`, "printf -v out %s 1",
		`[ "$a" = b ] && echo y`, "test -v HOME", "read -r line < f", "read -a arr < f", "unset x y", "wait $!",
		"getopts ab opt", "echo x | grep y", "cat f | head -5",
	} {
		t.Run("allows "+line, func(t *testing.T) {
			for _, sh := range []string{"bash", "sh"} {
				c := &Checker{Entries: developerEntries, Shell: sh, LookPath: exec.LookPath}
				v, err := c.Check(line)
				require.NoError(t, err, sh)
				assert.True(t, v.Allowed, "%s: %s", sh, v.Reason())
			}
		})
	}
}

func TestListedToolsCannotRunAnotherProgram(t *testing.T) {
	for _, tc := range []struct{ line, reason string }{
		// sed: every spelling of a script option.
		{"sed -n --expr='1e touch M' f", "sed option --expr= (--expression) runs a script that may execute commands (e command)"},
		{"sed -n --ex '1e touch M' f", "sed option --ex (--expression) runs a script that may execute commands (e command)"},
		{"sed -ne'1e touch M' f", "sed option -e (--expression) runs a script that may execute commands (e command)"},
		{"sed -n ':a;e touch M' f", "sed script may execute commands (e command)"},
		{"sed 's/a/b/e' f", "sed script may execute commands (s///e flag)"},
		{"sed -n ':a e touch M' f", "sed script may execute commands (e command)"},
		{"sed -n '1w out' f", "sed script writes files (w command)"},
		{"sed -f script.sed f", "sed option -f runs a script from a file this check cannot read"},
		{"sed --fi=script.sed f", "sed option --fi= (--file) runs a script from a file this check cannot read"},
		{`sed "$s" f`, "sed has an argument only known at run time, which could be any of its options"},
		// Interpreters: code in options, and code on standard input.
		{"node --eval='x'", "node option --eval runs inline code"},
		{"node -pe x", "node option -p runs inline code"},
		{"node --import=data:text/javascript,x app.js", "node option --import loads a module (data: URLs are inline code) before the script"},
		{"node -r ./x.js app.js", "node option -r loads a module before the script"},
		{"node --inspect app.js", "node option --inspect opens a debugger port that runs code sent to it"},
		{"node", "node without a script reads its program from standard input (inline code)"},
		{"node -i", "node option -i reads code from standard input (interactive)"},
		{"perl '-Mstrict;qx{touch M};#' /dev/null", "perl option -M loads a module named in its argument (-M'Mod;code' runs code)"},
		{"perl -M strict x.pl", "perl option -M loads a module named in its argument (-M'Mod;code' runs code)"},
		{"perl -lne 'print' f", "perl option -e runs inline code"},
		{"perl -d x.pl", "perl option -d runs the debugger, which reads commands from standard input, or a module named in its argument"},
		{"perl < f", "perl without a script reads its program from standard input (inline code)"},
		{"python3 -m timeit -s 'import os' 'os.system(1)'", "python3 option -m runs a module as the program (timeit -s, pdb, code … run code from their arguments)"},
		{"python3 -Im http.server", "python3 option -m runs a module as the program (timeit -s, pdb, code … run code from their arguments)"},
		{"python3 -c'x'", "python3 option -c runs inline code"},
		{"python3 -u -i -q", "python3 option -i reads code from standard input after the script (interactive)"},
		{"python3 -i x.py", "python3 option -i reads code from standard input after the script (interactive)"},
		{"python3", "python3 without a script reads its program from standard input (inline code)"},
		{"python3 -", "python3 script - reads its program from standard input (inline code)"},
		{"python3 /dev/stdin", "python3 script /dev/stdin reads its program from standard input (inline code)"},
		{"python3 /proc/self/fd/0", "python3 script /proc/self/fd/0 reads its program from standard input (inline code)"},
		{"python3 -W ignore::foo.Bar x.py", "python3 option -W with a dotted category imports a module named in its argument"},
		{`python3 "$x"`, "python3 has an argument only known at run time where an option or the script goes"},
		{"echo x | python3 -u", "python3 without a script reads its program from standard input (inline code)"},
		{"python3 - <<'EOF'\nx\nEOF", "python3 script - reads its program from standard input (inline code)"},
		{"ruby -e x", "ruby option -e runs inline code"},
		{"php -r x", "php option -r runs inline code"},
		{"lua -e x", "lua option -e runs inline code"},
		// bash builtins that evaluate a subscript.
		{`printf -v 'x[$(touch M)]' %s 1`, "printf -v's name must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it"},
		{`printf -v"$x" %s 1`, "printf argument after a computed first argument (which could be -v) must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it"},
		{`printf "$f" 'x[$(touch M)]' 1`, "printf argument after a computed first argument (which could be -v) must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it"},
		{`test -v 'x[$(touch M)]'`, "test -v's operand must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it"},
		{`[ -R "$x" ]`, "[ -R's operand must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it"},
		{`test "$op" "$x"`, "test operand after a computed argument (which could be -v) must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it"},
		{`read -a 'x[$(touch M)]' < f`, "read -a's name must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it"},
		{`read 'x[$(touch M)]' < f`, "read name must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it"},
		{`unset "$x"`, "unset name must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it"},
		{`wait -p 'x[$(touch M)]' 1`, "wait -p's name must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it"},
		{`getopts a 'x[$(touch M)]'`, "getopts name must be a plain variable name: bash evaluates a subscript (x[$(cmd)]) in it"},
		// git.
		{"git -c core.pager=x log", "git option -c sets configuration, which can make git run any program"},
		{"git --config-env=core.pager=X log", "git option --config-env sets configuration, which can make git run any program"},
		{"git --exec-path=. x", "git option --exec-path picks the directory git runs its commands from"},
		{"git x", `git x is not one of git's own commands: an alias (which can be "!command") or a git-x program runs`},
		{"git config alias.x '!touch M'", "git config with a value writes the configuration: a configuration value can name a program git runs (core.fsmonitor, core.pager, alias.x=!cmd …)"},
		{"git config --add core.pager x", "git config --add writes the configuration: a configuration value can name a program git runs (core.fsmonitor, core.pager, alias.x=!cmd …)"},
		{"git config set core.fsmonitor x", "git config set writes the configuration: a configuration value can name a program git runs (core.fsmonitor, core.pager, alias.x=!cmd …)"},
		{"git config --edit", "git config --edit runs an editor: a configuration value can name a program git runs (core.fsmonitor, core.pager, alias.x=!cmd …)"},
		{"git ls-remote --upload-p='x;' .", "git ls-remote option --upload-p (--upload-pack) names a program git runs"},
		{"git clone --template=t u", "git clone option --template installs hooks that git runs later"},
		{"git clone -c core.fsmonitor=x u", "git clone option -c names a program git runs"},
		{"git rebase --exec x HEAD", "git rebase option --exec names a program git runs"},
		{"git rebase -x x HEAD", "git rebase option -x names a program git runs"},
		{"git grep -Ox a", "git grep option -O names a program git runs"},
		{"git difftool HEAD", "git difftool runs a diff program"},
		{"git submodule foreach x", "git submodule foreach runs the command in its arguments"},
		{"git bisect run x", "git bisect run runs the command in its arguments"},
		{`git "$x"`, "git subcommand only known at run time"},
		{`git log "$x"`, "git log has an argument only known at run time, which could be an option that runs a program"},
		// tar, ssh, scp, rsync, wget, zip, sort, env, find.
		{"tar --checkpoint=1 --checkpoint-action=exec=x -cf a.tar f", "tar option --checkpoint-action= can run a command (exec=)"},
		{"tar --checkpoint-a exec=x -cf a.tar f", "tar option --checkpoint-a (--checkpoint-action) can run a command (exec=)"},
		{"tar --to-command=x -xf a.tar", "tar option --to-command= names a program tar runs"},
		{"tar -I x -cf a.tar f", "tar option -I names a program tar runs"},
		{"tar -cIx -f a.tar f", "tar option -I names a program tar runs"},
		{"tar cIf x a.tar f", "tar option I (in cIf) names a program tar runs"},
		{"tar --use-c=x -cf a.tar f", "tar option --use-c= (--use-compress-program) names a program tar runs"},
		{"tar -F x -cf a.tar f", "tar option -F names a program tar runs"},
		{"ssh -o ProxyCommand=x h", "ssh option -o proxycommand names a program ssh runs"},
		{"ssh -oLocalCommand=x h", "ssh option -o localcommand names a program ssh runs"},
		{"ssh h -o 'ProxyCommand x'", "ssh option -o proxycommand names a program ssh runs"},
		{"ssh -F cfg h", "ssh option -F reads a configuration file, which can name a program ssh runs (ProxyCommand)"},
		{"ssh -I lib.so h", "ssh option -I loads a PKCS#11 library"},
		{"scp -S x f h:y", "scp option -S names the program scp runs instead of ssh"},
		{"scp -o ProxyCommand=x f h:y", "scp option -o proxycommand names a program ssh runs"},
		{"rsync -ave x f h:y", "rsync option -e names the remote shell program rsync runs"},
		{"rsync --rsh=x f h:y", "rsync option --rsh= names the remote shell program rsync runs"},
		{"rsync --rsync-path=x f h:y", "rsync option --rsync-path= names a program run through a shell"},
		{"wget --use-askpass=x u", "wget option --use-askpass= names a program wget runs"},
		{"wget --use-a x u", "wget option --use-a (--use-askpass) names a program wget runs"},
		{"wget -e use-askpass=x u", "wget option -e (--execute) use-askpass=x names a program wget runs"},
		{"wget --config=rc u", "wget option --config= reads a wgetrc, which can name a program wget runs (use_askpass)"},
		{"zip a.zip f -T -TT x", "zip option -TT (--unzip-command) names a program zip runs"},
		{"zip a.zip f -T --unzip-c x", "zip option --unzip-c (-TT, --unzip-command) names a program zip runs"},
		{"sort --compress-program=x f", "sort option --compress-program= names a program sort runs"},
		{"sort --com x f", "sort option --com (--compress-program) names a program sort runs"},
		{"env -S 'x y'", "env -S splits a string into a command this check cannot read"},
		{"env --sp='x y'", "env --split-string (-S) splits a string into a command this check cannot read"},
		{"find . -exec x {} ;", "find -exec runs commands or writes files"},
		{"find . -okdir x {} ;", "find -okdir runs commands or writes files"},
		{"find . -fprint f", "find -fprint runs commands or writes files"},
		{"TAR_OPTIONS=--to-command=x tar -xf a.tar", "assignment to TAR_OPTIONS gives tar options (--to-command, --use-compress-program run programs)"},
		{"env RSYNC_RSH=x rsync f h:y", "env RSYNC_RSH= names the remote shell program rsync runs"},
		{"PYTHONINSPECT=1 python3 x.py", "assignment to PYTHONINSPECT makes python read code from standard input after the script (as -i does)"},
	} {
		t.Run("refuses "+tc.line, func(t *testing.T) {
			for _, sh := range []string{"bash", "sh"} {
				c := &Checker{Entries: developerEntries, Shell: sh, LookPath: exec.LookPath}
				v, err := c.Check(tc.line)
				require.NoError(t, err, sh)
				assert.False(t, v.Allowed, sh)
				assert.Equal(t, tc.reason, v.Reason(), sh)
			}
		})
	}
}

func TestEntriesMayBeArgumentPrefixes(t *testing.T) {
	entries := []string{"git status", "git diff", "python3 -m pytest", "go test ./...", "bash build.sh", "echo"}
	for _, tc := range []struct{ line, reason string }{
		{"git status", ""},
		{"git status --short", ""},
		{"git diff HEAD -- f", ""},
		{"python3 -m pytest -x tests", ""},
		{"python3 -m pytest -c setup.cfg", ""},
		{"go test ./...", ""},
		{"go test ./... -run TestX", ""},
		{"bash build.sh --fast", ""},
		{"git log", `"git" is on the allowlist only as git status, git diff`},
		{"git -c core.fsmonitor=x status", `"git" is on the allowlist only as git status, git diff`},
		{"git statusx", `"git" is on the allowlist only as git status, git diff`},
		{"python3 -m timeit x", `"python3" is on the allowlist only as python3 -m pytest`},
		{"python3 -c x", `"python3" is on the allowlist only as python3 -m pytest`},
		{"go test ./x", `"go" is on the allowlist only as go test ./...`},
		{"go build", `"go" is on the allowlist only as go test ./...`},
		{"bash -c x", `"bash" is on the allowlist only as bash build.sh`},
		{"bash", `"bash" is on the allowlist only as bash build.sh`},
		{"git status --upload-pack=x", "git status option --upload-pack names a program git runs"},
		{`git status "$x"`, "git status has an argument only known at run time, which could be an option that runs a program"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			c := &Checker{Entries: entries, LookPath: exec.LookPath}
			v, err := c.Check(tc.line)
			require.NoError(t, err)
			assert.Equal(t, tc.reason == "", v.Allowed, v.Reason())
			assert.Equal(t, tc.reason, v.Reason())
		})
	}

	t.Run("a bare name beside a prefix keeps its meaning", func(t *testing.T) {
		c := &Checker{Entries: []string{"git", "python3 -m pytest"}, LookPath: exec.LookPath}
		for line, reason := range map[string]string{
			"git log":                 "",
			"git -c a=b log":          "git option -c sets configuration, which can make git run any program",
			"python3 -m pytest":       "",
			"python3 -m http.server":  `"python3" is on the allowlist only as python3 -m pytest`,
			"python3 -m pytest -q -x": "",
		} {
			v, err := c.Check(line)
			require.NoError(t, err)
			assert.Equal(t, reason, v.Reason(), line)
		}
	})

	t.Run("an absolute program path matches the same file", func(t *testing.T) {
		git, err := exec.LookPath("git")
		if err != nil {
			t.Skip("git is not installed")
		}
		c := &Checker{Entries: []string{git + " status"}, LookPath: exec.LookPath}
		v, err := c.Check("git status")
		require.NoError(t, err)
		assert.True(t, v.Allowed, v.Reason())
	})
}

func TestDeclarationsWithASubscriptAreRefusedInFunctionBodies(t *testing.T) {
	for _, variant := range []string{"local", "declare", "typeset", "readonly", "export"} {
		t.Run(variant, func(t *testing.T) {
			c := &Checker{Entries: append([]string{variant, "echo"}, developerEntries...), Shell: "bash", LookPath: exec.LookPath}
			v, err := c.Check("f() { " + variant + " 'x[$(touch M)]=1'; }; echo")
			require.NoError(t, err)
			assert.False(t, v.Allowed)
			require.NotEmpty(t, v.Problems)
			assert.Contains(t, v.Problems[0], variant)
		})
	}
}
