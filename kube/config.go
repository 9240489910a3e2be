package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bgexec/bgexec/internal/host"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config says which cluster, pod and container commands run in. The zero
// value is not usable: a pod or a selector must be named.
type Config struct {
	// Kubeconfig is the path of a kubeconfig file. "" means the usual
	// loading rules ($KUBECONFIG, then ~/.kube/config), unless InCluster
	// is set.
	Kubeconfig string
	// Context is the kubeconfig context to use; "" means its current one.
	Context string
	// InCluster uses the service account of the pod this process runs in
	// (rest.InClusterConfig) instead of a kubeconfig.
	InCluster bool
	// REST, when not nil, is used as it is, and Kubeconfig, Context and
	// InCluster are ignored (a caller that built its own client config).
	REST *rest.Config
	// Namespace is the pods' namespace. "" means the kubeconfig context's
	// namespace (in-cluster: the service account's), or "default".
	Namespace string
	// Pod is the pod every scope runs in. When "", Selector picks a pod
	// per scope.
	Pod string
	// Selector is a label selector ("app=sandbox,tier!=db") used when Pod
	// is "": the first command of a scope picks one of the matching,
	// running pods (the one the fewest scopes use, then by name) and the
	// scope stays there while that pod runs (a start that fails in a pod
	// no longer running picks another).
	Selector string
	// Container is the container commands run in; "" means the pod's
	// only container (the API server refuses an exec into a pod of
	// several containers without one).
	Container string
	// Shell runs each command as Shell -c COMMAND; "" means "sh".
	Shell string
	// Workdir is the default working directory in the container; "" means
	// the container's own (its image's WORKDIR).
	Workdir string
	// StartTimeout bounds the start of a command (the exec's upgrade and
	// the wrapper's report) and each control exec (a signal, the end
	// check). 0 means 30 seconds.
	StartTimeout time.Duration
}

// DefaultStartTimeout is Config.StartTimeout's default.
const DefaultStartTimeout = 30 * time.Second

// Cluster holds one cluster's client configuration and the sessions
// started there. [Cluster.Host] gives the [host.Host] of a scope. Safe
// for concurrent use; Close ends every session it started.
//
// [host.Host]: https://pkg.go.dev/github.com/bgexec/bgexec/internal/host#Host
type Cluster struct {
	rest      *rest.Config
	http      *http.Client // for the pod list (selector)
	namespace string
	pod       string
	selector  string
	container string
	shell     string
	workdir   string
	timeout   time.Duration

	// execURL builds the URL of one exec; the API server's pods/exec.
	execURL func(pod string, r execRequest) (string, error)

	ctx    context.Context // cancelled by Close: ends every stream
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the cluster starts

	mu     sync.Mutex // guards the fields below
	closed bool
	scopes map[string]string // scope -> pod (selector mode)
	live   map[*process]struct{}
}

// execRequest is one exec's parameters, as the API server's pods/exec
// takes them.
type execRequest struct {
	Container             string
	Command               []string
	Stdin, Stdout, Stderr bool
	TTY                   bool
}

