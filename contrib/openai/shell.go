package openai

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/bgexec/bgexec"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"golang.org/x/sys/unix"
)

// NotRunExitCode is the exit code [Shell] reports for a command that did
// not run: bgexec refused it, it could not start, or it awaits approval.
// Its stderr is then bgexec's text, which says why.
const NotRunExitCode = 126

// LostExitCode is the exit code [Shell] reports for a command that ended
// with neither an exit code nor a signal bgexec could name (for example
// when the connection to its node dropped).
const LostExitCode = 255

// waitChunk bounds one process wait while Shell waits for a command's end.
const waitChunk = 600000 // milliseconds, the wait action's maximum

// Shell runs the commands of a Responses API shell_call in sc, one after
// another, and returns the shell_call_output item that answers it, with
// one output entry per command:
//
//   - Each command is one exec with split streams. The call's timeout_ms,
//     when positive, is the exec's timeout (in the foreground and in the
//     background); without one the scope's default timeout applies
//     (Config.TimeoutSec, 1800 seconds unless configured). A command
//     still running after exec's yield window is waited for with process
//     wait until it ends, and then removed from the scope's session list.
//   - stdout and stderr are each stream's retained output, as bgexec
//     cleans and caps it. With a positive max_output_length each keeps at
//     most that many characters, from its end, and the item echoes the
//     limit.
//   - The outcome is "timeout" when the timeout ended the command; else
//     an exit with the command's exit code, 128+N for a command ended by
//     signal N, or [LostExitCode] when neither is known.
//   - A command that did not run (refused by policy, a workdir or an
//     environment rule, failed to start, or awaiting approval) has empty
//     stdout, bgexec's text as stderr, and exit code [NotRunExitCode]; the
//     commands after it still run.
//
// A Go error means the call could not be made: the registry was closed,
// or ctx ended, in which case the command that was running is killed and
// no output item is returned.
func Shell(ctx context.Context, sc *bgexec.Scope, call responses.ResponseFunctionShellToolCall) (responses.ResponseInputItemUnionParam, error) {
	if sc == nil {
		panic("openai: Shell with nil scope")
	}
	limit := call.Action.MaxOutputLength
	out := make([]responses.ResponseFunctionShellCallOutputContentParam, 0, len(call.Action.Commands))
	for _, command := range call.Action.Commands {
		res, err := runShellCommand(ctx, sc, command, call.Action.TimeoutMs)
		if err != nil {
			return responses.ResponseInputItemUnionParam{}, err
		}
		entry := shellOutput(res)
		if limit > 0 {
			entry.Stdout, entry.Stderr = lastChars(entry.Stdout, limit), lastChars(entry.Stderr, limit)
		}
		out = append(out, entry)
	}
	item := responses.ResponseInputItemParamOfShellCallOutput(call.CallID, out)
	if limit > 0 {
		item.OfShellCallOutput.MaxOutputLength = sdk.Int(limit)
	}
	return item, nil
}

// runShellCommand runs command to its end and returns its last result.
func runShellCommand(ctx context.Context, sc *bgexec.Scope, command string, timeoutMs int64) (*bgexec.Result, error) {
	req := &bgexec.ExecRequest{Command: command, Streams: "split", YieldMs: ptr(float64(bgexec.MaxYieldMs))}
	if timeoutMs > 0 {
		req.TimeoutSeconds = ptr(float64(timeoutMs) / 1000)
	}
	res, err := sc.Exec(ctx, req)
	if err != nil || res.Details.Status != bgexec.StatusRunning {
		return res, err
	}
	// The command moved to the background: wait for its end, then take its
	// streams and exit from a poll, and forget the session.
	id := res.Details.SessionID
	defer func() {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = sc.Process(stop, &bgexec.ProcessRequest{Action: "kill", SessionID: id})
		_, _ = sc.Process(stop, &bgexec.ProcessRequest{Action: "remove", SessionID: id})
	}()
	for res.Details.Status == bgexec.StatusRunning {
		if _, err := sc.Process(ctx, &bgexec.ProcessRequest{Action: "wait", SessionID: id, Timeout: ptr(bgexec.Number(waitChunk))}); err != nil {
			return nil, err
		}
		if res, err = sc.Process(ctx, &bgexec.ProcessRequest{Action: "poll", SessionID: id}); err != nil {
			return nil, err
		}
		if res.IsError { // the session is gone: say so as a command that did not run
			return res, nil
		}
	}
	return res, nil
}

// shellOutput maps one command's result to its output entry.
func shellOutput(res *bgexec.Result) responses.ResponseFunctionShellCallOutputContentParam {
	d := res.Details
	ran := !res.IsError && (d.Status == bgexec.StatusCompleted || d.Status == bgexec.StatusFailed)
	if !ran {
		return responses.ResponseFunctionShellCallOutputContentParam{
			Stderr:  res.Text(),
			Outcome: exitOutcome(NotRunExitCode),
		}
	}
	var entry responses.ResponseFunctionShellCallOutputContentParam
	if d.Stdout != nil && d.Stderr != nil {
		entry.Stdout, entry.Stderr = *d.Stdout, *d.Stderr
	} else {
		entry.Stdout = d.Aggregated // a result without split streams: all of it is output
	}
	switch {
	case d.ExitReason == bgexec.ExitReasonTimeout:
		timeout := responses.NewResponseFunctionShellCallOutputContentOutcomeTimeoutParam()
		entry.Outcome = responses.ResponseFunctionShellCallOutputContentOutcomeUnionParam{OfTimeout: &timeout}
	case d.ExitCode != nil:
		entry.Outcome = exitOutcome(int64(*d.ExitCode))
	case d.ExitSignal != "" && unix.SignalNum(d.ExitSignal) != 0:
		entry.Outcome = exitOutcome(128 + int64(unix.SignalNum(d.ExitSignal)))
	default:
		entry.Outcome = exitOutcome(LostExitCode)
	}
	return entry
}

func exitOutcome(code int64) responses.ResponseFunctionShellCallOutputContentOutcomeUnionParam {
	return responses.ResponseFunctionShellCallOutputContentOutcomeUnionParam{
		OfExit: &responses.ResponseFunctionShellCallOutputContentOutcomeExitParam{ExitCode: code},
	}
}

// lastChars returns the last n characters of s.
func lastChars(s string, n int64) string {
	if int64(utf8.RuneCountInString(s)) <= n {
		return s
	}
	cut := len(s)
	for i := int64(0); i < n; i++ {
		_, size := utf8.DecodeLastRuneInString(s[:cut])
		cut -= size
	}
	return s[cut:]
}

func ptr[T any](v T) *T { return &v }
