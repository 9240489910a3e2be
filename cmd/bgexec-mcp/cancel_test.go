package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/bgexec/bgexec"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptedConn is a transport connection that reads the given messages
// and records what is written, failing writes with writeErr.
type scriptedConn struct {
	msgs     []jsonrpc.Message
	writeErr error
	written  []jsonrpc.Message
}

func (s *scriptedConn) Connect(context.Context) (mcp.Connection, error) { return s, nil }

func (s *scriptedConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(s.msgs) == 0 {
		return nil, errors.New("no more messages")
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

func (s *scriptedConn) Write(_ context.Context, m jsonrpc.Message) error {
	if s.writeErr != nil {
		return s.writeErr
	}
	s.written = append(s.written, m)
	return nil
}

func (s *scriptedConn) Close() error      { return nil }
func (s *scriptedConn) SessionID() string { return "" }

// TestUndeliveredResultsComeAgain covers the path the SDK leaves to the
// server: a poll's handler has returned its result, and then the request
// is cancelled before the response is written, or writing it fails. The
// output the poll drained comes again from the next poll; a written
// response's output does not.
func TestUndeliveredResultsComeAgain(t *testing.T) {
	c, err := newConn(&options{logger: discardLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = closeRegistry(c.reg) })
	c.results = &resultBook{sc: c.sc}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()

	for i, tc := range []struct {
		name       string
		cancelled  bool
		writeErr   error
		comesAgain bool
	}{
		{name: "cancelled after its handler returned", cancelled: true, comesAgain: true},
		{name: "writing the response failed", writeErr: errors.New("broken pipe"), comesAgain: true},
		{name: "written", comesAgain: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := fmt.Sprintf("LOST-OUTPUT-%d", i)
			started, err := c.sc.Exec(ctx, &bgexec.ExecRequest{Command: "echo " + marker + "; exec sleep 30", Background: true})
			require.NoError(t, err)
			session := started.Details.SessionID
			t.Cleanup(func() {
				_, _ = c.sc.Process(context.Background(), &bgexec.ProcessRequest{Action: "kill", SessionID: session})
			})

			reqID, err := jsonrpc.MakeID(float64(40 + i))
			require.NoError(t, err)
			// The client's own value under our key is overwritten.
			params := fmt.Sprintf(`{"name":"process","arguments":{"action":"poll","sessionId":%q,"timeout":10000},"_meta":{%q:"forged","progressToken":"p"}}`, session, deliveryMetaKey)
			script := &scriptedConn{msgs: []jsonrpc.Message{&jsonrpc.Request{ID: reqID, Method: "tools/call", Params: json.RawMessage(params)}}, writeErr: tc.writeErr}
			if tc.cancelled {
				script.msgs = append(script.msgs, &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(fmt.Sprintf(`{"requestId":%d}`, 40+i))})
			}
			tr := &dropCancelled{t: script, lost: c.results.lost, done: c.results.delivered}
			conn, err := tr.Connect(ctx)
			require.NoError(t, err)
			msg, err := conn.Read(ctx)
			require.NoError(t, err)
			call := msg.(*jsonrpc.Request)
			var p mcp.CallToolParamsRaw
			require.NoError(t, json.Unmarshal(call.Params, &p))
			assert.Equal(t, "p", p.Meta["progressToken"], "the client's other _meta keys stay")

			// The handler runs and returns while the request is still live.
			res, err := c.callTool(ctx, "process", &mcp.CallToolRequest{Params: &p})
			require.NoError(t, err)
			assert.Contains(t, textOf(t, res), marker)
			if tc.cancelled {
				_, err = conn.Read(ctx) // notifications/cancelled arrives now
				require.NoError(t, err)
			}
			body, err := json.Marshal(res)
			require.NoError(t, err)
			werr := conn.Write(ctx, &jsonrpc.Response{ID: reqID, Result: body})
			assert.Equal(t, tc.writeErr, werr)
			if tc.cancelled {
				assert.Empty(t, script.written, "a cancelled request gets no response")
			}

			again, err := c.sc.Process(ctx, &bgexec.ProcessRequest{Action: "poll", SessionID: session})
			require.NoError(t, err)
			if tc.comesAgain {
				assert.Contains(t, again.Text(), marker, "the output of the result that never arrived comes again")
			} else {
				assert.NotContains(t, again.Text(), marker, "delivered output is not repeated")
			}
		})
	}
}
