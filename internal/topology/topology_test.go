package topology_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/natsrv"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go/jetstream"
)

func TestEnsureIsIdempotent(t *testing.T) {
	s, err := natsrv.Start(natsrv.Config{DataDir: t.TempDir(), Listen: natsrv.ListenNone, ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
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
	}
	for _, o := range bad {
		err := o.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), "topology: ") {
			t.Errorf("Validate(%+v) = %v, want a topology error", o, err)
		}
	}
}
