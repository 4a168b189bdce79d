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

// A read of a bucket whose stream is gone for a moment, as when the node
// leading it dies, is retried until the stream is back: the server answers
// "no responders" meanwhile.
func TestReadsRetryWhileTheBucketIsAway(t *testing.T) {
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stores, err := topology.Ensure(ctx, js, topology.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	s := New(stores.Heads, stores.Checkpoints)
	lane := Lane{"agent", "main"}
	c := &Checkpoint{ID: "c1", Hash: "h1", Generation: 1, Body: []byte(`{"id":"c1"}`)}
	restore := func() error {
		back, err := topology.Ensure(ctx, js, topology.DefaultOptions())
		if err != nil {
			return err
		}
		if err := New(back.Heads, back.Checkpoints).PutCheckpoint(ctx, c); err != nil {
			return err
		}
		_, err = New(back.Heads, back.Checkpoints).Advance(ctx, lane, 0, &Head{Lane: lane, CheckpointID: c.ID, Generation: 1})
		return err
	}
	for _, bucket := range []string{topology.BucketCheckpoints, topology.BucketHeads} {
		if err := js.DeleteKeyValue(ctx, bucket); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := stores.Checkpoints.Get(ctx, "c1"); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("a read of a deleted bucket gave %v, not no responders", err)
	}
	// The outage lasts a fixed while: what is tested is the read during it.
	restored := make(chan error, 1)
	time.AfterFunc(300*time.Millisecond, func() { restored <- restore() })

	got, err := s.GetCheckpoint(ctx, c.ID)
	if err != nil || got == nil || got.Hash != c.Hash {
		t.Fatalf("checkpoint read across the outage: %+v, %v", got, err)
	}
	if err := <-restored; err != nil {
		t.Fatal(err)
	}
	if h, _, err := s.Head(ctx, lane); err != nil || h == nil || h.CheckpointID != c.ID {
		t.Fatalf("head: %+v, %v", h, err)
	}
}

// A read that keeps failing ends with ctx, with the read's error.
func TestReadsStopWithTheContext(t *testing.T) {
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	stores, err := topology.Ensure(context.Background(), js, topology.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	s := New(stores.Heads, stores.Checkpoints)
	if err := js.DeleteKeyValue(context.Background(), topology.BucketCheckpoints); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.GetCheckpoint(ctx, "c1")
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
