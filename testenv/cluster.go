package testenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// clusterFormTimeout bounds how long a cluster may take to elect a meta leader.
const clusterFormTimeout = 30 * time.Second

// ClusterEnv is an in-process JetStream cluster whose nodes listen for clients
// and routes on loopback. (Routes never form with DontListen, so every node
// has a real listener.)
type ClusterEnv struct {
	nodes []*Server
	opts  Options
}

// Cluster starts an n-node JetStream cluster and returns once a meta leader
// exists and JetStream answers API requests. Every node shuts down when the
// test ends.
func Cluster(t testing.TB, n int, o Options) *ClusterEnv {
	t.Helper()
	if n < 1 {
		t.Fatalf("testenv: cluster needs at least one node, got %d", n)
	}
	var errs []error
	for range clusterStartAttempts {
		c, err := startCluster(t, n, o)
		if err == nil {
			c.waitReady(t)
			return c
		}
		errs = append(errs, err)
	}
	t.Fatalf("testenv: cluster did not start: %v", errors.Join(errs...))
	return nil
}

// clusterStartAttempts bounds the retries of a cluster whose reserved route
// port was taken by another process between reservation and use.
const clusterStartAttempts = 3

// startCluster starts n nodes routed to each other on freshly reserved ports.
// If a node cannot start, the nodes already running are stopped again.
func startCluster(t testing.TB, n int, o Options) (*ClusterEnv, error) {
	t.Helper()
	ports := freePorts(t, n)
	routes := make([]string, n)
	for i, p := range ports {
		routes[i] = "nats://127.0.0.1:" + strconv.Itoa(p)
	}
	c := &ClusterEnv{opts: o}
	for i := range n {
		base, err := baseOptions(t, o)
		if err != nil {
			t.Fatalf("testenv: cluster options: %v", err)
		}
		base.ServerName = "cairn-" + strconv.Itoa(i+1)
		base.Cluster = server.ClusterOpts{Name: "cairn-test", Host: "127.0.0.1", Port: ports[i]}
		base.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		s := &Server{t: t, opts: o, base: base}
		if err := s.launch(t); err != nil {
			c.shutdown()
			return nil, fmt.Errorf("node %d: %w", i+1, err)
		}
		t.Cleanup(s.Shutdown)
		c.nodes = append(c.nodes, s)
	}
	return c, nil
}

func (c *ClusterEnv) shutdown() {
	for _, n := range c.nodes {
		n.Shutdown()
	}
}

