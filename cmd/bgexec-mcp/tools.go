package main

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/bgexec/bgexec"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolInfo is what MCP hosts read about a tool beyond its schema.
type toolInfo struct {
	title string
	// The hints, as they truly apply to every call of the tool: a host may
	// auto-approve a tool only when all of its calls are read-only.
	readOnly, destructive, idempotent, openWorld bool
}

func (t toolInfo) annotations() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{
		ReadOnlyHint:    t.readOnly,
		DestructiveHint: &t.destructive,
		IdempotentHint:  t.idempotent,
		OpenWorldHint:   &t.openWorld,
	}
}

// toolMeta holds each tool's title and hints. exec runs any command, so it
// may change or delete anything and reach the network. process mixes
// read-only actions (list, poll, log, wait) with ones that end sessions
// (kill, remove) or feed them input: a single tool carries one set of
// hints, so they describe its most powerful actions. It acts only on the
// sessions exec started, not on the outside world, hence openWorld false
// (what a command does with the input it gets is exec's open world).
// Neither is idempotent: poll consumes the output it returns.
func toolMeta(name string) toolInfo {
	if name == bgexec.ToolExec {
		return toolInfo{title: "Run a shell command", destructive: true, openWorld: true}
	}
	return toolInfo{title: "Inspect and control background commands", destructive: true}
}

// The sentence of the library's exec description about exit messages,
// and what this server says instead: MCP hosts do not show logging
// messages to the model, so the promise holds only with exit notices in
// results.
const (
	libraryExitSentence = "When a background command ends you receive a system message with its exit status and last output, unless it succeeded without printing anything."
	noticeExitSentence  = "When a background command ends, a line starting with " + bgexec.NoticePrefix + "with its exit status and last output comes first in your next exec or process result (the next call of either tool), unless it succeeded without printing anything."
	loggingExitSentence = "When a background command ends, this server sends an MCP logging message with its exit status and last output, which your host may not show you: to learn of the end, call process wait once."
)

// The library's words on where a pending approval's outcome arrives, and
// this server's.
const (
	libraryApprovalWords = "its result arrives later as a system message (approved and running as a session, or denied)."
	noticeApprovalWords  = "its outcome (approved and running as a session, or denied) comes first in a later exec or process result, in a line starting with " + bgexec.NoticePrefix
	loggingApprovalWords = "its outcome is sent as an MCP logging message your host may not show: call process list later to see whether it runs."
)

// describe is the tool description this server offers: the library's,
// with the exit sentence and the approval outcome saying how this server
// tells of them.
func describe(def bgexec.ToolDefinition, notices bool) string {
	if def.Name != bgexec.ToolExec {
		return def.Description
	}
	if notices {
		d := strings.Replace(def.Description, libraryExitSentence, noticeExitSentence, 1)
		return strings.Replace(d, libraryApprovalWords, strings.TrimSpace(noticeApprovalWords)+".", 1)
	}
	d := strings.Replace(def.Description, libraryExitSentence, loggingExitSentence, 1)
	return strings.Replace(d, libraryApprovalWords, loggingApprovalWords, 1)
}

func instructionsFor(notices bool) string {
	tell := "when it ends, this server sends a logging message with the exit summary, which hosts may not show"
	if notices {
		tell = "when it ends, your next exec or process result starts with a line \"" + bgexec.NoticePrefix + "Exec completed (<sessionId>, code N) :: <last output>\""
	}
	return "Tools for running shell commands that may outlive a single call. Start long work once with exec (background: true or a short yieldMs); " + tell + ". Use process wait to block for a log line, a port or the exit, and process poll or log to look at output on demand. Do not poll in a loop. A call waits at most the server's per-call limit and then says so; call again to keep waiting."
}

