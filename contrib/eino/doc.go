// Package eino gives bgexec's exec and process tools eino's tool type
// (github.com/cloudwego/eino, [tool.InvokableTool]), so an eino ToolsNode,
// ReAct agent or ADK agent runs shell commands through bgexec.
//
// # Tools
//
// [Tools] returns the two tools for [compose.ToolsNodeConfig].Tools. Each
// tool's name, description and parameters are bgexec's own
// ([bgexec.ToolDefinitions]), the parameters as eino's JSON Schema, and
// every call goes through [bgexec.Scope.Call], so the arguments are
// checked against that schema and a violation is a result the model can
// read.
//
// # Results
//
// An eino tool returns a string, and a Go error from a tool ends the whole
// graph run (eino's own remedy is utils.WrapToolWithErrorHandler, which
// turns errors back into strings). A failed tool call is something the
// model must read and correct, so the adapter never returns one as a Go
// error: a result with [bgexec.Result.IsError] (the call was refused, its
// arguments were wrong, it named no session, or the command could not
// start) is a string that starts with [ErrorPrefix]. Every string ends with
// a blank line and [DetailsPrefix] followed by the result's details as
// JSON (status, sessionId, exitCode, exitReason …, as [bgexec.Details]
// encodes them, without "aggregated" and "tail", which would repeat the
// output):
//
//	Error: No session found for nope
//
//	Details: {"status":"failed","error":"No session found for nope"}
//
// A command that ran and exited non-zero is not an error: its details say
// "completed" with the exit code. Only a call that could not be made (the
// registry was closed, the context ended, the arguments were not JSON)
// returns a Go error, and ends the run as eino expects.
//
// # Parallel calls
//
// A ToolsNode runs all tool calls of one message at once unless
// ExecuteSequentially is set. A process list in the same message as an exec
// with background true may run before that exec has started its session,
// and miss it. The exec result carries the session id, so nothing is lost;
// set ExecuteSequentially to run a message's calls in their order.
//
// The tools are safe for concurrent use; they hold no state besides the
// scope.
package eino
