package bgexec

import (
	"encoding/json"
	"strings"
)

// Result is what exec and process return: the envelope tool frameworks
// expect. json.Marshal gives {"content":[{"type":"text","text":"…"}],"details":{…}},
// plus "isError":true when the call failed.
//
// Two kinds of failure are kept apart. IsError means the tool call itself
// failed: it was refused (policy, environment rules), its arguments were
// wrong, it named no session, its input was not taken, or the command
// could not be started; Details.Status is then "failed" and the text says
// what to fix. A command that ran is never an IsError, however it ended:
// a non-zero exit is status "completed" with its exit code, and a command
// ended by a signal, a timeout or a kill is status "failed" with the
// reason. None of these is a Go error, which means the call could not be
// made at all.
//
// A Result is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type Result struct {
	// Content holds one text item: what the model reads.
	Content []Content `json:"content"`
	// Details holds the structured fields (status, exit code, session id …).
	Details Details `json:"details"`
	// IsError reports that the call failed, as MCP's CallToolResult.isError.
	IsError bool `json:"isError,omitzero"`

	// delivery is what the result took (drained output, exit reports and
	// notices), given back by [Scope.Undelivered].
	delivery *delivery
}

// Content is one content item of a Result. Type is always "text".
//
// A Content is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type Content struct {
	// Type is the MCP content type: always "text".
	Type string `json:"type"`
	// Text is what the model reads, in LF line endings.
	Text string `json:"text"`
}

// Text returns the model-facing text of the result.
func (r *Result) Text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// DetailsJSON returns the result's details as JSON with Aggregated and
// Tail emptied, since they repeat the output the text already carries (a
// finished exec's JSON still has "aggregated": "", as the reference's does): what a
// framework adapter shows the model beside the text when the framework
// has no structured part. Safe for concurrent use with other readers.
func (r *Result) DetailsJSON() string {
	d := r.Details
	d.Aggregated, d.Tail = "", ""
	b, err := json.Marshal(d)
	if err != nil {
		// Details hold only strings, numbers and booleans.
		return `{"status":"` + string(d.Status) + `"}`
	}
	return string(b)
}

// PlainText returns the result as one string, for frameworks whose tool
// results are a string with no error flag (eino, OpenAI function calls):
// "Error: " first when IsError, the text, a blank line, and "Details: "
// followed by [Result.DetailsJSON]. Safe for concurrent use with other
// readers.
func (r *Result) PlainText() string {
	text := r.Text()
	if r.IsError {
		text = "Error: " + text
	}
	return text + "\n\nDetails: " + r.DetailsJSON()
}

