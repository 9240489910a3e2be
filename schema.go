package bgexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Tool names, as a model calls them and as [Scope.Call] accepts them.
const (
	// ToolExec is the name of the exec tool ([Scope.Exec], [ExecRequest]).
	ToolExec = "exec"
	// ToolProcess is the name of the process tool ([Scope.Process], [ProcessRequest]).
	ToolProcess = "process"
)

// ToolDefinition describes one tool to a function-calling model or a tool
// framework: its name, a model-facing description, and a JSON Schema (draft
// 2020-12) of its arguments. The JSON form is
// {"name":…,"description":…,"inputSchema":{…}}, the shape MCP uses; other
// frameworks rename the fields (OpenAI "parameters", Anthropic
// "input_schema") and take InputSchema verbatim.
//
// The schemas mirror [ExecRequest] and [ProcessRequest] field for field
// (same JSON names, types, enums, defaults and bounds) and reject unknown
// fields. Rules that depend on the action or on state, such as "sessionId is
// required except for list", are left to the tools, which answer with their
// documented failure texts. For that reason the process action is a plain
// string whose description lists the actions: an unknown action gets the
// tool's own "Unknown action …" text, after its check for a missing
// sessionId, as the reference answers. Likewise log's offset and limit are
// any numbers (floored by the tool), since log never refuses them.
//
// A ToolDefinition is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type ToolDefinition struct {
	// Name is the tool's name: "exec" or "process".
	Name string `json:"name"`
	// Description tells the model what the tool does and how to use it well.
	Description string `json:"description"`
	// InputSchema is the JSON Schema object of the tool's arguments.
	InputSchema json.RawMessage `json:"inputSchema"`
}

// ToolDefinitions returns the definitions of the exec and process tools, in
// that order. Every call returns fresh values the caller may modify; the
// package keeps no mutable state behind them. Safe for concurrent use.
func ToolDefinitions() []ToolDefinition {
	return []ToolDefinition{
		{Name: ToolExec, Description: execDescription, InputSchema: json.RawMessage(execSchema)},
		{Name: ToolProcess, Description: processDescription, InputSchema: json.RawMessage(processSchema)},
	}
}

const execDescription = `Run a shell command on this machine (the shell's -c, so pipes, && and globs work).

A command that finishes within the yield window (yieldMs, default 10000 ms) returns its output and exit code directly. A command still running then moves to the background and the call returns status "running" with a sessionId and the output so far (on a PTY, its last 20 lines); background: true moves it there at once. A background command keeps running after the call; follow up on it with the process tool.

For long work such as builds, test suites or dev servers: start it once (background: true, or a short yieldMs) and continue with something else. When a background command ends you receive a system message with its exit status and last output, unless it succeeded without printing anything. To block until a specific event, call process wait once (an output line matching a pattern, a TCP port accepting connections, or the exit). Do not start the same command again to check on it, and do not poll or sleep in a loop.

The command is killed after timeoutSeconds (default 1800; 0 or less means no limit), in the foreground and in the background. Set pty: true for programs that need a terminal (interactive prompts, REPLs, full-screen tools) and drive them with process send-keys, submit and paste; read full-screen programs with process screen. For servers use background: true and then process wait for their port or ready line: a server started with & in a foreground command is kept as a running session too, but background: true says so from the start. Set stdin: "pipe" to feed a plain command input with process write.

A call that needs approval may return status "approval-pending" with an approvalId: nothing has run yet. Do not retry it; its result arrives later as a system message (approved and running as a session, or denied).`