// toolOutput is the structured content of every result: the model-facing
// text, whole, and bgexec's status fields. Hosts such as Claude Code and
// Codex give the model only the structured content when a result has one,
// so Text repeats the text content (output, exit notices, hints, refusal
// reasons) and a host that reads either part shows the model the same.
// The output is carried once more only as that text: details.aggregated
// and details.tail, which would repeat it a second time, are left out.
type toolOutput struct {
	// Text is the result's text content, verbatim.
	Text      string        `json:"text"`
	Status    bgexec.Status `json:"status"`
	SessionID string        `json:"sessionId,omitempty"`
	Pid       int           `json:"pid,omitempty"`
	StartedAt int64         `json:"startedAt,omitempty"`
	Cwd       string        `json:"cwd,omitempty"`
	// ExitCode is a number, or null on an ended exec without one (as
	// the details carry it), and absent where no exit applies.
	ExitCode   json.RawMessage   `json:"exitCode,omitempty"`
	ExitSignal string            `json:"exitSignal,omitempty"`
	ExitReason bgexec.ExitReason `json:"exitReason,omitempty"`
	DurationMs *int64            `json:"durationMs,omitempty"`
	TimedOut   *bool             `json:"timedOut,omitempty"`
	Name       string            `json:"name,omitempty"`
	RetryInMs  *int64            `json:"retryInMs,omitempty"`
	TotalLines *int              `json:"totalLines,omitempty"`
	TotalChars *int64            `json:"totalChars,omitempty"`
	FirstLine  *int64            `json:"firstLine,omitempty"`
	Truncated  *bool             `json:"truncated,omitempty"`
	Sessions   []sessionOutput   `json:"sessions,omitempty"`
	Port       int               `json:"port,omitempty"`
	Condition  string            `json:"condition,omitempty"`
	Resources  *bgexec.Resources `json:"resources,omitempty"`
	// The terminal of a screen result.
	Cols            int     `json:"cols,omitempty"`
	Rows            int     `json:"rows,omitempty"`
	CursorRow       int     `json:"cursorRow,omitempty"`
	CursorCol       int     `json:"cursorCol,omitempty"`
	AlternateScreen *bool   `json:"alternateScreen,omitempty"`
	Title           *string `json:"title,omitempty"`
	// Whether a running session may be waiting for input (poll, log).
	StdinWritable   *bool  `json:"stdinWritable,omitempty"`
	WaitingForInput *bool  `json:"waitingForInput,omitempty"`
	IdleMs          *int64 `json:"idleMs,omitempty"`
	LastOutputAt    *int64 `json:"lastOutputAt,omitempty"`
	// The pending approval of an exec (status approval-pending).
	ApprovalID       string   `json:"approvalId,omitempty"`
	ExpiresAtMs      int64    `json:"expiresAtMs,omitempty"`
	AllowedDecisions []string `json:"allowedDecisions,omitempty"`
}

// sessionOutput is one entry of list, without its output tail; the command
// is cut to maxCommandChars (the list text shows only the name).
type sessionOutput struct {
	SessionID  string            `json:"sessionId"`
	Status     bgexec.Status     `json:"status"`
	Pid        int               `json:"pid"`
	StartedAt  int64             `json:"startedAt"`
	EndedAt    int64             `json:"endedAt,omitempty"`
	RuntimeMs  int64             `json:"runtimeMs"`
	Cwd        string            `json:"cwd"`
	Command    string            `json:"command"`
	Name       string            `json:"name"`
	Truncated  bool              `json:"truncated"`
	ExitCode   *int              `json:"exitCode,omitempty"`
	ExitSignal string            `json:"exitSignal,omitempty"`
	Resources  *bgexec.Resources `json:"resources,omitempty"`
}

// maxCommandChars bounds a command in list's structured content, so that a
// megabyte command does not come back with every list.
const maxCommandChars = 500

// droppedDetails are the fields of bgexec.Details the structured content
// leaves out, because the text already holds them (error is a failure's
// text, followUp the running text's follow-up line, stdout and stderr the
// output the text shows merged, notCarried the text's note on variables
// shell state did not carry, the output file's fields the text's note
// naming the file).
func droppedDetails() []string {
	return []string{"aggregated", "tail", "matched", "error", "followUp", "stdout", "stderr", "notCarried",
		"outputFile", "outputFileTruncated", "outputFileIncomplete"}
}