// Details are the structured fields of a result. Which fields are set
// depends on the tool, the action and the status; fields that do not apply
// are omitted from JSON. A nil ExitCode means there is no exit code (the
// process was ended by a signal, never started, or has not ended).
//
// One exception to the omission: a completed or failed exec result always
// carries "exitCode" (a number, or null when there is none) and
// "aggregated" ("" when there was no output) in its JSON, as the reference
// tool does. Details decoded back from JSON lose that mark and encode like
// any other details.
//
// A Details is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type Details struct {
	// Status is running, completed or failed; "approval-pending" for an
	// exec waiting for a deferred approval ([StatusApprovalPending]).
	Status Status `json:"status"`
	// SessionID names the session (backgrounded exec results, process actions).
	SessionID string `json:"sessionId,omitzero"`
	// Pid is the process id of the session's leader: the shell on this
	// machine, bwrap in the sandbox, the shell's pid on the node for node
	// sessions.
	Pid int `json:"pid,omitzero"`
	// StartedAt is the start time in Unix epoch milliseconds.
	StartedAt int64 `json:"startedAt,omitzero"`
	// Cwd is the working directory the command ran in.
	Cwd string `json:"cwd,omitzero"`
	// Tail is the last ≤2000 characters of output (running exec results).
	Tail string `json:"tail,omitzero"`
	// ExitCode is the exit code, nil when none exists. On a completed or
	// failed exec result it is always encoded, as null when nil.
	ExitCode *int `json:"exitCode,omitzero"`
	// ExitSignal is the name of the signal that ended the process
	// ("SIGKILL"). Every result about an ended session carries it in its
	// JSON, as null when no signal ended the process.
	ExitSignal string `json:"exitSignal,omitzero"`
	// ExitReason says how the session ended.
	ExitReason ExitReason `json:"exitReason,omitzero"`
	// DurationMs is the run time in milliseconds (finished exec results).
	DurationMs *int64 `json:"durationMs,omitzero"`
	// Aggregated is output. On a completed or failed exec result it is the
	// output part of the model text: the trimmed output, plus the
	// "\n\n(Command exited with code N)" suffix when the text shows it; it is
	// always encoded there, as "" when empty. On a poll result it is the
	// retained output (up to MaxOutputChars characters).
	Aggregated string `json:"aggregated,omitzero"`
	// TimedOut reports whether the timeout ended the run (failed exec results).
	TimedOut *bool `json:"timedOut,omitzero"`
	// Name is the derived "verb target" name of the command.
	Name string `json:"name,omitzero"`
	// RetryInMs suggests when to poll a running session again, in
	// milliseconds (poll): 5000 after a poll with output, then 10000, 30000
	// and 60000 for the empty polls after it; a session never polled with
	// output starts at 5000.
	RetryInMs *int64 `json:"retryInMs,omitzero"`
	// TotalLines counts every line the session printed, dropped ones
	// included (log); TotalChars is the retained output's length in code
	// points.
	TotalLines *int   `json:"totalLines,omitzero"`
	TotalChars *int64 `json:"totalChars,omitzero"`
	// FirstLine is the number of the oldest retained line, when the
	// retention cap dropped older ones (log). Line numbers count from the
	// first line the session ever printed, so an offset names the same
	// line however much is dropped later.
	FirstLine *int64 `json:"firstLine,omitzero"`
	// Truncated reports whether output was discarded at the retention cap.
	Truncated *bool `json:"truncated,omitzero"`
	// Sessions is the scope's session list (list).
	Sessions []SessionInfo `json:"sessions,omitzero"`
	// Matched is the output line that satisfied a wait pattern.
	Matched string `json:"matched,omitzero"`
	// Port is the TCP port a wait found accepting.
	Port int `json:"port,omitzero"`
	// Condition says what ended a wait: "pattern", "port", "idle", "exit"
	// or "timeout".
	Condition string `json:"condition,omitzero"`
	// Resources is what a running session uses now (poll).
	Resources *Resources `json:"resources,omitzero"`

	// StdinWritable reports whether the session takes input now (poll
	// and log of a running session).
	StdinWritable *bool `json:"stdinWritable,omitzero"`
	// WaitingForInput reports that the session printed nothing for
	// Config.InputWaitIdleMs and its foreground process is blocked reading
	// its stdin or terminal (poll and log of a running session).
	WaitingForInput *bool `json:"waitingForInput,omitzero"`
	// IdleMs is how long the session has printed nothing, in milliseconds
	// (poll and log of a running session).
	IdleMs *int64 `json:"idleMs,omitzero"`
	// LastOutputAt is when the session last printed, in Unix epoch
	// milliseconds; its start before any output (poll and log of a running
	// session).
	LastOutputAt *int64 `json:"lastOutputAt,omitzero"`
	// ApprovalID names a pending approval (exec with status
	// "approval-pending"); pass it to [Scope.Decide].
	ApprovalID string `json:"approvalId,omitzero"`
	// ExpiresAtMs is when the pending approval expires as a denial, in
	// Unix epoch milliseconds.
	ExpiresAtMs int64 `json:"expiresAtMs,omitzero"`
	// AllowedDecisions lists the decisions a pending approval takes:
	// "allow-once", "allow-always", "deny".
	AllowedDecisions []string `json:"allowedDecisions,omitzero"`

	// Cols and Rows are the terminal's size (screen).
	Cols int `json:"cols,omitzero"`
	Rows int `json:"rows,omitzero"`
	// CursorRow and CursorCol are the cursor's position, 1-based (screen).
	CursorRow int `json:"cursorRow,omitzero"`
	CursorCol int `json:"cursorCol,omitzero"`
	// AlternateScreen reports whether the program switched to the alternate
	// screen, as full-screen programs do (screen; nil elsewhere).
	AlternateScreen *bool `json:"alternateScreen,omitzero"`
	// Title is, on exec and poll results, the title exec was given (nil
	// when none); on screen results, the window title the program set (""
	// when none).
	Title *string `json:"title,omitzero"`
	// Error is the reason a process result failed, as its text says it
	// (every process result with status "failed"; "" elsewhere).
	Error string `json:"error,omitzero"`
	// FollowUp lists the process actions that apply to a running session,
	// as the running text's follow-up line names them (running exec results).
	FollowUp []string `json:"followUp,omitzero"`

	// Agent-shell additions (see the package documentation's "Shell
	// conveniences").

	// Stdout and Stderr are each stream's retained output, cleaned like
	// the merged text and capped alike, when exec was given streams
	// "split" (finished exec results and poll; nil elsewhere).
	Stdout *string `json:"stdout,omitzero"`
	Stderr *string `json:"stderr,omitzero"`
	// NotCarried lists the variables a finished exec's command changed
	// that the environment rules keep from carrying to the scope's next
	// exec (Config.KeepShellState); its text ends with a note naming them.
	NotCarried []string `json:"notCarried,omitzero"`
	// OutputFile is the spill file that holds the session's whole output
	// (Config.SpillDir), named on exec, poll, wait and log results whose
	// text was cut; "" elsewhere, and when the file could not be created.
	// On those results OutputFileTruncated reports whether the file
	// stopped growing before the output did (true, with OutputFile "",
	// when it could not be created), and OutputFileIncomplete says why:
	// a quota, or the error creating or writing it met. Both are unset
	// on every other result.
	OutputFile           string `json:"outputFile,omitzero"`
	OutputFileTruncated  *bool  `json:"outputFileTruncated,omitzero"`
	OutputFileIncomplete string `json:"outputFileIncomplete,omitzero"`

	// execEnd marks a completed or failed exec result, whose JSON always
	// carries exitCode and aggregated.
	execEnd bool
	// ended marks a result about an ended session, whose JSON always
	// carries exitSignal.
	ended bool
}

