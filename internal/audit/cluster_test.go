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
)

// Verify reads every activation on a 3-node cluster with R3 streams, from a
// node that does not lead the events stream, and stops at the end although
// the stream's last events are not activations.
func TestVerifyReadsEveryActivationOnACluster(t *testing.T) {
	c := testenv.Cluster(t, 3, testenv.Options{})
	js := c.JetStream(t)
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

	reader := c.Node(c.Follower(t, events.StreamEvents)).JetStream(t)
	heads, err := reader.KeyValue(ctx, topology.BucketHeads)
	if err != nil {
		t.Fatal(err)
	}
	checkpoints, err := reader.KeyValue(ctx, topology.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	r, err := audit.Verify(ctx, reader, lanes.New(heads, checkpoints))
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.Events != lanesN*generations || len(r.Lanes) != lanesN {
		t.Fatalf("report: %d activations in %d lanes, %d breaks; want %d in %d lanes, none", r.Events, len(r.Lanes), r.Breaks, lanesN*generations, lanesN)
	}
}
