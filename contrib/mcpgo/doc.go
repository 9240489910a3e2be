// Package mcpgo serves bgexec's exec and process tools from an mcp-go
// server (github.com/mark3labs/mcp-go), so a host that speaks MCP runs
// shell commands through bgexec.
//
// # Tools
//
// [Tools] returns the two tools as [server.ServerTool] values for
// [server.MCPServer.AddTools]. Each tool's name, description and input
// schema are bgexec's own ([bgexec.ToolDefinitions]), unchanged, and every
// call goes through [bgexec.Scope.Call], so arguments are checked against
// that schema and a violation is a result the model can read. [ToolsFor]
// picks the scope per call, for a server that serves several agents (for
// example one scope per MCP client session, from
// [server.ClientSessionFromContext]).
//
// # Results
//
// A bgexec result becomes a [mcp.CallToolResult] with:
//
//   - one text content item, the result's text (what the model reads);
//   - isError set from [bgexec.Result.IsError]: the call was refused, its
//     arguments were wrong, it named no session or the command could not
//     start. A command that ran and exited non-zero is not an error: its
//     details say "completed" with the exit code;
//   - structured content, an object {"text": …, "details": {…}}: the same
//     text again (hosts such as Claude Code and Codex give the model only
//     the structured content when there is one) and bgexec's details
//     (status, sessionId, exitCode, exitReason …) as [bgexec.Details]
//     encodes them, without "aggregated" and "tail", which would repeat
//     the output a second time.
//
// A call whose context ended returns that error, which mcp-go sends as a
// JSON-RPC error. Any other Go error from bgexec (the registry was closed)
// becomes an isError result whose text says so.
//
// # Parallel calls
//
// MCP hosts may send one model message's tool calls at once, and this
// server runs them concurrently. A process list in the same message as an
// exec with background true may run before that exec has started its
// session, and miss it. The exec result itself carries the session id, so
// nothing is lost; a host that needs the list to see the session must send
// the list in a later message, or turn off parallel tool calls at the model.
//
// Safe for concurrent use: the tools hold no state besides the scope.
package mcpgo
