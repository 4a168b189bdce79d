package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// failing publishes through js except for one event id (read from the
// payload), which fails.
type failing struct {
	js   jetstream.JetStream
	fail string

	mu   sync.Mutex
	sent []string
}

func (p *failing) PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	var body struct {
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal(msg.Data, &body); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.sent = append(p.sent, body.EventID)
	p.mu.Unlock()
	if body.EventID == p.fail {
		return nil, errors.New("publish refused")
	}
	return p.js.PublishMsg(ctx, msg, opts...)
}

func harvestRec(id string) Record {
	return Record{Subject: topology.SubjectHarvest, EventID: id, Payload: json.RawMessage(`{"event_id":"` + id + `"}`)}
}

func TestDeliverCommittedPublishesEveryRecordAndClears(t *testing.T) {
	f := newFixture(t)
	records := []Record{rec("x:activated"), harvestRec("harvest:x")}
	rev := f.put(t, "lane-x", records...)
	var mu sync.Mutex
	var reported []string
	cfg := DefaultRelayConfig()
	cfg.OnPublish = func(r Record, _ time.Duration) { mu.Lock(); reported = append(reported, r.EventID); mu.Unlock() }
	r, err := NewRelay(f.kv, f.js, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	cleared, _ := json.Marshal(map[string]any{"lane": "x", "generation": 7, "outbox": []Record{}})
	if err := r.DeliverCommitted(context.Background(), "lane-x", records, cleared, rev); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.pending(t, "lane-x"); n != 0 {
		t.Fatalf("%d records left", n)
	}
	if got := f.events(t); got["x:activated"] != 1 {
		t.Fatalf("activated: %v", got)
	}
	if len(reported) != 2 {
		t.Fatalf("OnPublish saw %v", reported)
	}
}

// A failed publication leaves every record in place (nothing is cleared)
// and is reported; the records that did publish are repeated later under
// the same ids.
func TestDeliverCommittedFailureKeepsRecords(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []Record
		fail    string
		wantTry int // publications attempted
	}{
		{"distinct subjects", []Record{rec("y:activated"), harvestRec("harvest:y")}, "harvest:y", 2},
		// One subject: in order, and nothing after the failed record.
		{"same subject", []Record{rec("z:1"), rec("z:2")}, "z:1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rev := f.put(t, "lane", tc.records...)
			pub := &failing{js: f.js, fail: tc.fail}
			r, err := NewRelay(f.kv, pub, DefaultRelayConfig(), nil)
			if err != nil {
				t.Fatal(err)
			}
			err = r.DeliverCommitted(context.Background(), "lane", tc.records, []byte(`{"outbox":[]}`), rev)
			if err == nil {
				t.Fatal("a failed publication was not reported")
			}
			if n, _ := f.pending(t, "lane"); n != len(tc.records) {
				t.Fatalf("%d of %d records left", n, len(tc.records))
			}
			if len(pub.sent) != tc.wantTry {
				t.Fatalf("attempted %v, want %d", pub.sent, tc.wantTry)
			}
		})
	}
}

// While Run runs, DeliverCommitted returns once the records are published
// and the relay writes the cleared value itself; the clears still queued
// when Run stops are written before Run returns.
func TestDeliverCommittedQueuesClearWhileRunning(t *testing.T) {
	f := newFixture(t)
	r, err := NewRelay(f.kv, f.js, DefaultRelayConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	testenv.Eventually(t, 5*time.Second, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.clearing {
			return errors.New("clear loop not running yet")
		}
		return nil
	})
	const lanes = 20
	for i := range lanes {
		key := fmt.Sprintf("lane-q%d", i)
		records := []Record{rec(key + ":activated"), harvestRec("harvest:" + key)}
		rev := f.put(t, key, records...)
		cleared, _ := json.Marshal(map[string]any{"lane": key, "generation": 7, "outbox": []Record{}})
		if err := r.DeliverCommitted(context.Background(), key, records, cleared, rev); err != nil {
			t.Fatal(err)
		}
		if got := f.events(t); got[key+":activated"] != 1 {
			t.Fatalf("%s not published when DeliverCommitted returned: %v", key, got)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range lanes {
		if n, _ := f.pending(t, fmt.Sprintf("lane-q%d", i)); n != 0 {
			t.Fatalf("lane-q%d: %d records left after Run returned", i, n)
		}
	}
	// Once Run returned nothing is queued: the writer clears inline.
	records := []Record{rec("after:activated")}
	rev := f.put(t, "lane-after", records...)
	if err := r.DeliverCommitted(context.Background(), "lane-after", records, []byte(`{"outbox":[]}`), rev); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.pending(t, "lane-after"); n != 0 {
		t.Fatalf("%d records left after an inline clear", n)
	}
}
