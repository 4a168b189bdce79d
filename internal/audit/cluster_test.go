package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/audit"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go/jetstream"
)

// Verify reads every activation on a 3-node cluster with R3 streams, from a
// node that does not lead the events stream, and stops at the end although
// the stream's last events are not activations.
func TestVerifyReadsEveryActivationOnACluster(t *testing.T) {
	c, stores := testenv.CairnCluster(t, 3, testenv.Options{})
	verifyOnCluster(t, c.JetStream(t), stores, func() jetstream.JetStream {
		return c.Node(c.Follower(t, events.StreamEvents)).JetStream(t)
	})
}

// The same on a cluster of separate nats-server processes.
func TestVerifyOnSeparateServerProcesses(t *testing.T) {
	c, stores := testenv.CairnProcessCluster(t, 3)
	verifyOnCluster(t, c.JetStream(t), stores, func() jetstream.JetStream {
		reader := testenv.JetStream(t, c.NodeConn(t, (c.StreamLeader(t, events.StreamEvents)+1)%c.Size()))
		return reader
	})
}

// Verify reads every activation once, and finds no break, when the node
// leading the events stream dies after the first quarter of the activations
// was read: shut down in-process, or killed with SIGKILL as a separate
// process. The reader is connected to that node, so it loses its server as
// well as the stream's leader, and reads the stores through the new leaders.
func TestVerifySurvivesStreamLeaderLoss(t *testing.T) {
	t.Run("in-process", func(t *testing.T) {
		c, stores := testenv.CairnCluster(t, 3, testenv.Options{})
		d := &disruptingJS{at: activations / 4}
		verifyOnCluster(t, c.JetStream(t), stores, func() jetstream.JetStream {
			leader := c.StreamLeader(t, events.StreamEvents)
			d.JetStream, d.disrupt = c.Node(leader).JetStream(t), c.Node(leader).Shutdown
			return d
		})
		d.check(t)
	})
	t.Run("separate processes", func(t *testing.T) {
		c, stores := testenv.CairnProcessCluster(t, 3)
		d := &disruptingJS{at: activations / 4}
		verifyOnCluster(t, c.JetStream(t), stores, func() jetstream.JetStream {
			leader := c.StreamLeader(t, events.StreamEvents)
			var err error
			if d.JetStream, err = jetstream.New(c.NodeConn(t, leader)); err != nil {
				t.Fatal(err)
			}
			d.disrupt = func() { c.Kill(t, leader) }
			return d
		})
		d.check(t)
	})
}

// disruptingJS is a real JetStream handle whose ordered consumers run
// disrupt, once, in the reader's goroutine right after the at-th message
// they deliver, so that a test can act in the middle of a read.
type disruptingJS struct {
	jetstream.JetStream
	at      int
	disrupt func()

	mu    sync.Mutex
	seen  int
	fired time.Time // when disrupt began
}

func (d *disruptingJS) OrderedConsumer(ctx context.Context, stream string, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	c, err := d.JetStream.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, err
	}
	return &disruptingConsumer{Consumer: c, d: d}, nil
}

// delivered counts one message and runs disrupt at the at-th.
func (d *disruptingJS) delivered() {
	d.mu.Lock()
	d.seen++
	fire := d.seen == d.at
	if fire {
		d.fired = time.Now()
	}
	d.mu.Unlock()
	if fire {
		d.disrupt()
	}
}

// check fails the test if the read ended before the disruption.
func (d *disruptingJS) check(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fired.IsZero() {
		t.Fatalf("the read delivered %d messages and ended before the disruption at %d", d.seen, d.at)
	}
	t.Logf("verified %s after the disruption began", time.Since(d.fired).Round(time.Millisecond))
}

type disruptingConsumer struct {
	jetstream.Consumer
	d *disruptingJS
}

func (c *disruptingConsumer) Messages(opts ...jetstream.PullMessagesOpt) (jetstream.MessagesContext, error) {
	it, err := c.Consumer.Messages(opts...)
	if err != nil {
		return nil, err
	}
	return &disruptingIter{MessagesContext: it, d: c.d}, nil
}

// Next counts too, so that the disruption does not depend on how the
// reader pulls.
func (c *disruptingConsumer) Next(opts ...jetstream.FetchOpt) (jetstream.Msg, error) {
	msg, err := c.Consumer.Next(opts...)
	if err == nil {
		c.d.delivered()
	}
	return msg, err
}

type disruptingIter struct {
	jetstream.MessagesContext
	d *disruptingJS
}

func (it *disruptingIter) Next(opts ...jetstream.NextOpt) (jetstream.Msg, error) {
	msg, err := it.MessagesContext.Next(opts...)
	if err == nil {
		it.d.delivered()
	}
	return msg, err
}

// verifyOnCluster stores activations in clusterLanes lanes.
const (
	clusterLanes, clusterGenerations = 4, 50
	activations                      = clusterLanes * clusterGenerations
)

// verifyOnCluster stores 200 activations in 4 lanes and 3 skipped events
// through js and stores, then verifies them through the JetStream reader
// returns.
func verifyOnCluster(t *testing.T, js jetstream.JetStream, stores *topology.Stores, reader func() jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	f := &fixture{js: js, stores: stores, lanes: lanes.New(stores.Heads, stores.Checkpoints)}
	for i := range clusterLanes {
		f.activate(t, lanes.Lane{RunAgentID: fmt.Sprintf("agent-%d", i), CheckpointNamespace: "root"}, clusterGenerations)
	}
	for i := range 3 {
		skipped, _ := json.Marshal(events.Skipped{Header: events.Header{V: 1, EventID: fmt.Sprintf("s%d:skipped", i), Kind: events.KindSkipped, RequestID: fmt.Sprintf("s%d", i)}, Reason: "below_trigger"})
		if _, err := js.Publish(ctx, events.SubjectSkipped, skipped); err != nil {
			t.Fatal(err)
		}
	}

	r := reader()
	heads, err := r.KeyValue(ctx, topology.BucketHeads)
	if err != nil {
		t.Fatal(err)
	}
	checkpoints, err := r.KeyValue(ctx, topology.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	report, err := audit.Verify(ctx, r, lanes.New(heads, checkpoints))
	if err != nil {
		t.Fatal(err)
	}
	if !report.OK() || report.Events != activations || len(report.Lanes) != clusterLanes {
		t.Fatalf("report: %d activations in %d lanes, %d breaks; want %d in %d lanes, none", report.Events, len(report.Lanes), report.Breaks, activations, clusterLanes)
	}
}
