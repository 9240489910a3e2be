package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "@modelcontextprotocol/sdk@"+tsSDKVersion)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm install: %v\n%s", err, out)
		}
		t.Skipf("npm install failed (offline?): %v\n%s", err, out)
	}
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