const processDescription = `Inspect and control the background sessions started by exec. You see only the sessions you started; nothing survives a restart, and finished sessions are forgotten after a while (30 minutes by default).

Actions (all but list need sessionId):
- list: your running and recently finished sessions, newest first.
- poll: the output produced since the last poll, and whether the process is still running or how it exited. With timeout (ms, up to 120000) it first waits for new output or the exit.
- log: the retained output by lines, without consuming it. offset (0-based) and limit page through it; with neither, the last 200 lines.
- write: send data to stdin; eof: true closes stdin afterwards.
- send-keys: send key tokens (keys, e.g. "Enter", "C-c", "Up", "M-x", "F5"), raw bytes (hex, e.g. "1b") and literal text to a terminal session.
- submit: press Enter (carriage return).
- paste: send text, wrapped in bracketed-paste markers unless bracketed is false.
- kill: terminate a running session (SIGTERM, then SIGKILL).
- clear: forget a finished session.
- remove: kill a running session and forget it at once, or forget a finished one.
- resize: set a terminal session's size (cols, rows).
- wait: block until an output line matches pattern (RE2), a TCP port on localhost (the node's, for host=node) accepts connections (port), output goes quiet (idleMs), or, with none of them, the session exits. timeout in ms, default 30000, at most 600000.
- screen: the terminal's current screen of a pty session, one line per row, ending with a line "[cursor row R col C; alternate screen on|off]". idleMs first waits for the answer to your last input and then until the output has been quiet that long. attributes: true marks styled runs: ⟦r⟧…⟦/r⟧ reverse video (often the selection), ⟦b⟧…⟦/b⟧ bold, ⟦u⟧…⟦/u⟧ underline. A screen consumes the output it shows: poll and wait then return only what came after.

Patterns that work:
- Servers and watchers: start them with exec background: true, then wait once for their port (port) or their ready line (pattern) before using them.
- Full-screen programs (vim, less, top, htop, any TUI): start with pty: true and read them with screen, not poll or log, which show the raw stream. Wait for the first screen before typing (screen with idleMs: 500), then send each key press with screen: true and idleMs (one call per step).
- REPLs and shells under pty (python3, node, bash -i): paste multi-line code (bracketed paste), then submit to run it: a paste alone does not press Enter. Then poll with idleMs (e.g. 300) and a timeout to read the whole answer.
- A plain command asking a question on a pipe (stdin: "pipe"): when poll shows "(waiting for input?)" after an unfinished line, answer with write (data ending in "\n").
- A session whose process is blocked reading its input after a quiet spell: poll says "No new output for Ns; this session may be waiting for input" (details.waitingForInput, idleMs, lastOutputAt, stdinWritable) and list marks it [input-wait]; provide input with write, send-keys, submit or paste.

Polling is for checking on demand, not for scheduling: after starting work, rely on the completion message or one wait call instead of repeated polls.`

