package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestNATSRestartKeepsKVAndPort(t *testing.T) {
	s := NATS(t, Options{})
	js := s.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "cairn_heads"})
	if err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	if _, err := kv.Put(ctx, "lane", []byte("v1")); err != nil {
		t.Fatalf("put: %v", err)
	}
	url := s.URL()

	s.Restart(t)

	if s.URL() != url {
		t.Fatalf("url changed across restart: %s -> %s", url, s.URL())
	}
	Eventually(t, 10*time.Second, func() error {
		e, err := kv.Get(ctx, "lane")
		if err != nil {
			return err
		}
		if string(e.Value()) != "v1" {
			return fmt.Errorf("value = %q, want v1", e.Value())
		}
		return nil
	})
}

func TestNATSShutdownIsIdempotent(t *testing.T) {
	s := NATS(t, Options{})
	s.Shutdown()
	s.Shutdown()
	if s.Server() != nil {
		t.Fatal("server still set after shutdown")
	}
	if _, err := nats.Connect(s.URL(), nats.Timeout(time.Second)); err == nil {
		t.Fatal("connected to a stopped server")
	}
}

func TestNATSConfigFile(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("max_payload: 2MB\nport: 4222\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := NATS(t, Options{ConfigFile: conf})
	if s.URL() == "nats://127.0.0.1:4222" {
		t.Fatal("config port was not overridden")
	}
	nc := s.Conn(t)
	if got := nc.MaxPayload(); got != 2<<20 {
		t.Fatalf("max payload = %d, want %d", got, 2<<20)
	}
}

func TestNATSConfigFileWithAccounts(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	body := `accounts {
  CAIRN: { jetstream: enabled, users: [ { user: processor, password: pw } ] }
}
`
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s := NATS(t, Options{ConfigFile: conf, ClientOptions: []nats.Option{nats.UserInfo("processor", "pw")}})
	js := s.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "cairn_facts"}); err != nil {
		t.Fatalf("JetStream in the config's account: %v", err)
	}
	if _, err := nats.Connect(s.URL(), nats.Timeout(time.Second)); err == nil {
		t.Fatal("anonymous connection accepted by a config with accounts")
	}
}

func TestClusterSurvivesStreamLeaderStepDown(t *testing.T) {
	start := time.Now()
	c := Cluster(t, 3, Options{})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cluster took %s to form, want < 10s", d)
	}
	t.Logf("cluster formed in %s", time.Since(start))
	js := c.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "COMPACT_REQUESTS", Subjects: []string{"conversation.compact.requested"}, Replicas: 3,
	})
	if err != nil {
		t.Fatalf("create stream: %v", err)
	}
	if _, err := js.Publish(ctx, "conversation.compact.requested", []byte("one")); err != nil {
		t.Fatalf("publish: %v", err)
	}

	c.StepDownStreamLeader(t, "COMPACT_REQUESTS")

	Eventually(t, 10*time.Second, func() error {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		defer pcancel()
		_, err := js.Publish(pctx, "conversation.compact.requested", []byte("two"))
		return err
	})
	st, err := js.Stream(ctx, "COMPACT_REQUESTS")
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	if info.State.Msgs != 2 {
		t.Fatalf("msgs = %d, want 2", info.State.Msgs)
	}
}

func TestEventuallyReportsLastError(t *testing.T) {
	calls := 0
	err := poll(50*time.Millisecond, func() error {
		calls++
		return fmt.Errorf("attempt %d", calls)
	})
	if err == nil || err.Error() != fmt.Sprintf("attempt %d", calls) {
		t.Fatalf("poll = %v after %d calls", err, calls)
	}
	if calls < 2 {
		t.Fatalf("poll called f %d times, want several", calls)
	}
	if err := poll(time.Second, func() error { return nil }); err != nil {
		t.Fatalf("poll on success = %v", err)
	}
}

func TestClusterNodeRestartRejoins(t *testing.T) {
	c := Cluster(t, 3, Options{})
	js := c.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "cairn_heads", Replicas: 3})
	if err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	c.Node(2).Shutdown()
	// Two of three replicas keep quorum: writes go on.
	Eventually(t, 10*time.Second, func() error {
		_, err := kv.Put(ctx, "lane", []byte("while-down"))
		return err
	})
	c.Node(2).Restart(t)
	Eventually(t, 20*time.Second, func() error {
		if !c.Node(2).Server().JetStreamIsCurrent() {
			return errors.New("restarted node not current yet")
		}
		return nil
	})
	e, err := kv.Get(ctx, "lane")
	if err != nil || string(e.Value()) != "while-down" {
		t.Fatalf("get after rejoin = %v, %v", e, err)
	}
}

func TestNewStartsBoth(t *testing.T) {
	env := New(t, Options{})
	if !env.NATS.Conn(t).IsConnected() || env.OpenAI.BaseURL() == "" {
		t.Fatal("env not ready")
	}
}

func TestNATSDebugLogging(t *testing.T) {
	s := NATS(t, Options{Debug: true})
	s.Conn(t)
	s.Restart(t)
}

// TestClusterRepositoryConfigEventReaders runs the repository's nats.conf on
// a cluster: its account mappings, which send every consumer create on the
// event streams to the ephemeral-only endpoint, still let a reader follow
// events through R3 streams and still refuse a durable there.
func TestClusterRepositoryConfigEventReaders(t *testing.T) {
	conf := filepath.Join("..", "nats.conf")
	c := Cluster(t, 3, Options{ConfigFile: conf, ClientOptions: []nats.Option{nats.UserInfo("processor", "processor-dev-password")}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	processor := c.JetStream(t)
	opts := topology.DefaultOptions()
	opts.Replicas = 3
	if _, err := topology.Ensure(ctx, processor, opts); err != nil {
		t.Fatalf("processor cannot provision: %v", err)
	}
	if _, err := processor.Publish(ctx, topology.SubjectActivated, []byte(`{}`), jetstream.WithMsgID("ev-1")); err != nil {
		t.Fatalf("processor cannot publish an event: %v", err)
	}
	// The producer connects to another node than the stream leader.
	node := c.Follower(t, topology.StreamEvents)
	nc, err := nats.Connect(c.Node(node).URL(), nats.UserInfo("producer", "producer-dev-password"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	producer, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	var got string
	err = events.Follow(ctx, producer, events.FollowOptions{FromStart: true, Subjects: []string{topology.SubjectActivated}}, func(ev events.Event) error {
		got = ev.Subject
		return stop
	})
	if !errors.Is(err, stop) || got != topology.SubjectActivated {
		t.Fatalf("producer follow = %q, %v", got, err)
	}
	_, err = producer.CreateOrUpdateConsumer(ctx, topology.StreamEvents, jetstream.ConsumerConfig{Durable: "keeper"})
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10020 {
		t.Fatalf("producer durable on %s = %v, want error 10020 (ephemeral only)", topology.StreamEvents, err)
	}
}