// outputOf is the structured content of a result whose text is text.
func outputOf(text string, d *bgexec.Details) toolOutput {
	o := toolOutput{
		Text: text, Status: d.Status, SessionID: d.SessionID, Pid: d.Pid, StartedAt: d.StartedAt, Cwd: d.Cwd,
		ExitSignal: d.ExitSignal, ExitReason: d.ExitReason, DurationMs: d.DurationMs,
		TimedOut: d.TimedOut, Name: d.Name, RetryInMs: d.RetryInMs, TotalLines: d.TotalLines,
		TotalChars: d.TotalChars, FirstLine: d.FirstLine, Truncated: d.Truncated, Port: d.Port, Condition: d.Condition,
		Resources: d.Resources,
		Cols:      d.Cols, Rows: d.Rows, CursorRow: d.CursorRow, CursorCol: d.CursorCol,
		AlternateScreen: d.AlternateScreen, Title: d.Title,
		ApprovalID: d.ApprovalID, ExpiresAtMs: d.ExpiresAtMs, AllowedDecisions: d.AllowedDecisions,
		StdinWritable: d.StdinWritable, WaitingForInput: d.WaitingForInput, IdleMs: d.IdleMs, LastOutputAt: d.LastOutputAt,
	}
	switch {
	case d.ExitCode != nil:
		o.ExitCode = json.RawMessage(strconv.Itoa(*d.ExitCode))
	case d.DurationMs != nil: // an ended exec: the code is null, never absent
		o.ExitCode = json.RawMessage("null")
	}
	for _, s := range d.Sessions {
		cmd := s.Command
		if r := []rune(cmd); len(r) > maxCommandChars {
			cmd = string(r[:maxCommandChars-1]) + "…"
		}
		o.Sessions = append(o.Sessions, sessionOutput{
			SessionID: s.SessionID, Status: s.Status, Pid: s.Pid, StartedAt: s.StartedAt, EndedAt: s.EndedAt,
			RuntimeMs: s.RuntimeMs, Cwd: s.Cwd, Command: cmd, Name: s.Name, Truncated: s.Truncated,
			ExitCode: s.ExitCode, ExitSignal: s.ExitSignal, Resources: s.Resources,
		})
	}
	return o
}

// outputSchema is the JSON Schema of a tool's structured content. Both
// tools share toolOutput; exec results use its first fields only.
func outputSchema(tool string) json.RawMessage {
	if tool == bgexec.ToolExec {
		return json.RawMessage(execOutputSchema)
	}
	return json.RawMessage(processOutputSchema)
}

const statusFieldsSchema = `
    "text": {"type": "string", "description": "The whole result as text (output, notices, hints, refusal reasons): the same as the text content."},
    "status": {"type": "string", "enum": ["running", "completed", "failed"], "description": "running: the command is still running (in the background); completed: it exited on its own (any exit code) or the action succeeded; failed: it was killed, timed out or could not start, or the call failed."},
    "sessionId": {"type": "string", "description": "The background session, for process calls."},
    "pid": {"type": "integer", "description": "Process id of the session's shell."},
    "startedAt": {"type": "integer", "description": "Start time, Unix epoch milliseconds."},
    "cwd": {"type": "string", "description": "Working directory the command runs in."},
    "exitCode": {"type": ["integer", "null"], "description": "Exit code; null when an ended exec has none (killed by a signal, not started)."},
    "exitSignal": {"type": "string", "description": "Signal that ended the process, e.g. SIGKILL."},
    "exitReason": {"type": "string", "enum": ["exit", "signal", "timeout", "killed", "spawn-error", "oom", "lost"], "description": "How the session ended (oom: the memory limit killed it; lost: the connection to its node dropped)."},
    "durationMs": {"type": "integer", "description": "Run time in milliseconds."},
    "timedOut": {"type": "boolean", "description": "Whether the exec timeout ended the run."},
    "title": {"type": "string", "description": "The exec's title (exec, poll, list), or the window title the program set (screen)."}`

