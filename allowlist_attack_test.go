//go:build linux

package bgexec

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// developerAllowlist is the list a developer would plausibly configure: the
// listed tools are ordinary, and every one of them can be talked into
// running a program that is not listed.
var developerAllowlist = []string{"ls", "echo", "cat", "printf", "test", "[", "sed", "git", "python3", "node",
	"perl", "tar", "ssh", "wget", "zip", "sort", "grep", "head", "env", "timeout", "true"}

// subscriptBuiltins are bash builtins that evaluate an array subscript in
// a variable name: listed too in a second run, so the refusal is the
// checker's model, not a missing name.
var subscriptBuiltins = []string{"read", "unset", "declare", "local", "export", "typeset", "readonly", "wait", "getopts"}

// launchers are listed too in that second run: tools whose program-running
// options the checker must know even when an operator lists them.
var launchers = []string{"scp", "rsync", "find"}

// allowlistPayload is one attack: a line that makes a listed tool run
// touch, which is not listed. want is a piece of the refusal reason, which
// must name the construct.
type allowlistPayload struct {
	line string
	want string
}

// allowlistPayloads are the attacks, with M the marker file and MARK a
// script that creates it (for tools that run a program with arguments of
// their own, such as wget's askpass).
func allowlistPayloads(m, mark string) []allowlistPayload {
	p := []allowlistPayload{
		// sed: option spellings getopt accepts, and a label ended by ";".
		{"sed -n --expr='1e touch M' f", "(e command)"},
		{"sed -n --ex='1e touch M' f", "(e command)"},
		{"sed -n --expression '1e touch M' f", "(e command)"},
		{"sed -ne'1e touch M' f", "(e command)"},
		{"sed -n -e '1e touch M' f", "(e command)"},
		{"sed -sne '1e touch M' f", "(e command)"},
		{"sed -n ':a;e touch M' f", "(e command)"},
		{"sed -n ':a e touch M' f", "(e command)"},
		{"sed -n '1{e touch M\n}' f", "(e command)"},
		{"sed 's/a/touch M/e' f", "s///e flag"},
		{"sed -n -- '1e touch M' f", "(e command)"},
		// Interpreters given code in an option, in every spelling.
		{`node --eval='require("child_process").execSync("touch M")'`, "node option"},
		{`node -e 'require("child_process").execSync("touch M")'`, "node option"},
		{`node -pe 'require("child_process").execSync("touch M")'`, "node option"},
		{`node --print 'require("child_process").execSync("touch M")'`, "node option"},
		{`node --import='data:text/javascript,import{execSync}from"child_process";execSync("touch M")' empty.js`, "node option"},
		{`node --require ./mark.js empty.js`, "node option"},
		{`perl '-Mstrict;qx{touch $ARGV[0]};#' /dev/null M`, "perl option"},
		{`perl -le 'system "touch M"'`, "perl option"},
		{`perl -Esystem\(\"touch\ M\"\)`, "perl option"},
		{`python3 -m timeit -s 'import os' 'os.system("touch M")'`, "python3 option"},
		{`python3 -Ic 'import os; os.system("touch M")'`, "python3 option"},
		{`python3 -c'import os; os.system("touch M")'`, "python3 option"},
		// Code on standard input.
		{`echo 'import os; os.system("touch M")' | python3`, "reads its program from standard input"},
		{"python3 - <<'EOF'\nimport os\nos.system('touch M')\nEOF", "reads its program from standard input"},
		{"python3 <<'EOF'\nimport os\nos.system('touch M')\nEOF", "reads its program from standard input"},
		{"python3 /dev/stdin <<'EOF'\nimport os\nos.system('touch M')\nEOF", "reads its program from standard input"},
		{"python3 -u /proc/self/fd/0 <<'EOF'\nimport os\nos.system('touch M')\nEOF", "reads its program from standard input"},
		{`echo 'system "touch M"' | perl`, "reads its program from standard input"},
		{`echo 'system "touch M"' | perl -`, "reads its program from standard input"},
		{`echo 'require("child_process").execSync("touch M")' | node`, "reads its program from standard input"},
		{`echo 'require("child_process").execSync("touch M")' | node -`, "reads its program from standard input"},
		{`cat code.py | python3 -u`, "reads its program from standard input"},
		// bash builtins that evaluate an array subscript.
		{`printf -v 'x[$(touch M)]' %s 1`, "printf"},
		{`test -v 'x[$(touch M)]'`, "test"},
		{`[ -v 'x[$(touch M)]' ]`, "["},
		{`x='y[$(touch M)]'; test -v "$x"`, "test"},
		{`x='y[$(touch M)]'; printf -v "$x" %s 1`, "printf"},
		{`read -a 'x[$(touch M)]' < f`, "read"},
		{`read 'x[$(touch M)]' < f`, "read"},
		{`unset 'x[$(touch M)]'`, "unset"},
		{`declare 'x[$(touch M)]=1'`, "declare"},
		{`export 'x[$(touch M)]=1'`, "export"},
		{`typeset 'x[$(touch M)]=1'`, "typeset"},
		{`readonly 'x[$(touch M)]=1'`, "readonly"},
		// git: aliases, config that names programs, options.
		{`git config alias.x '!touch M' && git x`, "git config"},
		{`git config core.fsmonitor 'touch M' && git status`, "git config"},
		{`git config --add core.pager 'touch M' && git -p log`, "git config"},
		{`git -c alias.x='!touch M' x`, "git option -c"},
		{`git -c core.fsmonitor='touch M' status`, "git option -c"},
		{`git --exec-path=. mark`, "git option --exec-path"},
		{`git ls-remote --upload-pack='touch M;git-upload-pack' .`, "git ls-remote"},
		{`git archive --remote=. --exec='touch M;git-upload-archive' HEAD`, "git archive"},
		{`git rebase -x 'touch M' HEAD`, "git rebase"},
		{`git difftool -y -x 'touch M' HEAD`, "git difftool"},
		{`git grep -O'touch M' a`, "git grep"},
		{`git submodule foreach 'touch M'`, "git submodule"},
		{`git bisect run touch M`, "git bisect"},
		// tar.
		{`tar --checkpoint=1 --checkpoint-action=exec='touch M' -cf /dev/null f`, "tar option"},
		{`tar --checkp=1 --checkpoint-a=exec='touch M' -cf /dev/null f`, "tar option"},
		{`tar --to-command='touch M' -xf a.tar`, "tar option"},
		{`tar -xf a.tar --to-c 'touch M'`, "tar option"},
		{`tar -I 'touch M' -cf /dev/null f`, "tar option"},
		{`tar -cIMARK -f /dev/null f`, "tar option"},
		{`tar --use-compress-program=MARK -cf /dev/null f`, "tar option"},
		{`tar --use-comp MARK -cf /dev/null f`, "tar option"},
		{`tar -cf /dev/null --rsh-command=MARK h:f`, "tar option"},
		{`tar -cf h:/x --rmt-command=MARK f`, "tar option"},
		{`tar -cf /dev/null --info-script=MARK -L1 -M f`, "tar option"},
		{`TAR_OPTIONS=--to-command=MARK tar -xf a.tar`, "TAR_OPTIONS"},
		{`env TAR_OPTIONS=--use-compress-program=MARK tar -cf /dev/null f`, "TAR_OPTIONS"},
		// ssh, scp, rsync.
		{`ssh -o ProxyCommand='touch M' h`, "ssh option"},
		{`ssh -oProxyCommand='touch M' h`, "ssh option"},
		{`ssh -o 'proxycommand touch M' h`, "ssh option"},
		{`ssh -o PermitLocalCommand=yes -o LocalCommand='touch M' h`, "ssh option"},
		{`ssh -F ssh.cfg h`, "ssh option"},
		{`ssh -Fssh.cfg h`, "ssh option"},
		{`ssh -o ProxyJump=h -o 'KnownHostsCommand=touch M' h`, "ssh option"},
		// wget.
		{`wget -q --use-askpass=MARK http://127.0.0.1:1/x`, "wget option"},
		{`wget -q --use-ask=MARK http://127.0.0.1:1/x`, "wget option"},
		{`wget -q -e use_askpass=MARK http://127.0.0.1:1/x`, "wget option"},
		{`wget -q --execute=use_askpass=MARK http://127.0.0.1:1/x`, "wget option"},
		{`wget -qe use_askpass=MARK http://127.0.0.1:1/x`, "wget option"},
		// zip.
		{`zip -q a.zip f -T -TT 'touch M'`, "-TT"},
		{`zip -q a.zip f -T --unzip-command 'touch M'`, "-TT"},
		{`zip -qTTT'touch M' a.zip f`, "-TT"},
		// env and timeout wrapping something that runs code.
		{`env -S 'touch M'`, "env -S"},
		{`env --split-string='touch M'`, "env"},
		{`env --sp='touch M'`, "env"},
		{`env python3 -c 'import os; os.system("touch M")'`, "python3 option"},
		{`timeout 9 python3 - <<'EOF'` + "\nimport os\nos.system('touch M')\nEOF", "reads its program from standard input"},
		{`env -- perl -e 'system "touch M"'`, "perl option"},
		// sort runs a compressor named in an option.
		{`sort -S 1 --compress-program=MARK -T . f`, "sort option"},
		{`sort --compress-p MARK f`, "sort option"},
		// Programs that are not listed: find, xargs, awk, unzip, scp, rsync.
		{`find . -maxdepth 0 -exec touch M \;`, "find -"},
		{`find . -maxdepth 0 -execdir touch M \;`, "find -"},
		{`find . -maxdepth 0 -fprint M`, "find -"},
		{`echo M | xargs touch`, "xargs"},
		{`awk 'BEGIN{system("touch M")}'`, "awk"},
		{`unzip -q a.zip -d out`, "unzip"},
		{`scp -o ProxyCommand='touch M' f h:x`, "scp option"},
		{`scp -S MARK f h:x`, "scp option"},
		{`rsync -e 'sh -c "touch M" --' f h:x`, "rsync option"},
		{`rsync --rsh='sh -c "touch M" --' f h:x`, "rsync option"},
		{`rsync --rsync-path='touch M;rsync' f localhost:x`, "rsync option"},
		{`RSYNC_RSH='sh -c "touch M" --' rsync f h:x`, "rsync"},
	}
	for i := range p {
		p[i].line = strings.ReplaceAll(strings.ReplaceAll(p[i].line, "MARK", mark), " M", " "+m)
		p[i].line = strings.ReplaceAll(p[i].line, "touch M", "touch "+m)
	}
	return p
}

