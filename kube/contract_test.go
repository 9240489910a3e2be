package kube

import (
	"context"
	"testing"
	"time"

	"github.com/bgexec/bgexec"
	"github.com/bgexec/bgexec/internal/contracttest"
)

// TestContract runs the exec and process tools' contract, the one every
// host runs (internal/contracttest), with commands in a pod of the
// loopback streaming server: a registry whose Config.Kubernetes is a
// Cluster of this package.
func TestContract(t *testing.T) {
	t.Parallel()
	contracttest.Run(t, contracttest.Host{Name: "kubernetes", New: func(t *testing.T) *bgexec.Registry {
		tc := newTestCluster(t, "p1")
		c, err := New(Config{REST: tc.rest(), Namespace: "ns", Pod: "p1", StartTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		reg, err := bgexec.NewRegistry(bgexec.Config{Host: "kubernetes", Kubernetes: c})
		if err != nil {
			_ = c.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := reg.Close(ctx); err != nil {
				t.Error(err)
			}
		})
		return reg
	}})
}
