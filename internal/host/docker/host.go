package dockerhost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/bgexec/bgexec/internal/host"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("docker host: closed")

// Label marks every container a [Host] makes; its value is the host's
// own random id, so Close finds exactly its containers.
const Label = "io.github.bgexec.host"

// Host runs each command in a container of its own on one Docker daemon:
// a [host.Host] (and [host.Preparer], [host.Placer]). Safe for concurrent
// use.
type Host struct {
	cfg Config
	api *client.Client
	id  string // the Label value of this host's containers

	streams    sync.WaitGroup // stream copiers of running sessions
	background sync.WaitGroup // spares being made, removals; Added under mu while open

	mu         sync.Mutex // guards the fields below
	closed     bool
	containers map[string]struct{}   // made and not yet removed
	live       map[*process]struct{} // pipe sessions not yet released
	spare      string                // a started container no session has used, "" for none
	filled     chan struct{}         // non-nil while a spare is being made; closed when it is done
	scopes     map[string]*scopeBox  // PerScope: each scope's container
}

// New returns a host for the daemon and containers cfg describes. It does
// not connect yet: the first Start does, and fails with the daemon's
// error when it cannot.
func New(cfg Config) (*Host, error) {
	c, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	api, err := client.New(client.WithHost(c.Daemon))
	if err != nil {
		return nil, fmt.Errorf("docker host: daemon %q: %w", c.Daemon, err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return &Host{cfg: c, api: api, id: hex.EncodeToString(b[:]), containers: map[string]struct{}{}, live: map[*process]struct{}{}, scopes: map[string]*scopeBox{}}, nil
}

// Name is "docker".
func (h *Host) Name() string { return "docker" }

// Place reports whether dir (a path of this machine) lies inside a mount,
// and what to do when it does not.
func (h *Host) Place(dir string) string {
	if _, ok := h.cfg.containerDir(dir); ok {
		return ""
	}
	return h.dirFailure(dir)
}

// Prepare checks spec's working directory (see Place).
func (h *Host) Prepare(spec *host.Spec) string { return h.Place(spec.Dir) }

func (h *Host) dirFailure(dir string) string {
	if len(h.cfg.Mounts) == 0 {
		return fmt.Sprintf("workdir %q is not available in the Docker container: no path of this machine is mounted there; omit workdir.", dir)
	}
	srcs := make([]string, len(h.cfg.Mounts))
	for i, m := range h.cfg.Mounts {
		srcs[i] = m.Source
	}
	return fmt.Sprintf("workdir %q is not mounted in the Docker container: command was not executed. Use a directory inside %s, or omit workdir for the default.", dir, strings.Join(srcs, ", "))
}

// Start creates and starts the session's container, then runs spec's
// command in it through the exec API. On error the container is removed
// again and nothing runs.
func (h *Host) Start(ctx context.Context, spec *host.Spec) (*host.Started, error) {
	dir, ok := h.cfg.containerDir(spec.Dir)
	if !ok {
		return nil, errors.New(h.dirFailure(spec.Dir))
	}
	cid, err := h.takeSpare(ctx)
	if err != nil {
		return nil, err
	}
	if cid == "" {
		if cid, err = h.createContainer(ctx); err != nil {
			return nil, err
		}
	}
	h.refillSpare()
	st, err := h.startExec(ctx, cid, spec, dir, "")
	if err != nil {
		h.removeContainer(cid) // best effort: Close tries again
		return nil, err
	}
	return st, nil
}

// createContainer makes and starts a container that idles (a shell
// reading a stdin that never ends) until it is removed; the commands run
// in it as execs.
func (h *Host) createContainer(ctx context.Context) (string, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return "", ErrClosed
	}
	c := &h.cfg
	hc := &container.HostConfig{NetworkMode: "none"}
	if c.Network {
		hc.NetworkMode = "default"
	}
	for _, m := range c.Mounts {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	if c.MemoryBytes > 0 {
		hc.Memory, hc.MemorySwap = c.MemoryBytes, c.MemoryBytes
	}
	if c.Pids > 0 {
		pids := c.Pids
		hc.PidsLimit = &pids
	}
	if c.CPUs > 0 {
		hc.NanoCPUs = int64(c.CPUs * 1e9)
	}
	res, err := h.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image: c.Image, User: c.User, Entrypoint: []string{c.Shell}, Cmd: []string{},
			OpenStdin: true, Labels: map[string]string{Label: h.id},
		},
		HostConfig: hc,
	})
	if err != nil {
		return "", fmt.Errorf("docker host: create a container of image %q on %s: %w", c.Image, c.Daemon, err)
	}
	h.mu.Lock()
	h.containers[res.ID] = struct{}{}
	h.mu.Unlock()
	if _, err := h.api.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		h.removeContainer(res.ID)
		return "", fmt.Errorf("docker host: start a container of image %q: %w", c.Image, err)
	}
	return res.ID, nil
}