// TestAllowlistAttacks runs, under dash and bash, every way the issue
// found (and a few more) to make a developer allowlist run a program that
// is not on it, through a real registry. Each must be refused with a
// reason that names the construct, and touch must not have run: the
// marker file and every other new file in the work directory prove it.
func TestAllowlistAttacks(t *testing.T) {
	for _, tool := range []string{"git", "tar", "wget", "zip", "unzip", "ssh", "scp", "rsync", "perl", "node", "python3", "dash", "bash", "awk", "find", "xargs", "sort"} {
		needTool(t, tool)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "M")
	mark := filepath.Join(dir, "mark")
	proctest.WriteExecutable(t, mark, []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o755)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("a\nb\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty.js"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mark.js"), []byte(`require("child_process").execSync("touch `+marker+`")`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "code.py"), []byte("import os\nos.system('touch "+marker+"')\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ssh.cfg"), []byte("Host *\n  ProxyCommand touch "+marker+"\n"), 0o644))
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %v: %s", name, args, out)
	}
	run("git", "init", "-q")
	run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
	run("tar", "-cf", "a.tar", "f")
	run("zip", "-q", "a.zip", "f")
	gitConfig, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	require.NoError(t, err)
	entries := func() []string {
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	files := entries()

	payloads := allowlistPayloads(marker, mark)
	ran := 0
	timeout := 20.0
	for _, shell := range []string{"dash", "bash"} {
		for _, list := range [][]string{developerAllowlist, append(append(slices.Clone(developerAllowlist), subscriptBuiltins...), launchers...)} {
			reg := newTestRegistry(t, Config{Shell: needTool(t, shell), Security: "allowlist", Allowlist: list})
			sc := reg.Scope("attacker")
			for _, p := range payloads {
				res := mustExec(t, sc, &ExecRequest{Command: p.line, Workdir: dir, Timeout: &timeout})
				if !assert.Equal(t, StatusFailed, res.Details.Status, "%s (%d names): %q was not refused: %s", shell, len(list), p.line, res.Text()) {
					ran++
				} else {
					assert.True(t, strings.HasPrefix(res.Text(), "exec denied: "), "%s: %q: %s", shell, p.line, res.Text())
					// A program that is not listed is refused for that.
					unlisted := strconv.Quote(strings.Fields(p.line)[0]) + " is not on the allowlist"
					assert.True(t, strings.Contains(res.Text(), p.want) || strings.Contains(res.Text(), unlisted),
						"%s: %q: the reason %q names neither the construct (%s) nor an unlisted program", shell, p.line, res.Text(), p.want)
					if os.Getenv("SHOW_REASONS") != "" {
						t.Logf("%s %d | %s | %s", shell, len(list), p.line, res.Text())
					}
				}
				// Put the directory back: a leftover file or git setting
				// must not decide the next payload.
				for _, n := range entries() {
					if !slices.Contains(files, n) {
						assert.Fail(t, "a payload ran an unlisted program", "%s (%d names): %q created %s", shell, len(list), p.line, n)
						require.NoError(t, os.RemoveAll(filepath.Join(dir, n)))
					}
				}
				require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "config"), gitConfig, 0o644))
			}
			ran += interactiveInterpreter(t, sc, dir, marker)
		}
	}
	t.Logf("%d of %d payload runs were not refused", ran, 4*(len(payloads)+4))
}

