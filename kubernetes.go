package bgexec

import "github.com/bgexec/bgexec/internal/host"

// PodHosts runs commands in Kubernetes pods (Config.Kubernetes). It is
// what New of the module github.com/bgexec/bgexec/kube returns; only that
// module can implement it, since its methods name this module's internal
// host type. The Kubernetes host lives in a module of its own so that
// client-go, a large dependency, stays out of this one.
type PodHosts interface {
	// ScopeHost returns the host of one scope's commands: the pod the
	// configuration names, or the one its label selector picked for the
	// scope. Safe for concurrent use.
	ScopeHost(scope string) host.Host
	// Close ends every session still running in the pods and waits for
	// what the hosts started. The registry calls it once, in its Close.
	Close() error
}