// takeSpare returns the spare container and leaves none. When one is
// being made it waits for it (two containers made at once would each
// take longer); "" means there is none to take.
func (h *Host) takeSpare(ctx context.Context) (string, error) {
	h.mu.Lock()
	filled := h.filled
	h.mu.Unlock()
	if filled != nil {
		select {
		case <-filled:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return "", ErrClosed
	}
	cid := h.spare
	h.spare = ""
	return cid, nil
}

// refillSpare starts making the next session's container in the
// background, unless the configuration says not to, one is being made,
// or one is ready. A failure only leaves no spare: the next Start makes
// its container itself and reports the error.
func (h *Host) refillSpare() {
	h.mu.Lock()
	skip := h.cfg.NoSpare || h.cfg.PerScope || h.closed || h.filled != nil || h.spare != ""
	var filled chan struct{}
	if !skip {
		filled = make(chan struct{})
		h.filled = filled
		h.background.Add(1)
	}
	h.mu.Unlock()
	if skip {
		return
	}
	go func() {
		defer h.background.Done()
		ctx, cancel := context.WithTimeout(context.Background(), h.cfg.APITimeout)
		defer cancel()
		cid, err := h.createContainer(ctx)
		h.mu.Lock()
		h.filled = nil
		close(filled)
		keep := err == nil && !h.closed && h.spare == ""
		if keep {
			h.spare = cid
		}
		h.mu.Unlock()
		if err == nil && !keep {
			_ = h.removeContainer(cid) // best effort: Close removes what is left
		}
	}()
}

// removeLater removes cid in the background; Close waits for it and
// removes whatever is left.
func (h *Host) removeLater(cid string) {
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.background.Add(1)
	}
	h.mu.Unlock()
	if closed {
		_ = h.removeContainer(cid) // best effort: Close removes what is left
		return
	}
	go func() {
		defer h.background.Done()
		_ = h.removeContainer(cid) // best effort: Close tries again
	}()
}

// removeContainer removes cid with everything in it; it reports whether
// the daemon confirmed it.
func (h *Host) removeContainer(cid string) error {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.APITimeout)
	defer cancel()
	_, err := h.api.ContainerRemove(ctx, cid, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("remove container %.12s: %w", cid, err)
	}
	h.mu.Lock()
	delete(h.containers, cid)
	h.mu.Unlock()
	return nil
}

// Close refuses new sessions, removes every container this host made
// (with whatever still runs in them) and waits for the stream copiers of
// their sessions. The error names the containers the daemon did not
// confirm removed. Safe to call more than once.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	h.spare = ""
	h.mu.Unlock()
	// The spare being made and removals under way end first, so that
	// every container is in the set below.
	h.background.Wait()
	h.mu.Lock()
	ids := make([]string, 0, len(h.containers))
	for id := range h.containers {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	slices.Sort(ids)
	var errs []error
	for _, id := range ids {
		if err := h.removeContainer(id); err != nil {
			errs = append(errs, err)
		}
	}
	// Their streams ended with their containers; a copier whose session
	// nobody reads any more is let go here.
	h.mu.Lock()
	live := make([]*process, 0, len(h.live))
	for p := range h.live {
		live = append(live, p)
	}
	h.mu.Unlock()
	for _, p := range live {
		p.closeStreams()
	}
	h.streams.Wait()
	if err := h.api.Close(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("docker host: close: %w", errors.Join(errs...))
	}
	return nil
}

// execEnv is what the exec adds over the container's environment: spec's
// layers (host.Env.Layered) without the carried bare names, which an
// exec's environment cannot unset.
func execEnv(env host.Env) []string {
	return slices.DeleteFunc(env.Layered(), func(e string) bool { return !strings.Contains(e, "=") })
}