// interactiveInterpreter starts python3 as an interactive session, on a
// stdin pipe and on a terminal (also through PYTHONINSPECT after a
// script), which an allowlist must refuse, since write then feeds it code. It returns how many sessions started; for
// each, it checks whether the code it was sent ran touch.
func interactiveInterpreter(t *testing.T, sc *Scope, dir, marker string) int {
	t.Helper()
	started := 0
	for _, req := range []*ExecRequest{
		{Command: "python3 -u -i -q", Stdin: "pipe"},
		{Command: "python3 -q", PTY: true},
		{Command: "python3", Stdin: "pipe"},
		{Command: "PYTHONINSPECT=1 python3 empty.js", PTY: true},
	} {
		req.Workdir, req.Background = dir, true
		res := mustExec(t, sc, req)
		if res.Details.Status != StatusRunning {
			assert.Equal(t, StatusFailed, res.Details.Status, res.Text())
			assert.True(t, strings.HasPrefix(res.Text(), "exec denied: "), res.Text())
			continue
		}
		started++
		id := res.Details.SessionID
		w := mustProcess(t, sc, &ProcessRequest{Action: "write", SessionID: id, Data: "import os; os.system('touch " + marker + "')\n", EOF: true})
		assert.False(t, w.IsError, w.Text())
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if mustProcess(t, sc, &ProcessRequest{Action: "poll", SessionID: id, Timeout: ptr(Number(5000))}).Details.Status != StatusRunning {
				break
			}
		}
		_, err := os.Stat(marker)
		assert.True(t, os.IsNotExist(err), "%q was allowed, and code written to it ran touch", req.Command)
		_ = os.Remove(marker) // Best effort: the directory check of the next payload reports it.
		mustProcess(t, sc, &ProcessRequest{Action: "remove", SessionID: id})
	}
	return started
}

