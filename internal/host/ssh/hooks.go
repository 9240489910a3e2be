package sshhost

import (
	"time"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/bgexec/bgexec/internal/session"
	"golang.org/x/crypto/ssh"
)

// Hooks for package bgexec's tests, which drive a real sshd through the
// Registry and so cannot reach this package's internals through an
// export_test.go. Nothing else calls them.

// SetProcRoot makes the pool read the procfs of node at dir instead of
// /proc (a test points it at a directory with no procfs). Safe for
// concurrent use; reads already under way keep the old root.
func (p *Pool) SetProcRoot(node, dir string) {
	if nc := p.nodes[node]; nc != nil {
		nc.procDir.Store(&dir)
	}
}

// Client returns the node's live SSH client, dialing one when there is
// none (a benchmark's baseline of a plain SSH session).
func (p *Pool) Client(node string) (*ssh.Client, error) {
	nc := p.nodes[node]
	if nc == nil {
		return nil, &Error{Node: node, Text: "unknown node " + node}
	}
	c, err := p.conn(nc)
	if err != nil {
		return nil, err
	}
	return c.client, nil
}

// ResourceView is the resource view of a node's process as
// [host.UsageReader] would return it (fresh as there), and when it was
// read; ok is false when proc is not a node's process.
func ResourceView(proc session.Process, fresh bool) (view *host.Usage, at time.Time, ok bool) {
	rp, ok := proc.(*remoteProcess)
	if !ok {
		return nil, time.Time{}, false
	}
	view, at = rp.conn.resourcesOf(rp, fresh)
	return view, at, true
}