// MarshalJSON encodes d with its JSON field names, omitting fields that do
// not apply, except that a completed or failed exec result always has
// "exitCode" (null when nil) and "aggregated", and a result about an ended
// session always has "exitSignal" (null when no signal ended it).
func (d Details) MarshalJSON() ([]byte, error) {
	type fields Details // the same fields without this method
	var signal *string  // null when the session ended without one
	if d.ExitSignal != "" {
		signal = &d.ExitSignal
	}
	// The outer fields shadow the embedded ones of the same JSON name.
	switch {
	case d.execEnd:
		return json.Marshal(struct {
			fields
			ExitCode   *int    `json:"exitCode"`
			ExitSignal *string `json:"exitSignal"`
			Aggregated string  `json:"aggregated"`
		}{fields(d), d.ExitCode, signal, d.Aggregated})
	case d.ended:
		return json.Marshal(struct {
			fields
			ExitSignal *string `json:"exitSignal"`
		}{fields(d), signal})
	}
	return json.Marshal(fields(d))
}

// SessionInfo is one entry of the list action.
//
// A SessionInfo is a plain value with no internal locking: it is safe to read
// from several goroutines, but not to change while another reads it.
type SessionInfo struct {
	// SessionID is the whole session id, as process actions take it.
	SessionID string `json:"sessionId"`
	// Status is "running", "completed" or "failed".
	Status Status `json:"status"`
	// Pid is the session's first process: the shell on this machine,
	// bwrap in the sandbox, the shell's pid on the node for node sessions.
	Pid int `json:"pid"`
	// StartedAt is when the session started, in Unix epoch milliseconds.
	StartedAt int64 `json:"startedAt"`
	// EndedAt is when it ended, in Unix epoch milliseconds; 0 (absent)
	// while it runs.
	EndedAt int64 `json:"endedAt,omitzero"`
	// RuntimeMs is how long it ran, or has run so far, in milliseconds.
	RuntimeMs int64 `json:"runtimeMs"`
	// Cwd is the working directory the command started in.
	Cwd string `json:"cwd"`
	// Command is the command line as exec was given it.
	Command string `json:"command"`
	// Name is the short name derived from the command (its verb and at
	// most 48 characters of its target), as the list line shows it.
	Name string `json:"name"`
	// Tail is the last 2000 characters of the retained output, cleaned.
	Tail string `json:"tail"`
	// Truncated reports whether output was discarded at the retention cap.
	Truncated bool `json:"truncated"`
	// ExitCode is a finished session's exit code; nil while it runs or
	// when a signal ended it.
	ExitCode *int `json:"exitCode,omitzero"`
	// ExitSignal names the signal that ended a finished session; its JSON
	// is null for a finished session no signal ended, absent for a running one.
	ExitSignal string `json:"exitSignal,omitzero"`
	// Title is the title exec was given, "" when none.
	Title string `json:"title,omitzero"`
	// Resources is what the session uses now; running sessions only.
	Resources *Resources `json:"resources,omitzero"`
}

// MarshalJSON encodes i with its JSON field names; a finished session
// (EndedAt set) always has "exitSignal", null when no signal ended it.
func (i SessionInfo) MarshalJSON() ([]byte, error) {
	type fields SessionInfo // the same fields without this method
	if i.EndedAt == 0 {
		return json.Marshal(fields(i))
	}
	var signal *string
	if i.ExitSignal != "" {
		signal = &i.ExitSignal
	}
	return json.Marshal(struct {
		fields
		ExitSignal *string `json:"exitSignal"`
	}{fields(i), signal})
}

func textResult(text string, d Details) *Result {
	return &Result{Content: []Content{{Type: "text", Text: text}}, Details: d}
}

// failure is a tool-level failure result: the call failed.
func failure(text string) *Result {
	r := textResult(text, Details{Status: StatusFailed, Error: text})
	r.IsError = true
	return r
}

// execFailure is a failure result of the exec tool that ran nothing (a
// refused or invalid call): exitCode null and aggregated "" in its JSON.
func execFailure(text string) *Result {
	r := textResult(text, Details{Status: StatusFailed, execEnd: true})
	r.IsError = true
	return r
}

func ptr[T any](v T) *T { return &v }

// withWarnings prepends warning lines and a blank line.
func withWarnings(warnings []string, text string) string {
	if len(warnings) == 0 {
		return text
	}
	return strings.Join(warnings, "\n") + "\n\n" + text
}