// A listed tool can also be told to run a program through the call's
// env: the options these variables carry are the ones the checker refuses
// on the command line, so they are refused as per-call overrides.
func TestAllowlistEnvOptionsRunNothing(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"tar", "zip", "python3"} {
		needTool(t, tool)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "M")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("a\n"), 0o644))
	reg := newTestRegistry(t, Config{Security: "allowlist", Allowlist: developerAllowlist})
	sc := reg.Scope("attacker")
	cases := []struct {
		command string
		env     map[string]string
	}{
		{"tar -cf a.tar f", map[string]string{"TAR_OPTIONS": "--checkpoint=1 --checkpoint-action=exec=touch\\ " + marker}},
		{"zip -q a.zip f", map[string]string{"ZIPOPT": "-T -TT 'touch " + marker + "'"}},
		{"python3 -V", map[string]string{"PYTHONINSPECT": "1"}},
	}
	for _, c := range cases {
		res := mustExec(t, sc, &ExecRequest{Command: c.command, Workdir: dir, Env: c.env})
		assert.Equal(t, StatusFailed, res.Details.Status, "%q with %v: %s", c.command, c.env, res.Text())
		assert.Contains(t, res.Text(), "Security Violation: Environment variable", "%q: %s", c.command, res.Text())
		assert.NoFileExists(t, marker, "%q with %v ran touch", c.command, c.env)
	}
}
