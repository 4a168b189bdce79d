package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go/jetstream"
)

type fixture struct {
	js jetstream.JetStream
	kv jetstream.KeyValue
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	s := testenv.Stores(t, js, 1)
	return fixture{js: js, kv: s.Heads}
}

func rec(id string) Record {
	return Record{Subject: topology.SubjectActivated, EventID: id, Headers: map[string]string{"traceparent": "tp"}, Payload: json.RawMessage(`{"event_id":"` + id + `"}`)}
}

func (f fixture) put(t *testing.T, key string, records ...Record) uint64 {
	t.Helper()
	v, _ := json.Marshal(map[string]any{"lane": "x", "generation": 7, "outbox": records})
	rev, err := f.kv.Put(context.Background(), key, v)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func (f fixture) events(t *testing.T) map[string]int {
	t.Helper()
	ctx := context.Background()
	st, err := f.js.Stream(ctx, topology.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for seq := uint64(1); seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		out[m.Header.Get(jetstream.MsgIDHeader)]++
	}
	return out
}

func (f fixture) pending(t *testing.T, key string) (int, map[string]any) {
	t.Helper()
	e, err := f.kv.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		t.Fatal(err)
	}
	list, _ := v["outbox"].([]any)
	return len(list), v
}

// runRelay runs r until the test ends.
func runRelay(t *testing.T, r *Relay) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Records a crash left behind are published when the relay starts, once
// each, and cleared; other members of the value are kept.
func TestRelayFinishesLeftoversOnStart(t *testing.T) {
	f := newFixture(t)
	f.put(t, "lane-a", rec("a:1"), rec("a:2"))
	f.put(t, "lane-b", rec("b:1"))
	// One record was already published before the crash.
	if err := Publish(context.Background(), f.js, rec("a:1")); err != nil {
		t.Fatal(err)
	}
	r, err := NewRelay(f.kv, f.js, DefaultRelayConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	runRelay(t, r)
	testenv.Eventually(t, 10*time.Second, func() error {
		for _, k := range []string{"lane-a", "lane-b"} {
			if n, _ := f.pending(t, k); n != 0 {
				return fmt.Errorf("%s has %d records", k, n)
			}
		}
		return nil
	})
	got := f.events(t)
	for _, id := range []string{"a:1", "a:2", "b:1"} {
		if got[id] != 1 {
			t.Fatalf("event %s published %d times: %v", id, got[id], got)
		}
	}
	if _, v := f.pending(t, "lane-a"); v["generation"] != float64(7) || v["lane"] != "x" {
		t.Fatalf("relay changed other members: %v", v)
	}
	// A new value with records is picked up by the watch.
	f.put(t, "lane-c", rec("c:1"))
	testenv.Eventually(t, 10*time.Second, func() error {
		if n, _ := f.pending(t, "lane-c"); n != 0 || f.events(t)["c:1"] != 1 {
			return fmt.Errorf("lane-c not relayed")
		}
		return nil
	})
}

// Records added between publishing and clearing survive the clear.
func TestClearKeepsRecordsAddedConcurrently(t *testing.T) {
	f := newFixture(t)
	f.put(t, "k", rec("k:1"))
	entry, err := f.kv.Get(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	f.put(t, "k", rec("k:1"), rec("k:2")) // the head moved after the read
	r, _ := NewRelay(f.kv, f.js, DefaultRelayConfig(), nil)
	if err := r.clear(context.Background(), "k", entry.Value(), entry.Revision(), map[string]bool{"k:1": true}); err != nil {
		t.Fatal(err)
	}
	n, v := f.pending(t, "k")
	if n != 1 || v["outbox"].([]any)[0].(map[string]any)["event_id"] != "k:2" {
		t.Fatalf("after clear: %v", v)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.pending(t, "k"); n != 0 || f.events(t)["k:2"] != 1 {
		t.Fatal("flush did not finish k:2")
	}
}

func TestRecordValidate(t *testing.T) {
	named := rec("n")
	named.CheckpointRef = "c"
	for _, r := range []Record{{}, {Subject: "s"}, {Subject: "s", EventID: "e"}, named} {
		if r.Validate() == nil {
			t.Fatalf("accepted %+v", r)
		}
	}
	if rec("x").Validate() != nil {
		t.Fatal("rejected a valid record")
	}
}

func TestHasRecords(t *testing.T) {
	cases := map[string]bool{
		`{"lane":{"a":1},"outbox":[{"event_id":"x"}],"z":1}`: true,
		`{"state":{"outbox":[1]},"outbox":[]}`:               false,
		`{"outbox":null}`:                                    false,
		`{"lane":"x"}`:                                       false,
		`not json`:                                           false,
		`[]`:                                                 false,
	}
	for v, want := range cases {
		if got := hasRecords([]byte(v)); got != want {
			t.Errorf("hasRecords(%s) = %v, want %v", v, got, want)
		}
	}
}

func TestRelayReportsLagAndNothingBehind(t *testing.T) {
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "lag"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LAG", Subjects: []string{"lag.>"}}); err != nil {
		t.Fatal(err)
	}
	var lags []time.Duration
	cfg := DefaultRelayConfig()
	cfg.OnPublish = func(_ Record, lag time.Duration) { lags = append(lags, lag) }
	relay, err := NewRelay(kv, js, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	value := []byte(`{"outbox":[{"subject":"lag.a","event_id":"e1","payload":{"x":1}}]}`)
	if _, err := kv.Put(ctx, "k", value); err != nil {
		t.Fatal(err)
	}
	if err := relay.Deliver(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if len(lags) != 1 || lags[0] < 0 || lags[0] > time.Minute {
		t.Fatalf("lags = %v, want one plausible lag", lags)
	}
	if n := relay.Behind(0); n != 0 {
		t.Fatalf("Behind = %d after a delivery, want 0", n)
	}
	// A record no stream accepts stays behind until a retry succeeds.
	if _, err := kv.Put(ctx, "stuck", []byte(`{"outbox":[{"subject":"nowhere.a","event_id":"e2","payload":{}}]}`)); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	relay.deliverOrRetry(short, "stuck")
	if n := relay.Behind(0); n != 1 {
		t.Fatalf("Behind = %d with one failed delivery, want 1", n)
	}
}

// countingKV is the real bucket, counting the reads the relay makes.
type countingKV struct {
	jetstream.KeyValue
	gets atomic.Int64
}

func (c *countingKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	c.gets.Add(1)
	return c.KeyValue.Get(ctx, key)
}

// After its start scan the relay follows revisions only: values its writer
// delivered with DeliverCommitted are never read back, and a revision no
// writer delivered is read once its grace period passed and its records
// published.
func TestRelayReadsOnlyRevisionsNoWriterDelivered(t *testing.T) {
	f := newFixture(t)
	kv := &countingKV{KeyValue: f.kv}
	cfg := DefaultRelayConfig()
	cfg.Grace, cfg.RetryInterval = 200*time.Millisecond, 20*time.Millisecond
	r, err := NewRelay(kv, f.js, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	runRelay(t, r)
	// The relay is following once a value written now is delivered.
	f.put(t, "probe", rec("probe:1"))
	testenv.Eventually(t, 10*time.Second, func() error {
		if n, _ := f.pending(t, "probe"); n != 0 {
			return fmt.Errorf("probe not relayed")
		}
		return nil
	})
	before := kv.gets.Load()
	const writes = 20
	for i := range writes {
		key := fmt.Sprintf("w-%d", i)
		record := rec(fmt.Sprintf("w:%d", i))
		value, _ := json.Marshal(map[string]any{"lane": key, "outbox": []Record{record}})
		rev, err := f.kv.Put(context.Background(), key, value)
		if err != nil {
			t.Fatal(err)
		}
		cleared, _ := json.Marshal(map[string]any{"lane": key, "outbox": []Record{}})
		if err := r.DeliverCommitted(context.Background(), key, []Record{record}, cleared, rev); err != nil {
			t.Fatal(err)
		}
	}
	// A revision without a delivering writer, after those.
	f.put(t, "other", rec("other:1"))
	testenv.Eventually(t, 10*time.Second, func() error {
		if n, _ := f.pending(t, "other"); n != 0 || f.events(t)["other:1"] != 1 {
			return fmt.Errorf("other not relayed")
		}
		return nil
	})
	// Every grace period of the writes has passed by now (they came first).
	testenv.Eventually(t, 10*time.Second, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.waiting) != 0 {
			return fmt.Errorf("%d revisions still waiting", len(r.waiting))
		}
		return nil
	})
	if got := kv.gets.Load() - before; got != 1 {
		t.Fatalf("relay read %d values, want 1 (the revision no writer delivered)", got)
	}
	events := f.events(t)
	for i := range writes {
		if id := fmt.Sprintf("w:%d", i); events[id] != 1 {
			t.Fatalf("event %s published %d times", id, events[id])
		}
	}
}

// OnCleared tells the writer of a value handed to DeliverCommitted the
// revision its cleared form was written at, and that the stored value is
// that cleared form.
func TestRelayReportsTheClearOfACommittedValue(t *testing.T) {
	f := newFixture(t)
	type clearedAt struct{ committed, cleared uint64 }
	got := make(chan clearedAt, 1)
	cfg := DefaultRelayConfig()
	cfg.OnCleared = func(key string, committed, cleared uint64) {
		if key == "lane-c" {
			got <- clearedAt{committed, cleared}
		}
	}
	r, err := NewRelay(f.kv, f.js, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	record := rec("c:1")
	value, _ := json.Marshal(map[string]any{"lane": "lane-c", "outbox": []Record{record}})
	rev, err := f.kv.Put(context.Background(), "lane-c", value)
	if err != nil {
		t.Fatal(err)
	}
	cleared, _ := json.Marshal(map[string]any{"lane": "lane-c", "outbox": []Record{}})
	if err := r.DeliverCommitted(context.Background(), "lane-c", []Record{record}, cleared, rev); err != nil {
		t.Fatal(err)
	}
	var c clearedAt
	select {
	case c = <-got: // the relay is not running, so the clear was written inline
	case <-time.After(10 * time.Second):
		t.Fatal("OnCleared was not called")
	}
	entry, err := f.kv.Get(context.Background(), "lane-c")
	if err != nil {
		t.Fatal(err)
	}
	if c.committed != rev || c.cleared != entry.Revision() || string(entry.Value()) != string(cleared) {
		t.Fatalf("OnCleared(%d, %d); committed %d, stored revision %d: %s", c.committed, c.cleared, rev, entry.Revision(), entry.Value())
	}
}

// A drain reads only the keys its relay knows may hold unpublished records,
// not every head in the bucket, and publishes those.
func TestDrainReadsOnlyTheKeysItKnowsArePending(t *testing.T) {
	f := newFixture(t)
	const settled = 300
	for i := range settled {
		f.put(t, fmt.Sprintf("settled-%d", i))
	}
	kv := &countingKV{KeyValue: f.kv}
	cfg := DefaultRelayConfig()
	cfg.Grace = time.Minute // the watch leaves a new revision waiting
	r, err := NewRelay(kv, f.js, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	runRelay(t, r)
	relayState := func(ready func() bool, what string) {
		testenv.Eventually(t, 10*time.Second, func() error {
			r.mu.Lock()
			defer r.mu.Unlock()
			if !ready() {
				return fmt.Errorf("the relay has not %s yet", what)
			}
			return nil
		})
	}
	relayState(func() bool { return r.scanned }, "scanned the bucket")
	f.put(t, "other", rec("other:1")) // written by a writer that will not deliver it
	relayState(func() bool { _, ok := r.waiting["other"]; return ok }, "seen the new revision")
	before := kv.gets.Load()
	if err := r.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := kv.gets.Load() - before; got != 1 {
		t.Fatalf("drain read %d values, want 1 (the key waiting for its grace period)", got)
	}
	if n, _ := f.pending(t, "other"); n != 0 || f.events(t)["other:1"] != 1 {
		t.Fatal("drain did not publish and clear the waiting key")
	}
}

// A relay that has not finished a scan of the bucket cannot know what is
// pending: its drain sweeps every key.
func TestDrainBeforeAScanSweepsTheBucket(t *testing.T) {
	f := newFixture(t)
	f.put(t, "left", rec("left:1"))
	r, err := NewRelay(f.kv, f.js, DefaultRelayConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.pending(t, "left"); n != 0 || f.events(t)["left:1"] != 1 {
		t.Fatal("drain did not deliver the records left in the bucket")
	}
}

// A stored record that names its checkpoint is published as Resolve makes
// it, and is cleared once published; without Resolve it stays unpublished.
func TestRelayPublishesRecordsMadeWhole(t *testing.T) {
	f := newFixture(t)
	named := rec("w:1")
	named.Payload, named.CheckpointRef = json.RawMessage(`{"event_id":"w:1","checkpoint":null}`), "cp-1"
	f.put(t, "lane-w", named, rec("w:2"))
	plain, err := NewRelay(f.kv, f.js, DefaultRelayConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Deliver(context.Background(), "lane-w"); err == nil {
		t.Fatal("a record naming its checkpoint was published without Resolve")
	}
	if n, _ := f.pending(t, "lane-w"); n != 2 {
		t.Fatalf("%d records left, want both", n)
	}
	cfg := DefaultRelayConfig()
	var asked []string
	cfg.Resolve = func(_ context.Context, r Record) (Record, error) {
		asked = append(asked, r.CheckpointRef)
		r.Payload, r.CheckpointRef = json.RawMessage(`{"event_id":"w:1","checkpoint":{"id":"cp-1"}}`), ""
		return r, nil
	}
	r, err := NewRelay(f.kv, f.js, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Deliver(context.Background(), "lane-w"); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.pending(t, "lane-w"); n != 0 || len(asked) != 1 || asked[0] != "cp-1" {
		t.Fatalf("%d records left, Resolve asked for %v", n, asked)
	}
	if got := f.events(t); got["w:1"] != 1 || got["w:2"] != 1 {
		t.Fatalf("events %v", got)
	}
	st, err := f.js.Stream(context.Background(), topology.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMsg(context.Background(), 1) // records of one subject go in order
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get(jetstream.MsgIDHeader) != "w:1" || string(m.Data) != `{"event_id":"w:1","checkpoint":{"id":"cp-1"}}` {
		t.Fatalf("published %s %s", m.Header.Get(jetstream.MsgIDHeader), m.Data)
	}
}