// resourcesSchema describes what a running session uses now (poll, list).
const resourcesSchema = `{
      "type": "object",
      "description": "What a running session uses now.",
      "properties": {
        "cpuMs": {"type": "integer", "description": "CPU time used so far, in milliseconds."},
        "memoryBytes": {"type": "integer", "description": "Memory charged now, in bytes."},
        "tasks": {"type": "integer", "description": "Processes and threads now."},
        "ports": {"type": ["array", "null"], "description": "TCP ports it listens on.", "items": {
          "type": "object",
          "properties": {"port": {"type": "integer"}, "address": {"type": "string"}},
          "required": ["port", "address"],
          "additionalProperties": false
        }}
      },
      "required": ["cpuMs", "memoryBytes", "tasks", "ports"],
      "additionalProperties": false
    }`

const execOutputSchema = `{
  "type": "object",
  "properties": {` + statusFieldsSchema + `,
    "approvalId": {"type": "string", "description": "The pending approval (approval-pending)."},
    "expiresAtMs": {"type": "integer", "description": "When the pending approval expires as a denial, Unix epoch milliseconds."},
    "allowedDecisions": {"type": "array", "items": {"type": "string"}, "description": "The decisions the approval takes."}
  },
  "required": ["text", "status"],
  "additionalProperties": false
}`

const processOutputSchema = `{
  "type": "object",
  "properties": {` + statusFieldsSchema + `,
    "name": {"type": "string", "description": "Short name of the session's command."},
    "retryInMs": {"type": "integer", "description": "Suggested delay before polling a running session again, in milliseconds."},
    "totalLines": {"type": "integer", "description": "Lines the session printed, dropped ones included (log)."},
    "totalChars": {"type": "integer", "description": "Characters of retained output (log)."},
    "firstLine": {"type": "integer", "description": "Number of the oldest retained line when older ones were dropped (log)."},
    "truncated": {"type": "boolean", "description": "Whether output was discarded at the retention cap."},
    "port": {"type": "integer", "description": "TCP port a wait found accepting."},
    "condition": {"type": "string", "enum": ["pattern", "port", "idle", "exit", "timeout"], "description": "What ended a wait."},
    "cols": {"type": "integer", "description": "Terminal width in columns (screen)."},
    "rows": {"type": "integer", "description": "Terminal height in rows (screen)."},
    "cursorRow": {"type": "integer", "description": "Cursor row, 1-based (screen)."},
    "cursorCol": {"type": "integer", "description": "Cursor column, 1-based (screen)."},
    "alternateScreen": {"type": "boolean", "description": "Whether a full-screen program is showing its alternate screen (screen)."},
    "stdinWritable": {"type": "boolean", "description": "Whether the session takes input now (poll, log)."},
    "waitingForInput": {"type": "boolean", "description": "Whether the session is quiet and blocked reading its input (poll, log)."},
    "idleMs": {"type": "integer", "description": "How long the session has printed nothing, in milliseconds (poll, log)."},
    "lastOutputAt": {"type": "integer", "description": "When the session last printed, Unix epoch milliseconds (poll, log)."},
    "resources": ` + resourcesSchema + `,
    "sessions": {
      "type": "array",
      "description": "Your sessions (list).",
      "items": {
        "type": "object",
        "properties": {
          "sessionId": {"type": "string"},
          "status": {"type": "string", "enum": ["running", "completed", "failed"]},
          "pid": {"type": "integer"},
          "startedAt": {"type": "integer"},
          "endedAt": {"type": "integer"},
          "runtimeMs": {"type": "integer"},
          "cwd": {"type": "string"},
          "command": {"type": "string", "description": "The command, cut to ` + "500" + ` characters."},
          "name": {"type": "string"},
          "truncated": {"type": "boolean"},
          "exitCode": {"type": "integer"},
          "exitSignal": {"type": "string"},
          "resources": ` + resourcesSchema + `
        },
        "required": ["sessionId", "status", "pid", "startedAt", "runtimeMs", "cwd", "command", "name", "truncated"],
        "additionalProperties": false
      }
    }
  },
  "required": ["text", "status"],
  "additionalProperties": false
}`