// waitReady polls until a meta leader is elected, can place a replica on
// every node, and the JetStream API answers.
func (c *ClusterEnv) waitReady(t testing.TB) {
	t.Helper()
	js := c.JetStream(t)
	Eventually(t, clusterFormTimeout, func() error {
		if err := c.metaReady(); err != nil {
			return err
		}
		ctx, cancel := ctxFor(time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err
	})
}

// metaReady reports nil once a meta leader exists, sees every other node as
// a current peer, and has heard every node's JetStream statistics. A peer it
// has not heard from yet is left out of placements, so a replicated stream
// created before then fails with "no suitable peers for placement, peer
// offline" (error 10005) although the peer shows as current and online.
func (c *ClusterEnv) metaReady() error {
	for _, n := range c.nodes {
		s := n.Server()
		if s == nil || !s.JetStreamIsLeader() {
			continue
		}
		jsz, err := s.Jsz(&server.JSzOptions{})
		if err != nil {
			return err
		}
		if jsz.Meta == nil {
			return errors.New("meta leader reports no cluster info yet")
		}
		if err := peersCurrent(jsz.Meta.Replicas, len(c.nodes)-1); err != nil {
			return err
		}
		// The peers that placement may choose from, the leader included.
		if placeable := s.JetStreamClusterPeers(); len(placeable) < len(c.nodes) {
			return fmt.Errorf("meta leader can place replicas on %d of %d nodes (%v)", len(placeable), len(c.nodes), placeable)
		}
		return nil
	}
	return errors.New("no JetStream meta leader yet")
}

// peersCurrent reports nil once the meta leader sees want other nodes as
// current, online peers.
func peersCurrent(replicas []*server.PeerInfo, want int) error {
	current := 0
	for _, p := range replicas {
		if p.Current && !p.Offline {
			current++
		}
	}
	if current < want {
		return fmt.Errorf("meta leader sees %d of %d peers current", current, want)
	}
	return nil
}

// URLs is the comma-separated client URLs of every node.
func (c *ClusterEnv) URLs() string {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// Node returns node i (0-based), which can be shut down or restarted alone.
func (c *ClusterEnv) Node(i int) *Server { return c.nodes[i] }

// Size is the number of nodes.
func (c *ClusterEnv) Size() int { return len(c.nodes) }

// Conn connects a client to the cluster (any node, failing over between them);
// it closes when the test ends.
func (c *ClusterEnv) Conn(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	return connect(t, c.URLs(), append(append([]nats.Option(nil), c.opts.ClientOptions...), opts...))
}

// JetStream returns a JetStream handle on a new connection from Conn.
func (c *ClusterEnv) JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	return JetStream(t, c.Conn(t))
}

// StepDownStreamLeader asks the leader of stream to step down through the
// $JS.API.STREAM.LEADER.STEPDOWN API and waits until a different node leads it.
func (c *ClusterEnv) StepDownStreamLeader(t testing.TB, stream string) {
	t.Helper()
	nc := c.Conn(t)
	js := JetStream(t, nc)
	old := streamLeader(t, js, stream)
	Eventually(t, clusterFormTimeout, func() error {
		return requestStepDown(nc, stream)
	})
	Eventually(t, clusterFormTimeout, func() error {
		leader, err := leaderOf(js, stream)
		if err == nil && leader == old {
			err = fmt.Errorf("stream %s still led by %q", stream, old)
		}
		return err
	})
}

// streamLeader waits until stream has a leader and returns its name.
func streamLeader(t testing.TB, js jetstream.JetStream, stream string) string {
	t.Helper()
	var leader string
	Eventually(t, clusterFormTimeout, func() (err error) {
		leader, err = leaderOf(js, stream)
		return err
	})
	return leader
}

// leaderOf asks for the name of the server leading stream.
func leaderOf(js jetstream.JetStream, stream string) (string, error) {
	ctx, cancel := ctxFor(time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return "", err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return "", err
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return "", fmt.Errorf("stream %s has no leader yet", stream)
	}
	return info.Cluster.Leader, nil
}

// requestStepDown sends one step-down request and decodes the API answer.
func requestStepDown(nc *nats.Conn, stream string) error {
	msg, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, nil, 2*time.Second)
	if err != nil {
		return err
	}
	var resp struct {
		Success bool `json:"success"`
		Error   *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return fmt.Errorf("decode step-down reply: %w", err)
	}
	if resp.Error != nil {
		return fmt.Errorf("step-down %s: %s (%d)", stream, resp.Error.Description, resp.Error.ErrCode)
	}
	if !resp.Success {
		return fmt.Errorf("step-down %s: not acknowledged", stream)
	}
	return nil
}

// StreamLeader returns the index of the node that currently leads stream,
// waiting until the stream has a leader.
func (c *ClusterEnv) StreamLeader(t testing.TB, stream string) int {
	t.Helper()
	name := streamLeader(t, c.JetStream(t), stream)
	for i, n := range c.nodes {
		if s := n.Server(); s != nil && s.Name() == name {
			return i
		}
	}
	t.Fatalf("testenv: stream %s is led by %q, which is not a running node", stream, name)
	return -1
}

// Follower returns the index of a running node that does not lead stream,
// so that a client connected to it reaches the stream across a route.
func (c *ClusterEnv) Follower(t testing.TB, stream string) int {
	t.Helper()
	leader := c.StreamLeader(t, stream)
	for i, n := range c.nodes {
		if i != leader && n.Server() != nil {
			return i
		}
	}
	t.Fatalf("testenv: no running node besides the leader of %s", stream)
	return -1
}
