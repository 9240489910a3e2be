package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostSnippet is how one MCP host starts the server, as the README says.
type hostSnippet struct {
	host    string
	command string
	args    []string
}

// readmeSnippets returns the host configurations of the README's MCP
// section: the claude mcp add line, Codex's TOML table and the JSON files
// of Cursor, VS Code and Claude Desktop.
func readmeSnippets(t *testing.T) []hostSnippet {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	var out []hostSnippet
	blocks := regexp.MustCompile("(?s)([^\n]*)\n\n```(\\w+)\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	for _, m := range blocks {
		intro, lang, body := m[1], m[2], m[3]
		switch {
		case lang == "sh" && strings.HasPrefix(body, "claude mcp add bgexec -- "):
			require.NotContains(t, body, `"`, "the test splits the line on blanks")
			require.NotContains(t, body, `'`, "the test splits the line on blanks")
			f := strings.Fields(strings.TrimPrefix(body, "claude mcp add bgexec -- "))
			out = append(out, hostSnippet{"Claude Code", f[0], f[1:]})
		case lang == "toml" && strings.Contains(body, "[mcp_servers.bgexec]"):
			cmd := regexp.MustCompile(`(?m)^command = (".*")$`).FindStringSubmatch(body)
			args := regexp.MustCompile(`(?m)^args = (\[.*\])$`).FindStringSubmatch(body)
			require.NotNil(t, cmd, body)
			require.NotNil(t, args, body)
			s := hostSnippet{host: "Codex"}
			require.NoError(t, json.Unmarshal([]byte(cmd[1]), &s.command))
			require.NoError(t, json.Unmarshal([]byte(args[1]), &s.args))
			out = append(out, s)
		case lang == "json" && (strings.Contains(body, `"mcpServers"`) || strings.Contains(body, `"servers"`)):
			var doc struct {
				MCPServers map[string]struct {
					Type    string   `json:"type"`
					Command string   `json:"command"`
					Args    []string `json:"args"`
				} `json:"mcpServers"`
				Servers map[string]struct {
					Type    string   `json:"type"`
					Command string   `json:"command"`
					Args    []string `json:"args"`
				} `json:"servers"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &doc), body)
			entry, ok := doc.MCPServers["bgexec"]
			if !ok {
				entry, ok = doc.Servers["bgexec"]
				assert.Equal(t, "stdio", entry.Type, "VS Code's entry names its transport")
			}
			require.True(t, ok, body)
			out = append(out, hostSnippet{strings.TrimSuffix(intro, ":"), entry.Command, entry.Args})
		}
	}
	return out
}

// TestHostSnippets starts the built binary the way each host snippet of
// the README does (its exact arguments; the command's directory replaced
// by the build's) and makes an initialize, tools/list and one exec over
// stdio.
func TestHostSnippets(t *testing.T) {
	t.Parallel()
	snippets := readmeSnippets(t)
	var hosts []string
	for _, s := range snippets {
		hosts = append(hosts, s.host)
	}
	require.Len(t, snippets, 5, "the README has the five host snippets: %q", hosts)
	bin := buildServer(t)
	for _, s := range snippets {
		t.Run(s.host, func(t *testing.T) {
			require.Equal(t, "bgexec-mcp", filepath.Base(s.command), "the snippet starts the installed binary")
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			cmd := exec.Command(bin, s.args...)
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			cs, err := mcp.NewClient(&mcp.Implementation{Name: s.host, Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			require.NoError(t, err, "initialize: %s", stderr)
			defer func() { assert.NoError(t, cs.Close()) }()
			tools, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			require.Len(t, tools.Tools, 2)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "ls /"}})
			require.NoError(t, err)
			assert.False(t, res.IsError, textOf(t, res))
			assert.Contains(t, textOf(t, res), "usr", "ls is on the snippet's allowlist: it runs without asking")
			// A command off the list needs the person: this client offers no
			// elicitation, so it is refused and runs nothing.
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "echo unlisted-ran"}})
			require.NoError(t, err)
			assert.True(t, res.IsError, textOf(t, res))
			assert.NotContains(t, textOf(t, res), "unlisted-ran\n", "echo is not on the snippet's allowlist")
		})
	}
}
