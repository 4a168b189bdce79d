package natsrv

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRepositoryConfig starts a server from the repository's nats.conf and
// checks that every identity can do its job and nothing more.
func TestRepositoryConfig(t *testing.T) {
	s, err := Start(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", ConfigFile: "../../nats.conf", ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	processor := connect(t, s, "processor", "processor-dev-password", nil)
	testenv.Stores(t, processor, 1)
	heads, err := processor.KeyValue(ctx, topology.BucketHeads)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := heads.Put(ctx, "lane", []byte(`{}`)); err != nil {
		t.Fatalf("processor cannot write heads: %v", err)
	}
	if _, err := processor.Publish(ctx, topology.SubjectActivated, []byte(`{}`), jetstream.WithMsgID("ev-1")); err != nil {
		t.Fatalf("processor cannot publish events: %v", err)
	}

	var mu sync.Mutex
	var asyncErrs []error
	producer := connect(t, s, "producer", "producer-dev-password", func(_ *nats.Conn, _ *nats.Subscription, err error) {
		mu.Lock()
		asyncErrs = append(asyncErrs, err)
		mu.Unlock()
	})
	if _, err := producer.Publish(ctx, topology.SubjectRequested, []byte(`{}`), jetstream.WithMsgID("r-1")); err != nil {
		t.Fatalf("producer cannot publish a request: %v", err)
	}

	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 2*time.Second) }
	c1, done1 := short()
	defer done1()
	if _, err := producer.Publish(c1, topology.SubjectActivated, []byte(`{}`), jetstream.WithMsgID("forged")); err == nil {
		t.Error("producer published an event")
	}
	c2, done2 := short()
	defer done2()
	if kv, err := producer.KeyValue(c2, topology.BucketHeads); err == nil {
		if _, err := kv.Get(c2, "lane"); err == nil {
			t.Error("producer read a lane head")
		}
	}
	c3, done3 := short()
	defer done3()
	if kv, err := producer.KeyValue(c3, topology.BucketFacts); err == nil {
		if _, err := kv.Keys(c3); err == nil || errors.Is(err, jetstream.ErrNoKeysFound) {
			t.Error("producer listed facts")
		}
	}
	c4, done4 := short()
	defer done4()
	if err := producer.DeleteStream(c4, topology.StreamEvents); err == nil {
		t.Error("producer deleted a stream")
	}

	// The processor still sees exactly the one real event and the stream.
	info, err := processor.Stream(ctx, topology.StreamEvents)
	if err != nil {
		t.Fatalf("events stream gone: %v", err)
	}
	if n := info.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("events stream holds %d messages, want 1 (a forged event got in?)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asyncErrs) == 0 {
		t.Error("no permission violation was reported to the producer")
	}
}

func connect(t *testing.T, s *Server, user, pass string, onErr nats.ErrHandler) jetstream.JetStream {
	t.Helper()
	opts := []nats.Option{nats.UserInfo(user, pass)}
	if onErr != nil {
		opts = append(opts, nats.ErrorHandler(onErr))
	}
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	js := testenv.JetStream(t, nc)
	return js
}
