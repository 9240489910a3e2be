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

// FuzzAllowlist checks that no line the checker allows runs a command that
// is not on the list: each allowed line runs under sh and bash with PATH
// set to a directory of recording stubs, inside bubblewrap (read-only
// root, no network), and every stub that ran must be a listed name.
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
		if err := os.WriteFile(filepath.Join(stubs, n), []byte(script), 0o755); err != nil {
			f.Fatal(err)
		}
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
	lookPath := func(name string) (string, error) {
		p := filepath.Join(stubs, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
		return "", errors.New("not found")
	}
	for _, seed := range []string{
		"ls", "ls -la | grep x", "echo a; ls", "ls; touch x", "ls && x", "ls $(x)", "echo `x`", "ls | sh -c x",
		"ls > /tmp/f", "ls\nx", `"ls" && x`, "nohup ls", "timeout 1 ls", "env ls", "env FOO=1 grep -q x /dev/null",
		"ls() { x; }; ls", "X=x; $X", "echo $'\\' ; x ;\n echo '", "nohup x", "env x", "timeout 1 x",
		"echo ok | grep ok && ls || echo no", "{ ls; } 2>/dev/null", "(ls) | (grep q)", "f(){ ls; }; f",
		"echo $(( 1 + 2 )) ${HOME:-x}", "grep -r x . <<EOF\n$(x)\nEOF", "case a in a) ls;; esac",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) > 512 || strings.IndexByte(line, 0) >= 0 {
			return
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
