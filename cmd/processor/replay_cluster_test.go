package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go/jetstream"
)

// replayEvents is how many events the replay cluster tests store: a reader
// that made a consumer per message lost the race with its first pull within
// a few dozen.
const replayEvents = 200

// newReplayCluster starts a 3-node cluster with Cairn's streams at R3 holding
// replayEvents skipped events.
func newReplayCluster(t *testing.T) *testenv.ClusterEnv {
	t.Helper()
	c, _ := testenv.CairnCluster(t, 3, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	publishReplayEvents(ctx, t, c.JetStream(t))
	return c
}

// publishReplayEvents stores replayEvents skipped events.
func publishReplayEvents(ctx context.Context, t *testing.T, js jetstream.JetStream) {
	t.Helper()
	for i := range replayEvents {
		id := fmt.Sprintf("r%d", i)
		b, _ := json.Marshal(events.Skipped{Header: events.Header{V: 1, EventID: id + ":skipped", Kind: events.KindSkipped, RequestID: id}, Reason: "below_trigger"})
		if _, err := js.Publish(ctx, events.SubjectSkipped, b, jetstream.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
}

// replayedSeqs decodes replay's JSON lines and checks they are the stream's
// sequences 1..replayEvents, once each, in order.
func replayedSeqs(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i, line := range lines {
		var r replayed
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		if r.Sequence != uint64(i+1) {
			t.Fatalf("line %d has sequence %d (a duplicate or a gap)", i+1, r.Sequence)
		}
	}
	if len(lines) != replayEvents {
		t.Fatalf("replay printed %d of %d events", len(lines), replayEvents)
	}
}

// `processor replay` prints every event on a cluster, connected to a node
// that does not lead the stream, and exits at the end.
func TestReplayReadsEveryEventOnACluster(t *testing.T) {
	c := newReplayCluster(t)
	url := c.Node(c.Follower(t, events.StreamEvents)).URL()
	code, out, errOut := cli(t, "replay", "--nats-url", url, "--json")
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	replayedSeqs(t, out)
}

// A replay keeps going, without a duplicate or a gap, when the node leading
// the stream, which is also the one the replay is connected to, dies after
// the first quarter of the events.
func TestReplaySurvivesStreamLeaderLoss(t *testing.T) {
	c := newReplayCluster(t)
	leader := c.StreamLeader(t, events.StreamEvents)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	replayThrough(ctx, t, c.Node(leader).JetStream(t), func() { c.Node(leader).Shutdown() })
}

// replayThrough replays the events stream, runs disrupt after the first
// quarter of the events is printed, and checks that the replay prints every
// event once, in order, and returns.
func replayThrough(ctx context.Context, t *testing.T, js jetstream.JetStream, disrupt func()) {
	t.Helper()
	w := &pausingWriter{at: replayEvents / 4, reached: make(chan struct{}), resume: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
		done <- replay(ctx, js, topology.StreamEvents, cfg, replayFilter{}, false, newReplayPrinter(w, true), newProgress(&bytes.Buffer{}))
	}()
	select {
	case <-w.reached:
	case err := <-done:
		t.Fatalf("replay ended before the disruption: %v", err)
	}
	func() {
		defer close(w.resume)
		disrupt()
	}()
	if err := <-done; err != nil {
		t.Fatalf("replay: %v", err)
	}
	replayedSeqs(t, w.String())
}

// pausingWriter collects lines and, at line at, signals reached and waits
// for resume, so that a test can act in the middle of a replay.
type pausingWriter struct {
	at      int
	reached chan struct{}
	resume  chan struct{}

	mu    sync.Mutex
	lines int
	buf   bytes.Buffer
}

func (w *pausingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	w.lines += bytes.Count(p, []byte("\n"))
	pause := w.lines == w.at
	w.mu.Unlock()
	if pause {
		close(w.reached)
		<-w.resume
	}
	return len(p), nil
}

func (w *pausingWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// On a cluster of separate nats-server processes `processor replay` prints
// every event, and a replay connected to the stream leader reads everything
// once, in order, when that node is killed after the first quarter.
func TestReplayOnSeparateServerProcesses(t *testing.T) {
	c, _ := testenv.CairnProcessCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	publishReplayEvents(ctx, t, c.JetStream(t))
	leader := c.StreamLeader(t, events.StreamEvents)

	code, out, errOut := cli(t, "replay", "--nats-url", c.URL((leader+1)%c.Size()), "--json")
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	replayedSeqs(t, out)

	reader := testenv.JetStream(t, c.NodeConn(t, leader))
	replayThrough(ctx, t, reader, func() { c.Kill(t, leader) })
}
