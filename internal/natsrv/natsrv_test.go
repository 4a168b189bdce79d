package natsrv

import (
	"context"
	"testing"
	"time"

	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestStartKeepsStateAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Listen: ListenNone, ReadyTimeout: 10 * time.Second}
	ctx := context.Background()

	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ClientURL(); got != "" {
		t.Fatalf("ClientURL with ListenNone = %q, want empty", got)
	}
	kv := bucket(t, s)
	if _, err := kv.Put(ctx, "k", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	s.Shutdown()

	s, err = Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	e, err := bucket(t, s).Get(ctx, "k")
	if err != nil {
		t.Fatalf("value lost across restart: %v", err)
	}
	if string(e.Value()) != "v1" {
		t.Fatalf("value = %q, want v1", e.Value())
	}
}

func TestStartListensOnLoopback(t *testing.T) {
	s, err := Start(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatalf("connect over TCP to %q: %v", s.ClientURL(), err)
	}
	nc.Close()
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{
		{DataDir: "", Listen: ListenNone, ReadyTimeout: time.Second},
		{DataDir: "x", Listen: "nonsense", ReadyTimeout: time.Second},
		{DataDir: "x", Listen: "127.0.0.1:70000", ReadyTimeout: time.Second},
		{DataDir: "x", Listen: ListenNone},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", c)
		}
	}
}

func bucket(t *testing.T, s *Server) jetstream.KeyValue {
	t.Helper()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js := testenv.JetStream(t, nc)
	kv, err := js.CreateOrUpdateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}
