package lanes

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A read of a bucket that no server answers for a moment, as while the
// node leading its stream is lost, is retried until one does: here the
// bucket's direct reads are turned off, so the server answers "no
// responders" meanwhile, as it did in a cluster that lost a node.
func TestReadsRetryWhileTheBucketIsAway(t *testing.T) {
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stores := testenv.Stores(t, js, 1)
	s := New(stores.Heads, stores.Checkpoints)
	lane := Lane{"agent", "main"}
	c := &Checkpoint{ID: "c1", Hash: "h1", Generation: 1, Body: []byte(`{"id":"c1"}`)}
	if err := s.PutCheckpoint(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Advance(ctx, lane, 0, &Head{Lane: lane, CheckpointID: c.ID, Generation: 1}); err != nil {
		t.Fatal(err)
	}
	direct := func(on bool) error {
		for _, bucket := range []string{topology.BucketCheckpoints, topology.BucketHeads} {
			str, err := js.Stream(ctx, "KV_"+bucket)
			if err != nil {
				return err
			}
			cfg := str.CachedInfo().Config
			cfg.AllowDirect = on
			if _, err := js.UpdateStream(ctx, cfg); err != nil {
				return err
			}
		}
		return nil
	}
	if err := direct(false); err != nil {
		t.Fatal(err)
	}
	if _, err := stores.Checkpoints.Get(ctx, "c1"); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("a read with direct reads off gave %v, not no responders", err)
	}
	// The outage lasts a fixed while: what is tested is the read during it.
	restored := make(chan error, 1)
	time.AfterFunc(300*time.Millisecond, func() { restored <- direct(true) })

	got, err := s.GetCheckpoint(ctx, c.ID)
	if err != nil || got == nil || got.Hash != c.Hash {
		t.Fatalf("checkpoint read across the outage: %+v, %v", got, err)
	}
	if err := <-restored; err != nil {
		t.Fatal(err)
	}
	if err := direct(false); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(300*time.Millisecond, func() { restored <- direct(true) })
	if h, _, err := s.Head(ctx, lane); err != nil || h == nil || h.CheckpointID != c.ID {
		t.Fatalf("head read across the outage: %+v, %v", h, err)
	}
	if err := <-restored; err != nil {
		t.Fatal(err)
	}
}

// A read that keeps failing ends with ctx, with the read's error.
func TestReadsStopWithTheContext(t *testing.T) {
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	stores := testenv.Stores(t, js, 1)
	s := New(stores.Heads, stores.Checkpoints)
	if err := js.DeleteKeyValue(context.Background(), topology.BucketCheckpoints); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.GetCheckpoint(ctx, "c1")
	if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read of a bucket that stays away: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("read outlived its 500ms context by %s", took)
	}
}

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nats.ErrNoResponders, true},
		{fmt.Errorf("read: %w", nats.ErrTimeout), true},
		{context.DeadlineExceeded, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10009, Description: "JetStream cluster can not handle request"}, true},
		{jetstream.ErrKeyNotFound, false},
		{jetstream.ErrStreamNotFound, false},
		{jetstream.ErrJetStreamNotEnabled, false},
		{nats.ErrConnectionClosed, false},
		{context.Canceled, false},
	} {
		if got := transient(c.err); got != c.want {
			t.Errorf("transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
