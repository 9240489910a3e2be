// Package anthropic gives bgexec's exec and process tools the Anthropic Go
// SDK's tool type (github.com/anthropics/anthropic-sdk-go/v2), so the
// SDK's beta tool runner runs shell commands through bgexec.
//
// # Tools
//
// [Tools] returns the two tools as [anthropic.BetaTool] values for
// [anthropic.BetaMessageService.NewToolRunner]. Their names, descriptions
// and input schemas are bgexec's own ([bgexec.ToolDefinitions]), unchanged,
// and every call goes through [bgexec.Scope.Call], so the arguments are
// checked against that schema and a violation is a result the model can
// read.
//
// # Results
//
// The runner marks a tool_result with is_error only when the tool returns
// a Go error, and then sends the text "Error: " followed by the error's
// message. So a result with [bgexec.Result.IsError] (the call was refused,
// its arguments were wrong, it named no session, or the command could not
// start) is returned as a [*ToolError], whose message is the result's text
// followed by a line with its details; the model reads
//
//	Error: <text>
//
//	Details: {"status":"failed",…}
//
// with is_error true. Any other result is two text blocks: the result's
// text, and "Details: " followed by the details as JSON (status,
// sessionId, exitCode, exitReason …, as [bgexec.Details] encodes them,
// without "aggregated" and "tail", which would repeat the output). A
// command that ran and exited non-zero is not an error: its details say
// "completed" with the exit code. A Go error from bgexec (the registry was
// closed, the context ended) is returned as it is, and the runner sends
// its message with is_error.
//
// # Parallel calls
//
// The tool runner runs all tool calls of one assistant message at once. A
// process list in the same message as an exec with background true may run
// before that exec has started its session, and miss it. The exec result
// carries the session id, so nothing is lost; to make the model call one
// tool at a time, set DisableParallelToolUse in the request's tool choice
// (anthropic.BetaToolChoiceAutoParam).
//
// The tools are safe for concurrent use; they hold no state besides the
// scope.
package anthropic