// execSchema is the JSON Schema of ExecRequest.
const execSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "command": {
      "type": "string",
      "description": "The shell command line to run, e.g. \"npm run build\"."
    },
    "workdir": {
      "type": "string",
      "description": "Working directory. Default: the configured working directory, else the server's current directory, else $HOME. A directory that does not exist fails the call; nothing runs."
    },
    "env": {
      "type": "object",
      "additionalProperties": { "type": "string" },
      "description": "Environment variables to set, as NAME: value, merged over the inherited environment. PATH and variables that change how shells, loaders, interpreters or package managers behave are refused."
    },
    "yieldMs": {
      "type": "number",
      "default": 10000,
      "description": "Milliseconds to wait for the command to finish before moving it to the background and returning its sessionId. Clamped to 10..120000."
    },
    "background": {
      "type": "boolean",
      "default": false,
      "description": "Move the command to the background at once and return its sessionId."
    },
    "timeoutSeconds": {
      "type": "number",
      "default": 1800,
      "maximum": 2592000,
      "description": "Seconds (fractions allowed) after which the command is killed, in the foreground and in the background. 0 or less means no timeout; at most 2592000 (30 days)."
    },
    "timeout": {
      "type": "number",
      "maximum": 2592000,
      "description": "Older name of timeoutSeconds, still accepted; if both are given they must be equal."
    },
    "title": {
      "type": "string",
      "maxLength": 120,
      "description": "A short purpose of the command (at most 120 characters), shown with its session in list and poll."
    },
    "pty": {
      "type": "boolean",
      "default": false,
      "description": "Run under a pseudo-terminal (120x30, stdout and stderr merged) for programs that need a TTY."
    },
    "elevated": {
      "type": "boolean",
      "default": false,
      "description": "Run outside the sandbox on the gateway host; only works where elevation is enabled and allowed."
    },
    "host": {
      "type": "string",
      "enum": ["auto", "sandbox", "gateway", "node"],
      "default": "auto",
      "description": "Where to run. auto picks the sandbox when one is configured, else the gateway (this machine). Must match the configured host."
    },
    "security": {
      "type": "string",
      "enum": ["deny", "allowlist", "full"],
      "description": "Command security level for this call. Default: the configured level; a call may only make it stricter (full > allowlist > deny)."
    },
    "ask": {
      "type": "string",
      "enum": ["off", "on-miss", "always"],
      "description": "When to ask for approval before running. Default: the configured mode; a call may only make it stricter (off < on-miss < always)."
    },
    "stdin": {
      "type": "string",
      "enum": ["closed", "pipe"],
      "default": "closed",
      "description": "bgexec addition. closed: the command reads end-of-file at once. pipe: stdin stays open for process write (eof closes it). PTY sessions always take input."
    },
    "node": {
      "type": "string",
      "description": "Which node runs the command when host is node. Default: the configured default node."
    },
    "streams": {
      "type": "string",
      "enum": ["merged", "split"],
      "default": "merged",
      "description": "bgexec addition. split: the result details also carry stdout and stderr apart (finished exec results and poll); not with pty, which has one stream."
    }
  },
  "required": ["command"],
  "additionalProperties": false
}`

// processSchema is the JSON Schema of ProcessRequest.
//
// timeout is shared by poll (0..120000; longer values are clamped) and wait
// (default 30000, at most 600000), so its bound is wait's. A per-action
// bound would need if/then at the top level, which several model APIs
// refuse in tool schemas.
const processSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "action": {
      "type": "string",
      "description": "What to do: one of list, poll, log, write, send-keys, submit, paste, kill, clear, remove, resize, wait, screen, reset-shell (case-sensitive). resize, wait, screen and reset-shell are bgexec additions; reset-shell (no sessionId) forgets the working directory and variables earlier execs left when shell state is kept."
    },
    "sessionId": {
      "type": "string",
      "description": "The session id returned by exec. Required for every action but list and reset-shell."
    },
    "data": {
      "type": "string",
      "description": "write: the text to send to stdin, e.g. \"y\\n\"."
    },
    "eof": {
      "type": "boolean",
      "default": false,
      "description": "write: close stdin after data (on a terminal: send Ctrl-D)."
    },
    "keys": {
      "type": "array",
      "items": { "type": "string" },
      "description": "send-keys: key tokens sent after literal and hex, e.g. [\"C-c\"], [\"Down\", \"Enter\"]. Modifiers C-, M-, S- combine (\"C-M-x\"); ^X is Ctrl-X."
    },
    "hex": {
      "type": "array",
      "items": { "type": "string" },
      "description": "send-keys: raw bytes, one or two hex digits each with optional 0x, e.g. [\"1b\", \"0x03\"]."
    },
    "literal": {
      "type": "string",
      "description": "send-keys: text sent as is, before hex and keys."
    },
    "text": {
      "type": "string",
      "description": "paste: the text to paste."
    },
    "bracketed": {
      "type": "boolean",
      "default": true,
      "description": "paste: wrap the text in bracketed-paste markers so the program treats it as one paste."
    },
    "offset": {
      "type": "number",
      "description": "log: first line to return, 0-based (fractions are floored, a negative offset is 0). Without limit: everything from offset on."
    },
    "limit": {
      "type": "number",
      "description": "log: number of lines to return (fractions are floored; 0 or less returns none). Without offset: the last limit lines. With neither: the last 200 lines."
    },
    "timeout": {
      "type": ["number", "string"],
      "minimum": 0,
      "maximum": 600000,
      "pattern": "^\\s*(600000(\\.0*)?|[0-5]?[0-9]{1,5}(\\.[0-9]*)?)\\s*$",
      "description": "Milliseconds; a number or a numeric string. poll: how long to wait for new output or the exit, 0..120000 (default 0, or 5000 with idleMs; longer values are clamped). wait: how long to wait, default 30000, at most 600000. screen: how long to wait for idleMs of quiet, default 5000."
    },
    "cols": {
      "type": "integer",
      "minimum": 1,
      "maximum": 1000,
      "description": "resize (bgexec addition): terminal width in columns."
    },
    "rows": {
      "type": "integer",
      "minimum": 1,
      "maximum": 1000,
      "description": "resize (bgexec addition): terminal height in rows."
    },
    "pattern": {
      "type": "string",
      "description": "wait (bgexec addition): RE2 regular expression matched against each output line, e.g. \"listening on|ready\"."
    },
    "port": {
      "type": "integer",
      "minimum": 1,
      "maximum": 65535,
      "description": "wait (bgexec addition): TCP port on 127.0.0.1 or ::1 to wait for until it accepts connections."
    },
    "idleMs": {
      "type": "number",
      "minimum": 0,
      "maximum": 600000,
      "description": "poll, wait and screen (bgexec addition): milliseconds of quiet. poll and wait return once new output has arrived and then none for idleMs (or at the exit or the timeout; poll without timeout waits up to 5000 ms). screen first waits until no output has arrived for idleMs (bounded by timeout, default 5000). Use it after typing, so you read the whole answer instead of its first bytes."
    },
    "screen": {
      "type": "boolean",
      "default": false,
      "description": "write, send-keys, submit and paste on a pty session (bgexec addition): after sending, return the screen as the screen action would (with idleMs and timeout), so one call is one step."
    },
    "attributes": {
      "type": "boolean",
      "default": false,
      "description": "screen (bgexec addition): mark reverse-video, bold and underlined runs with ⟦r⟧…⟦/r⟧, ⟦b⟧…⟦/b⟧, ⟦u⟧…⟦/u⟧."
    }
  },
  "required": ["action"],
  "additionalProperties": false
}`

