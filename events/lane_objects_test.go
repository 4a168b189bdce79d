package events_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestProducerLaneObjects runs the repository's nats.conf: the producer
// identity puts a claim-checked lane and reads it back, and is refused the
// purges by which a delete removes an object's chunks and by which the
// whole bucket could be emptied; the processor keeps them.
func TestProducerLaneObjects(t *testing.T) {
	s := testenv.NATS(t, testenv.Options{ConfigFile: filepath.Join("..", "nats.conf"),
		ClientOptions: []nats.Option{nats.UserInfo("processor", "processor-dev-password")}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	processor := s.JetStream(t)
	testenv.Stores(t, processor, 1)
	nc, err := nats.Connect(s.URL(), nats.UserInfo("producer", "producer-dev-password"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	producer := testenv.JetStream(t, nc)
	store, err := producer.ObjectStore(ctx, events.LanesBucket)
	if err != nil {
		t.Fatal(err)
	}
	const lane = `[{"event_id":"e1"}]`
	if _, err := store.PutBytes(ctx, "lane-1", []byte(lane)); err != nil {
		t.Fatalf("producer put: %v", err)
	}
	if got, err := store.GetBytes(ctx, "lane-1"); err != nil || string(got) != lane {
		t.Fatalf("producer get = %q, %v", got, err)
	}
	info, err := store.GetInfo(ctx, "lane-1")
	if err != nil {
		t.Fatal(err)
	}
	stream, err := processor.Stream(ctx, "OBJ_"+events.LanesBucket)
	if err != nil {
		t.Fatal(err)
	}
	chunks := "$O." + events.LanesBucket + ".C." + info.NUID
	producerStream, err := producer.Stream(ctx, "OBJ_"+events.LanesBucket)
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string][]jetstream.StreamPurgeOpt{"the object's chunks": {jetstream.WithPurgeSubject(chunks)}, "the bucket": nil} {
		// A refused request gets no reply: it ends at its own deadline.
		refusedCtx, cancelRefused := context.WithTimeout(ctx, 2*time.Second)
		err := producerStream.Purge(refusedCtx, opts...)
		cancelRefused()
		if !isRefused(err) {
			t.Errorf("producer purge of %s = %v, want a permissions violation", name, err)
		}
	}
	if _, err := stream.GetLastMsgForSubject(ctx, chunks); err != nil {
		t.Fatalf("the lane's chunks after the producer's purges: %v", err)
	}
	if err := stream.Purge(ctx, jetstream.WithPurgeSubject(chunks)); err != nil {
		t.Fatalf("processor purge of the lane's chunks: %v", err)
	}
}

// isRefused reports whether err is the server refusing a request for want
// of permission: nats.go reports it as a permissions violation, or, for a
// request whose reply never comes, as a timeout.
func isRefused(err error) bool {
	return errors.Is(err, nats.ErrPermissionViolation) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}
