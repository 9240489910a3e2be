package bgexec

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bgexec/bgexec/internal/keys"
	"github.com/bgexec/bgexec/internal/session"
)

// sendKeys is the send-keys action: literal bytes, then hex bytes, then key
// tokens, written at once.
func (sc *Scope) sendKeys(ctx context.Context, s *session.Session, req *ProcessRequest) (*Result, error) {
	if r := inputCheck(s); r != nil {
		return r, nil
	}
	mode := s.Snapshot(0).CursorMode
	data, warnings, err := keys.Encode(keys.Input{Literal: req.Literal, Hex: req.Hex, Keys: req.Keys}, mode)
	if errors.Is(err, keys.ErrCursorModeUnknown) {
		return failure(fmt.Sprintf("Session %s cursor key mode is not known yet. Poll or log until startup output appears, then retry send-keys.", s.ID())), nil
	}
	if err != nil {
		return failure(err.Error()), nil
	}
	if len(data) == 0 {
		return failure(withWarningList("No key data provided.", warnings)), nil
	}
	n, r := sc.deliver(ctx, s, "send-keys", data)
	if r != nil {
		return r, nil
	}
	text := withWarningList(fmt.Sprintf("Sent %d bytes to session %s.", n, s.ID()), warnings)
	return textResult(text, Details{Status: StatusRunning, SessionID: s.ID()}), nil
}

// withWarningList appends "\nWarnings:\n- …" lines.
func withWarningList(text string, warnings []string) string {
	if len(warnings) == 0 {
		return text
	}
	return text + "\nWarnings:\n- " + strings.Join(warnings, "\n- ")
}
