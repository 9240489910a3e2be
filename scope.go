package bgexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Scope is one agent's view of a Registry: it sees only the sessions it
// started (exact key match); another scope's session behaves exactly like
// an unknown one. A Scope is safe for concurrent use.
type Scope struct {
	reg *Registry
	key string
}

// Key returns the scope's key.
func (sc *Scope) Key() string { return sc.key }

// Call runs a tool by name ("exec" or "process") with JSON arguments, for
// tool frameworks that hand over raw arguments. Arguments are first
// validated against the tool's JSON Schema ([ToolDefinitions]): a violation
// (wrong type, unknown field, value out of range) is a failure result that
// names the field, so the model can correct itself. An unknown process
// action is not a violation: the process tool answers it with its
// "Unknown action …" text, as [Scope.Process] does. Malformed JSON and an
// unknown tool name are Go errors.
//
// Keys the schema does not define are ignored, as the reference tools do:
// the call runs, and its text starts with the line
// "Warning: ignored unknown parameter(s): a, b." Keys match exactly
// ("Command" is unknown, never "command"). A key given twice in one JSON
// object, at any depth (env included), is a failure result and nothing
// runs: the model, an approval prompt and the tool must all read the same
// command.
func (sc *Scope) Call(ctx context.Context, tool string, args json.RawMessage) (res *Result, err error) {
	var unknown []string
	defer func() {
		res = sc.withNotices(res)
		if len(unknown) > 0 {
			withFirstLine(res, unknownParamsWarning(unknown))
		}
		sc.giveBackIfCancelled(ctx, res)
	}()
	args, unknown, dupText := prepareArgs(tool, args)
	if dupText != "" {
		if tool == ToolExec {
			return execFailure(dupText), nil
		}
		return failure(dupText), nil
	}
	if text := validateToolArgs(tool, args); text != "" {
		if tool == ToolExec {
			return execFailure(text), nil
		}
		return failure(text), nil
	}
	switch tool {
	case "exec":
		var req ExecRequest
		if err := decodeArgs(args, &req); err != nil {
			return nil, fmt.Errorf("bgexec: exec arguments: %w", err)
		}
		return sc.Exec(ctx, &req)
	case "process":
		var req ProcessRequest
		if err := decodeArgs(args, &req); err != nil {
			return nil, fmt.Errorf("bgexec: process arguments: %w", err)
		}
		return sc.Process(ctx, &req)
	default:
		return nil, fmt.Errorf("bgexec: unknown tool %q (want exec or process)", tool)
	}
}

// begin checks what every tool call needs before it can be made.
func (sc *Scope) begin(ctx context.Context, tool string, nilReq bool) error {
	if ctx == nil {
		panic("bgexec: " + tool + " with nil context")
	}
	if nilReq {
		return errors.New("bgexec: " + tool + ": nil request")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bgexec: %s: %w", tool, err)
	}
	if sc.reg.isClosed() {
		return ErrClosed
	}
	return nil
}

func decodeArgs(args json.RawMessage, v any) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("field %q: expected %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the arguments object")
	}
	return nil
}

// Number is a JSON number that also accepts a numeric string ("5000"), as
// process timeouts do.
//
// A Number is an immutable value, safe for concurrent use.
type Number float64

// UnmarshalJSON accepts 5000, 5000.5 and "5000".
func (n *Number) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, `"`) {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		s = strings.TrimSpace(str)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("not a number: %s", b)
	}
	*n = Number(v)
	return nil
}
