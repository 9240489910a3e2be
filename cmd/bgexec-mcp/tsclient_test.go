package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tsSDKVersion is the TypeScript MCP SDK the client test installs.
const tsSDKVersion = "1.32.2"

// needTool finds a tool on PATH; missing, it fails the test in CI and
// skips it elsewhere.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (.ci/run installs it)", name)
		}
		t.Skipf("%s not on PATH", name)
	}
	return p
}

// TestTypeScriptClient drives the server over both transports with the
// official TypeScript SDK client (testdata/tsclient.mjs), which also
// validates every structured content against the tool's outputSchema.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	node, npm := needTool(t, "node"), needTool(t, "npm")
	bin := buildServer(t)
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "tsclient.mjs"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tsclient.mjs"), script, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"tsclient","private":true,"type":"module"}`), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	modules, err := tsSDKModules(ctx, npm)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("%v (offline?)", err)
	}
	require.NoError(t, os.Symlink(modules, filepath.Join(dir, "node_modules")))
	runNode := func(t *testing.T, args ...string) {
		cmd := exec.CommandContext(ctx, node, append([]string{"tsclient.mjs"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "OK")
	}
	t.Run("stdio", func(t *testing.T) {
		runNode(t, "stdio", bin, "-max-call-ms", "2000", "-progress-ms", "200")
	})
	t.Run("approvals through elicitation, exec waiting", func(t *testing.T) {
		runNode(t, "approve", bin, "-ask", "always", "-approval-mode", "wait")
	})
	t.Run("approvals through elicitation, exec returning approval-pending", func(t *testing.T) {
		runNode(t, "pending", bin, "-ask", "always")
	})
	t.Run("http", func(t *testing.T) {
		hs := startHTTP(t, bin, "-max-call-ms", "2000", "-progress-ms", "200")
		runNode(t, "http", hs.endpoint, hs.token)
	})
}

// tsSDKModules returns a node_modules directory with the TypeScript SDK at
// tsSDKVersion, installed with npm once per machine into the user's cache
// directory, or the temporary directory without one (an install took 9 s
// of CPU and 20 s here), and kept there for
// later runs; a run that finds it complete does not touch the network.
// Concurrent runs each install into a directory of their own, and the
// first to rename its directory into place wins.
func tsSDKModules(ctx context.Context, npm string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir() // no $HOME: kept until the machine cleans it
	}
	root := filepath.Join(cache, "bgexec-test", "ts-sdk-"+tsSDKVersion)
	modules := filepath.Join(root, "node_modules")
	installed := func() bool {
		b, err := os.ReadFile(filepath.Join(modules, "@modelcontextprotocol", "sdk", "package.json"))
		return err == nil && strings.Contains(string(b), `"version": "`+tsSDKVersion+`"`)
	}
	if installed() {
		return modules, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	stage, err := os.MkdirTemp(root, "install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(stage)
	if err := os.WriteFile(filepath.Join(stage, "package.json"), []byte(`{"name":"tsclient","private":true,"type":"module"}`), 0o600); err != nil {
		return "", err
	}
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "@modelcontextprotocol/sdk@"+tsSDKVersion)
	install.Dir = stage
	if out, err := install.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install: %w\n%s", err, out)
	}
	// A rename is atomic: modules is complete or absent, unless someone
	// changed it by hand.
	if err := os.Rename(filepath.Join(stage, "node_modules"), modules); err != nil && !installed() {
		return "", fmt.Errorf("%w (remove %s to install it again)", err, modules)
	}
	return modules, nil
}
