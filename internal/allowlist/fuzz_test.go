package allowlist

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bgexec/bgexec/internal/proctest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fuzzEntries are the allowlist of FuzzAllowlist.
var fuzzEntries = []string{"ls", "echo", "grep", "nohup", "timeout", "env"}

// stubNames are the programs that get a recording stub: the listed ones
// and the usual tools an attacker would reach for.
var stubNames = []string{"ls", "grep", "cat", "touch", "rm", "cp", "mv", "sh", "bash", "dash", "python3", "perl",
	"xargs", "find", "awk", "sed", "curl", "wget", "chmod", "tee", "dd", "printf", "id", "whoami", "x", "y", "f", "pwned"}

// wrappers are the real programs put beside the stubs: they run the
// command they wrap through PATH, so it meets a stub too.
var wrappers = []string{"nohup", "timeout", "env"}

// devTools are the real programs of the developer allowlist run by
// FuzzAllowlist: the tools every payload family talks into running touch.
var devTools = []string{"cat", "printf", "test", "[", "sed", "git", "python3", "node", "perl", "tar", "ssh", "wget",
	"zip", "sort", "head", "env", "timeout", "true"}

// bypassSeeds are lines that made a listed tool run an unlisted program
// (touch) under the developer allowlist before the checker modelled the
// tools: each must be refused.
var bypassSeeds = []string{
	"sed -n --expr='1e touch M' f", "sed -ne'1e touch M' f", "sed -n ':a;e touch M' f", "sed -n --ex='1e touch M' f",
	`node --eval='require("child_process").execSync("touch M")'`,
	`node --import='data:text/javascript,import{execSync}from"child_process";execSync("touch M")' /dev/null`,
	`perl '-Mstrict;qx{touch $ARGV[0]};#' /dev/null M`,
	`python3 -m timeit -s 'import os' 'os.system("touch M")'`,
	`echo 'import os; os.system("touch M")' | python3`, "python3 - <<'EOF'\nimport os\nos.system('touch M')\nEOF",
	"python3 /dev/stdin <<'EOF'\nimport os\nos.system('touch M')\nEOF", `echo 'system "touch M"' | perl`,
	`echo 'require("child_process").execSync("touch M")' | node`, "python3 -u -i -q",
	`printf -v 'x[$(touch M)]' %s 1`, `test -v 'x[$(touch M)]'`, `[ -v 'x[$(touch M)]' ]`,
	`x='y[$(touch M)]'; test -v "$x"`,
	`git config alias.x '!touch M' && git x`, `git config core.fsmonitor 'touch M' && git status`,
	`git -c core.fsmonitor='touch M' status`, `git ls-remote --upload-pack='touch M;git-upload-pack' .`,
	`tar --checkpoint=1 --checkpoint-action=exec='touch M' -cf /dev/null f`, `tar --to-command='touch M' -xf a.tar`,
	`tar -I 'touch M' -cf /dev/null f`, `ssh -o ProxyCommand='touch M' h`, `wget --use-askpass=touch http://127.0.0.1:1/`,
	`zip a.zip f -T -TT 'touch M'`, `env -S 'touch M'`, `timeout 9 python3 - <<'EOF'` + "\nimport os\nos.system('touch M')\nEOF",
}

// lookBinary finds name on PATH as a compiled program, passing over
// scripts such as pyenv's shims: a script's interpreter (its "#!/usr/bin/env
// bash" line) would meet the developer directory's stubs and be counted as a
// program the checked line ran.
func lookBinary(name string) (string, error) {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			continue
		}
		head := make([]byte, 2)
		fh, err := os.Open(p)
		if err != nil {
			continue
		}
		n, _ := fh.Read(head)
		_ = fh.Close()
		if n == 2 && string(head) == "#!" {
			continue
		}
		return p, nil
	}
	return "", errors.New(name + ": no compiled program of that name on PATH")
}

