package main

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/bgexec/bgexec"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dropCancelled wraps a transport so that a request the client cancelled
// (notifications/cancelled) gets no response, as MCP asks: the SDK cancels
// the handler's context but still writes what the handler returns. Only
// requests still in flight are remembered, so the set stays as small as
// the number of concurrent calls.
//
// A tools/call response that is not written, because the request was
// cancelled after its handler returned or because writing it failed, is
// handed to lost with its request id, so that what the result took (a
// poll's output, an exit report, notices) comes again in the next one.
// To let the handler name its request, Read marks each tools/call's
// params with the request id under deliveryMetaKey, overwriting any value
// the client put there.
type dropCancelled struct {
	t mcp.Transport
	// lost, if set, is called for each tools/call response not written.
	lost func(id jsonrpc.ID)
	// done, if set, is called for each tools/call response written.
	done func(id jsonrpc.ID)
}

// deliveryMetaKey is the _meta key under which Read passes a tools/call's
// request id to its handler.
const deliveryMetaKey = "io.bgexec/requestId"

// Connect implements mcp.Transport.
func (d *dropCancelled) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := d.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &cancelFilter{Connection: c, inFlight: make(map[jsonrpc.ID]bool), tools: make(map[jsonrpc.ID]bool), lost: d.lost, done: d.done}, nil
}

type cancelFilter struct {
	mcp.Connection
	lost, done func(id jsonrpc.ID)
	mu         sync.Mutex
	inFlight   map[jsonrpc.ID]bool // incoming calls not answered yet → cancelled
	tools      map[jsonrpc.ID]bool // the tools/call ones among them
}

func (c *cancelFilter) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		c.mu.Lock()
		switch {
		case req.IsCall():
			c.inFlight[req.ID] = false
			if req.Method == "tools/call" {
				c.tools[req.ID] = true
				req.Params = markRequest(req.Params, req.ID)
			}
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
		cancelled, tool := c.inFlight[resp.ID], c.tools[resp.ID]
		delete(c.inFlight, resp.ID)
		delete(c.tools, resp.ID)
		c.mu.Unlock()
		if cancelled {
			if tool && c.lost != nil {
				c.lost(resp.ID)
			}
			return nil
		}
		err := c.Connection.Write(ctx, msg)
		switch {
		case !tool:
		case err != nil && c.lost != nil:
			c.lost(resp.ID)
		case err == nil && c.done != nil:
			c.done(resp.ID)
		}
		return err
	}
	return c.Connection.Write(ctx, msg)
}

// markRequest returns the params of a tools/call with _meta[deliveryMetaKey]
// set to id; params that are not a JSON object come back unchanged (the
// SDK refuses them).
func markRequest(params json.RawMessage, id jsonrpc.ID) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return params
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := p["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return params
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	idJSON, err := json.Marshal(id.Raw())
	if err != nil {
		return params
	}
	meta[deliveryMetaKey] = idJSON
	if p["_meta"], err = json.Marshal(meta); err != nil {
		return params
	}
	out, err := json.Marshal(p)
	if err != nil {
		return params
	}
	return out
}

// requestOf returns the request id Read marked a tool call's params with.
func requestOf(meta mcp.Meta) (jsonrpc.ID, bool) {
	v, ok := meta[deliveryMetaKey]
	if !ok {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil && id.IsValid()
}

// resultBook holds the result of each tool call whose response is not
// written yet, by request id, for the stdio connection's dropCancelled.
// Safe for concurrent use.
type resultBook struct {
	sc      *bgexec.Scope
	mu      sync.Mutex
	results map[jsonrpc.ID]*bgexec.Result
}

// put records the result of the call of request id.
func (b *resultBook) put(id jsonrpc.ID, res *bgexec.Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.results == nil {
		b.results = make(map[jsonrpc.ID]*bgexec.Result)
	}
	b.results[id] = res
}

func (b *resultBook) take(id jsonrpc.ID) *bgexec.Result {
	b.mu.Lock()
	defer b.mu.Unlock()
	res := b.results[id]
	delete(b.results, id)
	return res
}

// delivered forgets the result of request id: its response was written.
func (b *resultBook) delivered(id jsonrpc.ID) { b.take(id) }

// lost gives the result of request id back to the scope: its response
// was not written.
func (b *resultBook) lost(id jsonrpc.ID) {
	if res := b.take(id); res != nil {
		_ = b.sc.Undelivered(context.Background(), res) // never fails
	}
}
