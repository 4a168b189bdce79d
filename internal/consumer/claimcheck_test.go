package consumer

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/streamread"
	"github.com/nats-io/nats.go/jetstream"
)

// laggingStore is a real object store read through a replica that has not
// caught up: its first reads report the object as not found although the
// producer's put has completed.
type laggingStore struct {
	jetstream.ObjectStore
	getInfoMisses, getMisses atomic.Int32 // reads still to answer "not found"
}

func (s *laggingStore) GetInfo(ctx context.Context, name string, opts ...jetstream.GetObjectInfoOpt) (*jetstream.ObjectInfo, error) {
	if s.getInfoMisses.Add(-1) >= 0 {
		return nil, jetstream.ErrObjectNotFound
	}
	return s.ObjectStore.GetInfo(ctx, name, opts...)
}

func (s *laggingStore) Get(ctx context.Context, name string, opts ...jetstream.GetObjectOpt) (jetstream.ObjectResult, error) {
	if s.getMisses.Add(-1) >= 0 {
		return nil, jetstream.ErrObjectNotFound
	}
	return s.ObjectStore.Get(ctx, name, opts...)
}

// putEventsObject stores the events of spec's request as the object name
// and returns spec reading its events from that object.
func putEventsObject(t *testing.T, e *env, spec reqSpec, name string) reqSpec {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	var m map[string]any
	mustJSON(t, e.body(spec), &m)
	if _, err := e.stores.Lanes.PutBytes(ctx, name, mustMarshal(t, m["events"])); err != nil {
		t.Fatal(err)
	}
	spec.extra = map[string]any{"events": nil, "events_object": name}
	return spec
}

// An object the producer has put is read even when the first reads, of its
// metadata or of the object itself, are answered by a replica that does not
// have it yet.
func TestEventsObjectReadThroughALaggingReplica(t *testing.T) {
	cases := []struct {
		name             string
		getInfo, getMiss int32
	}{
		{"info lags", 3, 0},
		{"object lags", 0, 2},
		{"both lag", 2, 1},
	}
	e := singleEnv(t)
	lagging := &laggingStore{ObjectStore: e.stores.Lanes}
	stores := *e.stores
	stores.Lanes = lagging
	served := &env{t: t, js: e.js, stores: &stores}
	served.start(t, testConfig(), nil, nil)
	for i, c := range cases {
		id := fmt.Sprintf("lag-%d", i)
		spec := putEventsObject(t, e, reqSpec{id: id, lane: id}, id+"-events")
		lagging.getInfoMisses.Store(c.getInfo)
		lagging.getMisses.Store(c.getMiss)
		e.publish(t, e.body(spec), spec.id)
		if ev := onlyEvent(t, e.awaitOutcome(t, spec.id)); ev.str("kind") != "activated" {
			t.Fatalf("%s: %v", c.name, ev.Body)
		}
	}
}

// A truly missing object still fails with events_object_missing, once the
// bounded wait for a lagging replica is over.
func TestMissingEventsObjectFailsAfterABoundedWait(t *testing.T) {
	e := singleEnv(t)
	e.start(t, testConfig(), nil, nil)
	spec := reqSpec{id: "gone-1", lane: "gone", extra: map[string]any{"events": nil, "events_object": "never-put"}}
	begin := time.Now()
	e.publish(t, e.body(spec), spec.id)
	ev := onlyEvent(t, e.awaitOutcome(t, spec.id))
	took := time.Since(begin)
	if ev.code() != errcode.EventsObjectMissing {
		t.Fatalf("missing object: %v", ev.Body)
	}
	var wait time.Duration
	for _, w := range streamread.LagWaits {
		wait += w
	}
	if took < wait || took > wait+10*time.Second {
		t.Fatalf("events_object_missing after %v, want the %v wait and not much more", took, wait)
	}
	t.Logf("events_object_missing after %v (waits total %v)", took, wait)
}
