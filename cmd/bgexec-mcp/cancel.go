package main

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dropCancelled wraps a transport so that a request the client cancelled
// (notifications/cancelled) gets no response, as MCP asks: the SDK cancels
// the handler's context but still writes what the handler returns. Only
// requests still in flight are remembered, so the set stays as small as
// the number of concurrent calls.
type dropCancelled struct {
	t mcp.Transport
}

// Connect implements mcp.Transport.
func (d *dropCancelled) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := d.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &cancelFilter{Connection: c, inFlight: make(map[jsonrpc.ID]bool)}, nil
}

type cancelFilter struct {
	mcp.Connection
	mu       sync.Mutex
	inFlight map[jsonrpc.ID]bool // incoming calls not answered yet → cancelled
}

func (c *cancelFilter) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		c.mu.Lock()
		switch {
		case req.IsCall():
			c.inFlight[req.ID] = false
		case req.Method == "notifications/cancelled":
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
					if _, ok := c.inFlight[id]; ok {
						c.inFlight[id] = true
					}
				}
			}
		}
		c.mu.Unlock()
	}
	return msg, err
}

func (c *cancelFilter) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		cancelled := c.inFlight[resp.ID]
		delete(c.inFlight, resp.ID)
		c.mu.Unlock()
		if cancelled {
			return nil
		}
	}
	return c.Connection.Write(ctx, msg)
}
