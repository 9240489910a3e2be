// Package openai connects bgexec to the OpenAI Go SDK
// (github.com/openai/openai-go/v3) in two ways.
//
// # Function tools
//
// [ChatTools] and [ResponseTools] give bgexec's exec and process tools as
// function definitions, for the Chat Completions API and the Responses
// API: bgexec's names, descriptions and JSON Schemas ([bgexec.ToolDefinitions]),
// unchanged, with strict mode off (the schemas have optional fields, which
// strict mode does not allow). [CallChat] and [CallResponse] run the model's
// function call through [bgexec.Scope.Call], so its arguments are checked
// against the schema, and return the message or input item that answers
// it. [Handles] tells a dispatcher which calls are bgexec's.
//
// A function call's output is a string: the APIs have no error flag for
// it. So [Output] writes a result as its text, starting with [ErrorPrefix]
// when [bgexec.Result.IsError] (the call was refused, its arguments were
// wrong, it named no session, or the command could not start), then a
// blank line and [DetailsPrefix] with the details as JSON (status,
// sessionId, exitCode, exitReason …, as [bgexec.Details] encodes them,
// without "aggregated" and "tail", which would repeat the output):
//
//	Error: No session found for nope
//
//	Details: {"status":"failed","error":"No session found for nope"}
//
// A command that ran and exited non-zero is not an error: its details say
// "completed" with the exit code. A call that could not be made (the
// registry was closed, the context ended, the arguments were not JSON, the
// function is not bgexec's) is a Go error.
//
// # The Responses API's shell tool
//
// With the hosted "shell" tool in its local environment
// (responses.FunctionShellToolParam), the model sends shell_call items with
// commands, a timeout and an output limit, and expects one shell_call_output
// whose entries carry each command's stdout, stderr and outcome (an exit
// code, or a timeout). [Shell] runs such a call through bgexec: each command
// is one exec with split streams (exec's streams "split"), run in order,
// waited for to its end with process poll and then removed from the scope's
// session list. See [Shell] for the mapping of timeouts, signals, refusals
// and the output limit.
//
// # Parallel calls
//
// A model may return several function calls in one response, and a caller
// that runs them at once (the usual loop over goroutines) may run a process
// list before an exec with background true of the same response has
// started its session, and miss it. The exec result carries the session
// id, so nothing is lost; to run one call at a time, run a response's calls
// in their order, or set ParallelToolCalls to false in the request.
//
// All functions are safe for concurrent use.
package openai
