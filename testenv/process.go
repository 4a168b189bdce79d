package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// routePings is the cluster block's ping setting of the nodes. A server
// pings its routes at most every 30 s, and drops one only after two
// unanswered pings: a frozen peer stays in the others' interest for a
// minute or more, and every direct get (a KV read, answered by any
// replica) they route to it is lost, about a third of them on three
// nodes. Pinging every 2 s with 3 outstanding drops it within 8 s.
const routePings = "  ping_interval: \"2s\"\n  ping_max: 3\n"

// buildTimeout bounds building the nats-server binary; with the module and
// build caches warm it takes seconds.
const buildTimeout = 2 * time.Minute

// ProcessClusterEnv is a JetStream cluster of separate nats-server
// processes, built from the nats-server version in go.mod. Unlike Cluster,
// its nodes share nothing with the test process, so clients meet the
// latencies of real routes, and a node can be killed as a crash would.
type ProcessClusterEnv struct {
	// Set while the cluster starts, then only read.
	nodes    []*exec.Cmd
	names    []string
	urls     []string
	monitors []string
}

// ProcessCluster builds nats-server into a temporary directory and starts n
// nodes of one cluster on loopback, returning once JetStream answers with
// every node a current peer. It skips the test in -short mode or when the
// binary cannot be built (no module cache and no network). Every node is
// killed when the test ends.
func ProcessCluster(t testing.TB, n int) *ProcessClusterEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("testenv: separate nats-server processes are not started in -short mode")
	}
	bin := buildNATSServer(t)
	ports := freePorts(t, 3*n) // client, route and monitoring port per node
	routes := make([]string, n)
	for i := range n {
		routes[i] = strconv.Quote("nats://127.0.0.1:" + strconv.Itoa(ports[n+i]))
	}
	c := &ProcessClusterEnv{}
	t.Cleanup(c.killAll)
	for i := range n {
		name := "cairn-proc-" + strconv.Itoa(i+1)
		// Routes ping as Cairn's nats.conf advises, so that the nodes drop
		// a frozen peer within 8 s (see routePings).
		conf := fmt.Sprintf("server_name: %q\nlisten: \"127.0.0.1:%d\"\nhttp: \"127.0.0.1:%d\"\njetstream { store_dir: %q }\ncluster {\n  name: \"cairn-proc\"\n  listen: \"127.0.0.1:%d\"\n  routes: [%s]\n"+routePings+"}\n",
			name, ports[i], ports[2*n+i], t.TempDir(), ports[n+i], strings.Join(routes, ", "))
		path := filepath.Join(t.TempDir(), name+".conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-c", path)
		if err := cmd.Start(); err != nil {
			t.Fatalf("testenv: start nats-server: %v", err)
		}
		c.nodes = append(c.nodes, cmd)
		c.names = append(c.names, name)
		c.urls = append(c.urls, "nats://127.0.0.1:"+strconv.Itoa(ports[i]))
		c.monitors = append(c.monitors, "http://127.0.0.1:"+strconv.Itoa(ports[2*n+i]))
	}
	c.waitReady(t)
	return c
}

// buildNATSServer compiles the nats-server main package of go.mod's version.
func buildNATSServer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nats-server")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput()
	if err != nil {
		t.Skipf("testenv: cannot build nats-server: %v\n%s", err, out)
	}
	return bin
}

// waitReady polls until every node is a current meta peer and JetStream
// answers API requests.
func (c *ProcessClusterEnv) waitReady(t testing.TB) {
	t.Helper()
	Eventually(t, readyTimeout, func() error {
		for i := range c.Size() {
			conn, err := net.DialTimeout("tcp", strings.TrimPrefix(c.URL(i), "nats://"), time.Second)
			if err != nil {
				return fmt.Errorf("node %d: %w", i, err)
			}
			_ = conn.Close()
		}
		return nil
	})
	nc := c.Conn(t)
	js := JetStream(t, nc)
	Eventually(t, clusterFormTimeout, func() error {
		ctx, cancel := ctxFor(time.Second)
		defer cancel()
		if _, err := js.AccountInfo(ctx); err != nil {
			return err
		}
		if err := c.metaReady(); err != nil {
			return err
		}
		return c.probeReplicas(nc)
	})
}

// metaReady reports nil once the meta leader, asked through its monitoring
// endpoint /jsz, sees every other node as a current, online peer.
func (c *ProcessClusterEnv) metaReady() error {
	client := http.Client{Timeout: time.Second}
	for i, m := range c.monitors {
		resp, err := client.Get(m + "/jsz")
		if err != nil {
			return err
		}
		var jsz struct {
			Meta *struct {
				Leader   string             `json:"leader"`
				Replicas []*server.PeerInfo `json:"replicas"`
			} `json:"meta_cluster"`
		}
		err = json.NewDecoder(resp.Body).Decode(&jsz)
		_ = resp.Body.Close()
		if err != nil {
			return fmt.Errorf("%s/jsz: %w", m, err)
		}
		if jsz.Meta == nil || jsz.Meta.Leader == "" || jsz.Meta.Leader != c.names[i] {
			continue
		}
		return peersCurrent(jsz.Meta.Replicas, len(c.monitors)-1)
	}
	return errors.New("no JetStream meta leader yet")
}