// New checks cfg and loads its client configuration. It does not contact
// the cluster: the first command does. The error says what to fix.
func New(cfg Config) (*Cluster, error) {
	if cfg.Pod == "" && cfg.Selector == "" {
		return nil, errors.New("kube: name a Pod, or a Selector that picks pods per scope")
	}
	if cfg.Pod != "" && cfg.Selector != "" {
		return nil, errors.New("kube: set Pod or Selector, not both")
	}
	rc, ns, err := loadREST(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Namespace != "" {
		ns = cfg.Namespace
	}
	if ns == "" {
		ns = "default"
	}
	c := &Cluster{
		rest: rest.CopyConfig(rc), namespace: ns, pod: cfg.Pod, selector: cfg.Selector,
		container: cfg.Container, shell: cfg.Shell, workdir: cfg.Workdir, timeout: cfg.StartTimeout,
		scopes: map[string]string{}, live: map[*process]struct{}{},
	}
	if c.shell == "" {
		c.shell = "sh"
	}
	if c.timeout <= 0 {
		c.timeout = DefaultStartTimeout
	}
	if c.selector != "" {
		if c.http, err = rest.HTTPClientFor(c.rest); err != nil {
			return nil, fmt.Errorf("kube: client for the pod list: %w", err)
		}
	}
	c.execURL = c.apiExecURL
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// loadREST is the client configuration cfg names, and the namespace it
// implies ("" for none).
func loadREST(cfg Config) (*rest.Config, string, error) {
	switch {
	case cfg.REST != nil:
		return cfg.REST, "", nil
	case cfg.InCluster:
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", fmt.Errorf("kube: in-cluster configuration: %w", err)
		}
		ns, _ := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace") // absent: "default"
		return rc, strings.TrimSpace(string(ns)), nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.Kubeconfig != "" {
		rules.ExplicitPath = cfg.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kube: kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kube: kubeconfig namespace: %w", err)
	}
	return rc, ns, nil
}

// apiExecURL is the API server's exec URL of pod for r.
func (c *Cluster) apiExecURL(pod string, r execRequest) (string, error) {
	base, versioned, err := rest.DefaultServerUrlFor(c.rest)
	if err != nil {
		return "", fmt.Errorf("kube: API server address: %w", err)
	}
	_ = versioned
	u := *base
	u.Path = strings.TrimRight(u.Path, "/") + "/api/v1/namespaces/" + url.PathEscape(c.namespace) + "/pods/" + url.PathEscape(pod) + "/exec"
	q := url.Values{}
	for _, a := range r.Command {
		q.Add("command", a)
	}
	if r.Container != "" {
		q.Set("container", r.Container)
	}
	for _, f := range []struct {
		name string
		on   bool
	}{{"stdin", r.Stdin}, {"stdout", r.Stdout}, {"stderr", r.Stderr}, {"tty", r.TTY}} {
		if f.on {
			q.Set(f.name, "true")
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Host returns the host of scope: every command of the scope runs in one
// pod (Config.Pod, or the one Config.Selector picked for the scope at its
// first command).
func (c *Cluster) Host(scope string) *Host {
	return &Host{c: c, scope: scope}
}

// ScopeHost is Host as a host.Host of package bgexec's seam, for the
// registry that picks a host per scope.
func (c *Cluster) ScopeHost(scope string) host.Host { return c.Host(scope) }

var _ host.Host = (*Host)(nil)

// podFor returns the pod of scope, picking one when the selector names
// pods and the scope has none yet.
func (c *Cluster) podFor(ctx context.Context, scope string) (string, error) {
	if c.pod != "" {
		return c.pod, nil
	}
	c.mu.Lock()
	pod, ok := c.scopes[scope]
	c.mu.Unlock()
	if ok {
		return pod, nil
	}
	pods, err := c.runningPods(ctx)
	if err != nil {
		return "", err
	}
	if len(pods) == 0 {
		return "", fmt.Errorf("no running pod in namespace %s matches the selector %q", c.namespace, c.selector)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if pod, ok := c.scopes[scope]; ok {
		return pod, nil // another call picked it meanwhile
	}
	use := map[string]int{}
	for _, p := range c.scopes {
		use[p]++
	}
	best := pods[0]
	for _, p := range pods[1:] {
		if use[p] < use[best] {
			best = p
		}
	}
	c.scopes[scope] = best
	return best, nil
}

// repick forgets the pod of scope when it is no longer among the running
// pods the selector matches, and reports whether it did (the next podFor
// picks another).
func (c *Cluster) repick(ctx context.Context, scope, pod string) bool {
	pods, err := c.runningPods(ctx)
	if err != nil || slices.Contains(pods, pod) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scopes[scope] != pod {
		return false
	}
	delete(c.scopes, scope)
	return true
}

// runningPods lists the names of the running pods the selector matches
// (and that have the container, when one is named), sorted.
func (c *Cluster) runningPods(ctx context.Context) ([]string, error) {
	body, err := c.listPods(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the pods of namespace %s: %w", c.namespace, err)
	}
	var list podList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("list the pods of namespace %s: %w", c.namespace, err)
	}
	var out []string
	for _, p := range list.Items {
		if p.Status.Phase != "Running" || p.Metadata.DeletionTimestamp != nil {
			continue
		}
		if c.container != "" && !slices.ContainsFunc(p.Spec.Containers, func(ct podContainer) bool { return ct.Name == c.container }) {
			continue
		}
		out = append(out, p.Metadata.Name)
	}
	slices.Sort(out)
	return out, nil
}

// podList is the part of the API server's pod list the selector reads.
type podList struct {
	Items []struct {
		Metadata struct {
			Name              string  `json:"name"`
			DeletionTimestamp *string `json:"deletionTimestamp"`
		} `json:"metadata"`
		Spec struct {
			Containers []podContainer `json:"containers"`
		} `json:"spec"`
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	} `json:"items"`
}

// podContainer is one container of a listed pod.
type podContainer struct {
	Name string `json:"name"`
}

// listPods gets the namespace's pods that match the selector, as the API
// server's JSON.
func (c *Cluster) listPods(ctx context.Context) ([]byte, error) {
	base, _, err := rest.DefaultServerUrlFor(c.rest)
	if err != nil {
		return nil, fmt.Errorf("API server address: %w", err)
	}
	u := *base
	u.Path = strings.TrimRight(u.Path, "/") + "/api/v1/namespaces/" + url.PathEscape(c.namespace) + "/pods"
	u.RawQuery = url.Values{"labelSelector": {c.selector}}.Encode()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// Close kills every session still running (SIGKILL to all its processes
// in the container, by a control exec), ends their streams and waits for
// every goroutine the cluster started. Commands started after Close fail.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	live := make([]*process, 0, len(c.live))
	for p := range c.live {
		live = append(live, p)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range live {
		wg.Go(func() { p.killOnClose() })
	}
	wg.Wait()
	c.cancel()
	c.wg.Wait()
	if c.http != nil {
		utilnet.CloseIdleConnectionsFor(c.http.Transport)
	}
	return nil
}

// track records p as live and counts its stream's goroutine on c.wg, unless
// c is closed: the Add happens under the lock that Close takes before it
// waits, so it never races with the Wait.
func (c *Cluster) track(p *process) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.live[p] = struct{}{}
	c.wg.Add(1)
	return true
}

func (c *Cluster) untrack(p *process) {
	c.mu.Lock()
	delete(c.live, p)
	c.mu.Unlock()
}
