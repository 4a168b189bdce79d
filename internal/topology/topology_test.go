package topology_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go/jetstream"
)

// embedded starts an embedded server on a fresh store (serveDir).
func embedded(t *testing.T) jetstream.JetStream {
	t.Helper()
	return serveDir(t, t.TempDir())
}

func TestEnsureIsIdempotent(t *testing.T) {
	js := embedded(t)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := topology.Ensure(ctx, js, topology.DefaultOptions()); err != nil {
			t.Fatalf("Ensure #%d: %v", i+1, err)
		}
	}
	for _, cfg := range topology.StreamConfigs(topology.DefaultOptions()) {
		info, err := js.Stream(ctx, cfg.Name)
		if err != nil {
			t.Fatalf("stream %s: %v", cfg.Name, err)
		}
		if got := info.CachedInfo().Config.Retention; got != jetstream.LimitsPolicy {
			t.Errorf("stream %s retention = %v, want limits", cfg.Name, got)
		}
	}
	if _, err := js.Stream(ctx, topology.StreamEvents); err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, topology.SubjectActivated, []byte(`{}`), jetstream.WithMsgID("e1"))
	if err != nil || ack.Stream != topology.StreamEvents {
		t.Fatalf("publish activated: ack=%+v err=%v", ack, err)
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := []topology.Options{
		{Replicas: 0, Duplicates: time.Minute},
		{Replicas: 7, Duplicates: time.Minute},
		{Replicas: 1, Duplicates: 0},
		{Replicas: 1, Duplicates: time.Minute, MaxMsgSize: -1},
		{Replicas: 1, Duplicates: time.Minute, LedgerTTL: 30 * time.Minute},
		{Replicas: 1, Duplicates: 2 * time.Hour, LedgerTTL: 90 * time.Minute},
	}
	for _, o := range bad {
		err := o.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), "topology: ") {
			t.Errorf("Validate(%+v) = %v, want a topology error", o, err)
		}
	}
}

// Limits an operator gave Cairn's streams and buckets (say with nats stream
// edit) survive the next start's Ensure; LedgerTTL bounds the ledger.
func TestEnsureKeepsOperatorLimits(t *testing.T) {
	js := embedded(t)
	ctx := context.Background()
	if _, err := topology.Ensure(ctx, js, topology.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, topology.StreamRequests)
	if err != nil {
		t.Fatal(err)
	}
	limited := st.CachedInfo().Config
	limited.MaxAge, limited.MaxBytes, limited.MaxMsgs = 48*time.Hour, 1<<30, 100000
	if _, err := js.UpdateStream(ctx, limited); err != nil {
		t.Fatal(err)
	}
	kvStream, err := js.Stream(ctx, "KV_"+topology.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	bounded := kvStream.CachedInfo().Config
	bounded.MaxAge, bounded.MaxBytes = 90*24*time.Hour, 1<<31
	if _, err := js.UpdateStream(ctx, bounded); err != nil {
		t.Fatal(err)
	}
	o := topology.DefaultOptions()
	o.LedgerTTL = 7 * 24 * time.Hour
	if _, err := topology.Ensure(ctx, js, o); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stream          string
		age             time.Duration
		maxBytes, count int64
	}{
		{topology.StreamRequests, 48 * time.Hour, 1 << 30, 100000},
		{"KV_" + topology.BucketCheckpoints, 90 * 24 * time.Hour, 1 << 31, -1},
		{"KV_" + topology.BucketLedger, 7 * 24 * time.Hour, -1, -1},
		{topology.StreamEvents, 0, -1, -1},
	} {
		st, err := js.Stream(ctx, c.stream)
		if err != nil {
			t.Fatal(err)
		}
		got := st.CachedInfo().Config
		if got.MaxAge != c.age || got.MaxBytes != c.maxBytes || got.MaxMsgs != c.count {
			t.Errorf("%s: max age %s, bytes %d, msgs %d; want %s, %d, %d", c.stream, got.MaxAge, got.MaxBytes, got.MaxMsgs, c.age, c.maxBytes, c.count)
		}
	}
}