// FuzzAllowlist checks that no line the checker allows runs a command that
// is not on the list. Each allowed line runs under sh and bash inside
// bubblewrap (read-only root, no network), once with PATH set to a
// directory of recording stubs and the list ls echo grep nohup timeout
// env, and once with the developer allowlist: the real listed tools beside
// recording stubs of everything else (touch among them), in a fresh
// directory holding a git repository and the files f and a.tar. Every stub
// that ran must be a listed name, and every known bypass must be refused.
func FuzzAllowlist(f *testing.F) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		if os.Getenv("CI") == "true" {
			f.Fatal("FuzzAllowlist needs bubblewrap (apt-get install bubblewrap); .ci/run installs it")
		}
		f.Skip("bubblewrap is not installed")
	}
	stubs := f.TempDir()
	logFile := filepath.Join(stubs, "ran.log")
	for _, n := range stubNames {
		script := "#!/bin/sh\necho " + n + " >> " + logFile + "\n"
		proctest.WriteExecutable(f, filepath.Join(stubs, n), []byte(script), 0o755)
	}
	for _, n := range wrappers {
		p, err := exec.LookPath(n)
		if err != nil {
			f.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(stubs, n)); err != nil {
			f.Fatal(err)
		}
	}
	lookIn := func(dir string) func(name string) (string, error) {
		return func(name string) (string, error) {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
				return p, nil
			}
			return "", errors.New("not found")
		}
	}
	lookPath := lookIn(stubs)
	// The developer directory: real tools, and stubs for the rest.
	dev := f.TempDir()
	devLog := filepath.Join(dev, "ran.log")
	var devEntries []string
	for _, n := range append(slices.Clone(devTools), "ls", "echo", "grep", "nohup") {
		p, err := lookBinary(n)
		if err != nil {
			if os.Getenv("CI") == "true" {
				f.Fatalf("FuzzAllowlist needs %s (.ci/run installs it)", n)
			}
			continue // not installed here: it stays a stub
		}
		if err := os.Symlink(p, filepath.Join(dev, n)); err != nil {
			f.Fatal(err)
		}
		devEntries = append(devEntries, n)
	}
	for _, n := range append(slices.Clone(stubNames), "touch", "mkdir", "id", "ln") {
		if _, err := os.Lstat(filepath.Join(dev, n)); err == nil {
			continue
		}
		script := "#!/bin/sh\necho " + n + " >> " + devLog + "\n"
		proctest.WriteExecutable(f, filepath.Join(dev, n), []byte(script), 0o755)
	}
	devLookPath := lookIn(dev)
	for _, seed := range bypassSeeds {
		f.Add(seed)
	}
	for _, seed := range []string{
		"ls", "ls -la | grep x", "echo a; ls", "ls; touch x", "ls && x", "ls $(x)", "echo `x`", "ls | sh -c x",
		"ls > /tmp/f", "ls\nx", `"ls" && x`, "nohup ls", "timeout 1 ls", "env ls", "env FOO=1 grep -q x /dev/null",
		"ls() { x; }; ls", "X=x; $X", "echo $'\\' ; x ;\n echo '", "nohup x", "env x", "timeout 1 x",
		"echo ok | grep ok && ls || echo no", "{ ls; } 2>/dev/null", "(ls) | (grep q)", "f(){ ls; }; f",
		"echo $(( 1 + 2 )) ${HOME:-x}", "grep -r x . <<EOF\n$(x)\nEOF", "case a in a) ls;; esac",
		"python3 0", // a python3 that is a shell script (a pyenv shim) once counted its own bash
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) > 512 || strings.IndexByte(line, 0) >= 0 {
			return
		}
		for _, shell := range []string{"/bin/sh", "/bin/bash"} {
			c := &Checker{Entries: devEntries, Shell: shell, LookPath: devLookPath}
			v, err := c.Check(line)
			if err != nil || !v.Allowed {
				continue
			}
			if slices.Contains(bypassSeeds, line) {
				t.Fatalf("%s: the known bypass %q is allowed under the developer allowlist (commands %+v)", shell, line, v.Commands)
			}
			_ = os.Remove(devLog)
			// A fresh work directory: a git repository and the files the
			// payloads name, made by the real tools before the line runs.
			setup := `printf 'a\nb\n' > f && tar -cf a.tar f && git init -q 2>/dev/null; exec "$0" -c "$1"`
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			cmd := exec.CommandContext(ctx, bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
				"--tmpfs", "/tmp", "--bind", dev, dev, "--unshare-all", "--die-with-parent", "--new-session",
				"--chdir", "/tmp", "--", "/usr/bin/env", "-i", "PATH="+dev, "HOME=/tmp", shell, "-c", setup, shell, line)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			_ = cmd.Run() // the line's own exit status does not matter
			cancel()
			ran, _ := os.ReadFile(devLog)
			for _, name := range strings.Fields(string(ran)) {
				if !slices.Contains(devEntries, name) {
					t.Fatalf("%s ran %q, which is not on the developer allowlist, from the allowed line %q (commands %+v)\n%s", shell, name, line, v.Commands, out.String())
				}
			}
		}
		for _, shell := range []string{"/bin/sh", "/bin/bash"} {
			c := &Checker{Entries: fuzzEntries, Shell: shell, LookPath: lookPath}
			v, err := c.Check(line)
			if err != nil || !v.Allowed {
				continue
			}
			_ = os.Remove(logFile)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			cmd := exec.CommandContext(ctx, bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
				"--tmpfs", "/tmp", "--bind", stubs, stubs, "--unshare-all", "--die-with-parent", "--new-session",
				"--chdir", "/tmp", "--", "/usr/bin/env", "-i", "PATH="+stubs, shell, "-c", line)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			_ = cmd.Run() // the line's own exit status does not matter
			cancel()
			ran, _ := os.ReadFile(logFile)
			for _, name := range strings.Fields(string(ran)) {
				if !slices.Contains(fuzzEntries, name) {
					t.Fatalf("%s ran %q, which is not on the allowlist, from the allowed line %q (commands %+v)\n%s", shell, name, line, v.Commands, out.String())
				}
			}
		}
	})
}
