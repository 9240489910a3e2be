package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport is newline-delimited JSON-RPC over in and out, like
// mcp.StdioTransport, but a line that is not a JSON-RPC message gets a
// JSON-RPC error response (id null) and is skipped. The SDK's reader ends
// the connection at the first such line, which would cost the client its
// sessions.
type lineTransport struct {
	in  io.Reader
	out io.Writer
	// maxLine bounds one line in bytes; a longer one is discarded.
	maxLine int
}

// Connect implements mcp.Transport. It starts a goroutine that reads in
// until EOF or until the connection stops taking messages; a blocking read
// of stdin cannot be interrupted, so it may outlive the connection until
// the next line arrives or the process exits.
func (t *lineTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, pw := io.Pipe()
	out := &lockedWriter{w: t.out}
	go func() {
		pw.CloseWithError(filterLines(t.in, pw, out, t.maxLine))
	}()
	return (&mcp.IOTransport{Reader: pr, Writer: out, MaxLineLength: t.maxLine + 1}).Connect(ctx)
}

// filterLines copies each JSON-RPC message line of in to msgs and answers
// every other non-blank line on replies. It returns nil at EOF.
func filterLines(in io.Reader, msgs io.Writer, replies io.Writer, maxLine int) error {
	r := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxLine {
				tooLong, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		var reply []byte
		switch {
		case tooLong:
			reply = errorLine(jsonrpc.CodeParseError, fmt.Sprintf("Parse error: message longer than %d bytes", maxLine))
		default:
			reply = checkMessage(bytes.TrimSpace(line))
		}
		if reply != nil {
			if _, werr := replies.Write(reply); werr != nil {
				return werr
			}
		} else if len(bytes.TrimSpace(line)) > 0 {
			if _, werr := msgs.Write(append(bytes.TrimSpace(line), '\n')); werr != nil {
				return werr
			}
		}
		if err != nil { // io.EOF
			return nil
		}
		line, tooLong = line[:0], false
	}
}

// checkMessage returns the error response for a line the SDK would refuse,
// or nil when the line is blank or a message (or batch) it accepts.
func checkMessage(line []byte) []byte {
	if len(line) == 0 {
		return nil
	}
	if !json.Valid(line) {
		return errorLine(jsonrpc.CodeParseError, "Parse error: the line is not valid JSON")
	}
	var batch []json.RawMessage
	if line[0] == '[' && json.Unmarshal(line, &batch) == nil {
		if len(batch) == 0 {
			return errorLine(jsonrpc.CodeInvalidRequest, "Invalid Request: empty batch")
		}
		for _, m := range batch {
			if _, err := jsonrpc.DecodeMessage(m); err != nil {
				return errorLine(jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error())
			}
		}
		return nil
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return errorLine(jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error())
	}
	return nil
}

// errorLine is a JSON-RPC error response without an id, newline-terminated.
func errorLine(code int64, msg string) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: jsonrpc.Error{Code: code, Message: msg}})
	return append(b, '\n')
}

// lockedWriter serializes writes so that our error lines and the SDK's
// messages (each one Write call) never interleave. Close is a no-op: the
// underlying writer (stdout) belongs to the process.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (*lockedWriter) Close() error { return nil }