// toolSchemas holds the compiled tool schemas. It is built once, on first
// use, and never changes afterwards, so sharing it between goroutines is
// safe. Like every package-level value of the package (the sentinel
// errors, the name and syscall lists, the action table), it is never
// changed after it is built.
var toolSchemas = sync.OnceValues(compileToolSchemas)

func compileToolSchemas() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	out := make(map[string]*jsonschema.Schema, 2)
	for _, def := range ToolDefinitions() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(def.InputSchema))
		if err != nil {
			return nil, fmt.Errorf("bgexec: %s schema: %w", def.Name, err)
		}
		url := "bgexec:///" + def.Name + ".schema.json"
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("bgexec: %s schema: %w", def.Name, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("bgexec: %s schema: %w", def.Name, err)
		}
		out[def.Name] = sch
	}
	return out, nil
}

// validateToolArgs checks a tool call's arguments against the tool's schema.
// It returns "" when they are valid, and otherwise a failure text for the
// model that names each offending field, e.g.
//
//	Invalid arguments for exec: /yieldMs: got string, want number.
//
// Empty or blank args count as {}. It also returns "" for an unknown tool
// name and for args that are not JSON at all: those are Go errors of
// [Scope.Call], reported by the decoder that runs next.
// Safe for concurrent use.
func validateToolArgs(tool string, args json.RawMessage) (failureText string) {
	schemas, err := toolSchemas()
	if err != nil {
		// The schemas are constants covered by tests.
		panic(err)
	}
	sch := schemas[tool]
	if sch == nil {
		return ""
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return ""
	}
	err = sch.Validate(v)
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Sprintf("Invalid arguments for %s: %v.", tool, err)
	}
	var problems []string
	collectProblems(ve, &problems)
	if len(problems) == 0 {
		problems = append(problems, "they do not match the schema")
	}
	// The validator visits properties in map order; sort for a stable text.
	slices.Sort(problems)
	return fmt.Sprintf("Invalid arguments for %s: %s.", tool, strings.Join(slices.Compact(problems), "; "))
}

// collectProblems appends one line per leaf error of ve.
func collectProblems(ve *jsonschema.ValidationError, out *[]string) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			collectProblems(c, out)
		}
		return
	}
	*out = append(*out, describeProblem(ve))
}

var englishPrinter = message.NewPrinter(language.English)

// describeProblem phrases one validation error, naming the field by its
// JSON pointer.
func describeProblem(ve *jsonschema.ValidationError) string {
	at := "/" + strings.Join(ve.InstanceLocation, "/")
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		names := make([]string, len(k.Missing))
		for i, m := range k.Missing {
			names[i] = strings.TrimSuffix(at, "/") + "/" + m
		}
		return strings.Join(names, ", ") + ": required but missing"
	case *kind.AdditionalProperties:
		names := make([]string, len(k.Properties))
		for i, p := range k.Properties {
			names[i] = strings.TrimSuffix(at, "/") + "/" + p
		}
		return strings.Join(names, ", ") + ": unknown field"
	case *kind.Type:
		return fmt.Sprintf("%s: got %s, want %s", at, k.Got, strings.Join(k.Want, " or "))
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		return fmt.Sprintf("%s: got %s, want one of %s", at, jsonText(k.Got), strings.Join(want, ", "))
	case *kind.Minimum:
		return fmt.Sprintf("%s: got %s, want at least %s", at, ratText(k.Got), ratText(k.Want))
	case *kind.Maximum:
		return fmt.Sprintf("%s: got %s, want at most %s", at, ratText(k.Got), ratText(k.Want))
	case *kind.Pattern:
		if at == "/timeout" {
			// The one pattern in the schemas: process timeout as a numeric string.
			return fmt.Sprintf("%s: got %s, want a number of milliseconds from 0 to 600000", at, jsonText(k.Got))
		}
		return fmt.Sprintf("%s: got %s, want a string matching %s", at, jsonText(k.Got), k.Want)
	default:
		return at + ": " + ve.ErrorKind.LocalizedString(englishPrinter)
	}
}

// ratText renders an exact schema number without float noise.
func ratText(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// jsonText renders a decoded JSON value for a message.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