// probeReplicas reports nil once an R<n> stream can be placed, which needs
// every node to be a current peer of the meta group. (The nodes have no
// system account to ask directly.)
func (c *ProcessClusterEnv) probeReplicas(nc *nats.Conn) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := ctxFor(2 * time.Second)
	defer cancel()
	name := "TESTENV_PROBE"
	str, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"testenv.probe"}, Replicas: c.Size()})
	if err != nil {
		return fmt.Errorf("probe stream: %w", err)
	}
	defer func() { _ = js.DeleteStream(ctx, name) }()
	info, err := str.Info(ctx)
	if err != nil {
		return err
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return errors.New("probe stream has no leader yet")
	}
	for _, p := range info.Cluster.Replicas {
		if !p.Current || p.Offline {
			return fmt.Errorf("probe replica %s is not current", p.Name)
		}
	}
	if len(info.Cluster.Replicas) != c.Size()-1 {
		return fmt.Errorf("probe stream has %d followers, want %d", len(info.Cluster.Replicas), c.Size()-1)
	}
	return nil
}

// Size is the number of nodes.
func (c *ProcessClusterEnv) Size() int { return len(c.nodes) }

// URL is node i's client URL.
func (c *ProcessClusterEnv) URL(i int) string { return c.urls[i] }

// Conn connects to any node, failing over between them; the connection
// closes when the test ends.
func (c *ProcessClusterEnv) Conn(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	return connect(t, strings.Join(c.urls, ","), opts)
}

// JetStream returns a JetStream handle on a new connection from Conn.
func (c *ProcessClusterEnv) JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	return JetStream(t, c.Conn(t))
}

// NodeConn connects to node i first; the client learns the other nodes from
// it and fails over to them.
func (c *ProcessClusterEnv) NodeConn(t testing.TB, i int, opts ...nats.Option) *nats.Conn {
	t.Helper()
	return connect(t, c.URL(i), opts)
}

// StreamLeader returns the index of the node leading stream.
func (c *ProcessClusterEnv) StreamLeader(t testing.TB, stream string) int {
	t.Helper()
	name := streamLeader(t, JetStream(t, c.Conn(t)), stream)
	if i := slices.Index(c.names, name); i >= 0 {
		return i
	}
	t.Fatalf("testenv: stream %s is led by unknown node %q", stream, name)
	return -1
}

// NodesServing lists the nodes that have a client named name connected,
// as their monitoring endpoint /connz shows them.
func (c *ProcessClusterEnv) NodesServing(t testing.TB, name string) []int {
	t.Helper()
	client := http.Client{Timeout: 2 * time.Second}
	var nodes []int
	for i, m := range c.monitors {
		resp, err := client.Get(m + "/connz?limit=1024")
		if err != nil {
			t.Fatalf("testenv: node %d /connz: %v", i, err)
		}
		var connz struct {
			Conns []connInfo `json:"connections"`
		}
		err = json.NewDecoder(resp.Body).Decode(&connz)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatalf("testenv: node %d /connz: %v", i, err)
		}
		if slices.ContainsFunc(connz.Conns, func(cn connInfo) bool { return cn.Name == name }) {
			nodes = append(nodes, i)
		}
	}
	return nodes
}

// connInfo is what NodesServing reads of a /connz connection.
type connInfo struct {
	Name string `json:"name"`
}

// Kill ends node i with SIGKILL, as a crash would, and waits for it to exit.
func (c *ProcessClusterEnv) Kill(t testing.TB, i int) {
	t.Helper()
	if err := kill(c.nodes[i]); err != nil {
		t.Fatalf("testenv: kill node %d: %v", i, err)
	}
}

// Freeze stops node i with SIGSTOP, as a paused VM or a stalled disk
// would: its sockets stay open and nothing answers. Thaw wakes it; the
// test's cleanup wakes every frozen node before it kills them.
func (c *ProcessClusterEnv) Freeze(t testing.TB, i int) {
	t.Helper()
	if err := Freeze(c.nodes[i]); err != nil {
		t.Fatalf("testenv: freeze node %d: %v", i, err)
	}
}

// Thaw wakes node i with SIGCONT.
func (c *ProcessClusterEnv) Thaw(t testing.TB, i int) {
	t.Helper()
	if err := Thaw(c.nodes[i]); err != nil {
		t.Fatalf("testenv: thaw node %d: %v", i, err)
	}
}

// Freeze stops a started process with SIGSTOP. It is for any process a test
// starts (a processor, too); the caller thaws it before killing it, or the
// kill waits for nothing.
func Freeze(cmd *exec.Cmd) error {
	return signal(cmd, syscall.SIGSTOP)
}

// Thaw wakes a process Freeze stopped; one that already exited is not an
// error.
func Thaw(cmd *exec.Cmd) error {
	return signal(cmd, syscall.SIGCONT)
}

func signal(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.ProcessState != nil {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (c *ProcessClusterEnv) killAll() {
	for _, cmd := range c.nodes {
		_ = Thaw(cmd)
		_ = kill(cmd)
	}
}

// kill kills one started process by its own handle and reaps it; a process
// that already exited is not an error.
func kill(cmd *exec.Cmd) error {
	if cmd.ProcessState != nil {
		return nil
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	_ = cmd.Wait() // the exit status of a killed process is "killed"
	return nil
}
