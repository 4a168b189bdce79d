package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	c := testenv.Cluster(t, 3, testenv.Options{})
	verifyOnCluster(t, c.JetStream(t), func() jetstream.JetStream {
		return c.Node(c.Follower(t, events.StreamEvents)).JetStream(t)
	})
}

// The same on a cluster of separate nats-server processes.
func TestVerifyOnSeparateServerProcesses(t *testing.T) {
	c := testenv.ProcessCluster(t, 3)
	js, err := jetstream.New(c.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	verifyOnCluster(t, js, func() jetstream.JetStream {
		reader, err := jetstream.New(c.NodeConn(t, (c.StreamLeader(t, events.StreamEvents)+1)%c.Size()))
		if err != nil {
			t.Fatal(err)
		}
		return reader
	})
}

// verifyOnCluster stores 200 activations in 4 lanes and 3 skipped events
// through js, then verifies them through the JetStream reader returns.
func verifyOnCluster(t *testing.T, js jetstream.JetStream, reader func() jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	o := topology.DefaultOptions()
	o.Replicas = 3
	stores, err := topology.Ensure(ctx, js, o)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{js: js, stores: stores, lanes: lanes.New(stores.Heads, stores.Checkpoints)}
	const lanesN, generations = 4, 50
	for i := range lanesN {
		f.activate(t, lanes.Lane{RunAgentID: fmt.Sprintf("agent-%d", i), CheckpointNamespace: "root"}, generations)
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
	if !report.OK() || report.Events != lanesN*generations || len(report.Lanes) != lanesN {
		t.Fatalf("report: %d activations in %d lanes, %d breaks; want %d in %d lanes, none", report.Events, len(report.Lanes), report.Breaks, lanesN*generations, lanesN)
	}
}
