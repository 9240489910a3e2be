package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rootsTimeout bounds the roots/list request an exec call may make.
const rootsTimeout = 5 * time.Second

// rootDir is the default workdir the client's roots give: the path of the
// first file:// root. It is asked for at the first exec call and again
// after notifications/roots/list_changed. The zero value is ready to use.
//
// MCP deprecates roots as of revision 2026-07-28 and advises passing paths
// through tool parameters or configuration: exec's workdir parameter and
// the -workdir key are those, and with -workdir set the roots are not
// asked for. Without it the first root is still the best default hosts
// give (the project they opened), so it stays for the revisions offered.
type rootDir struct {
	mu    sync.Mutex
	known bool
	dir   string
}

func (r *rootDir) invalidate() {
	r.mu.Lock()
	r.known = false
	r.mu.Unlock()
}

// get returns the workdir of the first root, or "" when the client offers
// no roots (or the request fails: the call then runs in the server's
// default workdir, and the next exec asks again).
func (r *rootDir) get(ctx context.Context, ss *mcp.ServerSession) string {
	r.mu.Lock()
	if r.known {
		defer r.mu.Unlock()
		return r.dir
	}
	r.mu.Unlock()
	if ss == nil {
		return ""
	}
	p := ss.InitializeParams()
	//lint:ignore SA1019 roots are deprecated as of revision 2026-07-28 (not offered here); kept as the default workdir where no -workdir is configured, see rootDir.
	if p == nil || p.Capabilities == nil || p.Capabilities.RootsV2 == nil {
		r.set("")
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, rootsTimeout)
	defer cancel()
	//lint:ignore SA1019 see above: the client's root is the project a host opened, which no other request tells.
	res, err := ss.ListRoots(ctx, nil)
	if err != nil {
		return ""
	}
	dir := ""
	for _, root := range res.Roots {
		if u, err := url.Parse(root.URI); err == nil && u.Scheme == "file" && u.Path != "" {
			dir = u.Path
			break
		}
	}
	r.set(dir)
	return dir
}

func (r *rootDir) set(dir string) {
	r.mu.Lock()
	r.known, r.dir = true, dir
	r.mu.Unlock()
}

// withWorkdir adds "workdir": dir to exec arguments that name none. Other
// arguments, and arguments that are not a JSON object, are returned as
// they are (the tool reports what is wrong with them).
func withWorkdir(args []byte, dir string) []byte {
	if dir == "" {
		return args
	}
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	var probe struct {
		Workdir *json.RawMessage `json:"workdir"`
	}
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &probe) != nil || probe.Workdir != nil {
		return args
	}
	field, _ := json.Marshal(dir) // a string always encodes
	rest := bytes.TrimSpace(trimmed[1:])
	out := make([]byte, 0, len(trimmed)+len(field)+16)
	out = append(out, `{"workdir":`...)
	out = append(out, field...)
	if rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}
