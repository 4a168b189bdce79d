package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go/jetstream"
)

// ensureTimeout bounds creating Cairn's streams and buckets; on a cluster
// that has just formed, placing them can take several seconds.
const ensureTimeout = time.Minute

// Stores creates Cairn's streams, buckets and object stores through js
// with every one at the given replica count, as `processor serve
// --replicas` does, and fails the test if it cannot.
func Stores(t testing.TB, js jetstream.JetStream, replicas int) *topology.Stores {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ensureTimeout)
	defer cancel()
	o := topology.DefaultOptions()
	o.Replicas = replicas
	stores, err := topology.Ensure(ctx, js, o)
	if err != nil {
		t.Fatalf("testenv: create Cairn's streams and buckets at R%d: %v", replicas, err)
	}
	return stores
}

// CairnCluster is Cluster with Cairn's streams and buckets created on it,
// each replicated on every node.
func CairnCluster(t testing.TB, n int, o Options) (*ClusterEnv, *topology.Stores) {
	t.Helper()
	c := Cluster(t, n, o)
	return c, Stores(t, c.JetStream(t), n)
}

// CairnProcessCluster is ProcessCluster with Cairn's streams and buckets
// created on it, each replicated on every node.
func CairnProcessCluster(t testing.TB, n int) (*ProcessClusterEnv, *topology.Stores) {
	t.Helper()
	c := ProcessCluster(t, n)
	return c, Stores(t, c.JetStream(t), n)
}
