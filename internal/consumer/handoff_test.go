package consumer

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/internal/topology"
)

// A cut is handed once, and only to the job of its request sequence,
// request id and cut; the oldest cuts go first past the bounds, and a cut
// too large to hold is not held.
func TestCutHandoffBounds(t *testing.T) {
	var h cutHandoff
	entries := []facts.Entry{{ID: "e1", Role: "user", Content: "we use pnpm"}}
	h.put(1, "r1", []string{"e1"}, entries)
	for name, c := range map[string]struct {
		seq uint64
		id  string
		cut []string
	}{"another sequence": {2, "r1", []string{"e1"}}, "another request": {1, "r2", []string{"e1"}}, "another cut": {1, "r1", []string{"e1", "e2"}}} {
		if _, ok := h.take(c.seq, c.id, c.cut); ok {
			t.Errorf("%s: the cut was handed over", name)
		}
	}
	if got, ok := h.take(1, "r1", []string{"e1"}); !ok || !reflect.DeepEqual(got, entries) {
		t.Fatalf("take: %v %v", got, ok)
	}
	if _, ok := h.take(1, "r1", []string{"e1"}); ok {
		t.Fatal("a cut was handed over twice")
	}

	for seq := range uint64(maxHandoffCuts + 2) {
		h.put(seq+10, "r", nil, nil)
	}
	if _, ok := h.take(10, "r", nil); ok {
		t.Error("the oldest cut outlived the count bound")
	}
	if _, ok := h.take(maxHandoffCuts+11, "r", nil); !ok {
		t.Error("the newest cut was not held")
	}

	big := []facts.Entry{{Content: strings.Repeat("x", maxHandoffBytes/4+1)}}
	h.put(1, "big", nil, big)
	if _, ok := h.take(1, "big", nil); ok {
		t.Error("a cut over a quarter of the byte bound was held")
	}
	quarter := []facts.Entry{{Content: strings.Repeat("x", maxHandoffBytes/4)}}
	for seq := range uint64(5) {
		h.put(100+seq, "q", nil, quarter)
	}
	if _, ok := h.take(100, "q", nil); ok || h.bytes > maxHandoffBytes {
		t.Errorf("the byte bound did not hold: %d bytes held", h.bytes)
	}
}

// The harvest job of a compaction run in this process takes its cut from
// the compaction: with the request deleted from the stream, the job still
// reads its cut, once. Afterwards it would read the stream.
func TestCutEntriesHandedOverInProcess(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	r := e.start(t, testConfig(), nil, nil)
	ctx := context.Background()
	spec := reqSpec{id: "hand-1", lane: "hand"}
	body := e.body(spec)
	seq := e.publish(t, body, spec.id).Sequence
	if ev := onlyEvent(t, e.awaitOutcome(t, spec.id)); ev.Subject != topology.SubjectActivated {
		t.Fatalf("want activated, got %s %v", ev.Subject, ev.Body)
	}
	var cut []string
	for _, j := range e.streamEvents(t, topology.StreamHarvest) {
		if j.str("head_entry_id") == spec.id {
			for _, id := range j.Body["entry_ids"].([]any) {
				cut = append(cut, id.(string))
			}
		}
	}
	if len(cut) == 0 {
		t.Fatal("no harvest job with a cut")
	}
	stream, err := e.js.Stream(ctx, topology.StreamRequests)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(ctx, seq); err != nil {
		t.Fatal(err)
	}
	got, err := r.p.CutEntries(ctx, seq, spec.id, cut)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Events []map[string]any `json:"events"`
	}
	mustJSON(t, body, &m)
	var want []facts.Entry
	for _, ev := range m.Events {
		for _, id := range cut {
			if ev["event_id"] == id {
				want = append(want, facts.Entry{ID: id, Role: ev["role"].(string), Content: fmt.Sprint(ev["content"])})
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("handed cut:\n got %+v\nwant %+v", got, want)
	}
	if _, err := r.p.CutEntries(ctx, seq, spec.id, cut); errcode.Code(err) != errcode.HarvestFailed {
		t.Fatalf("second read: %v, want harvest_failed (the request is gone)", err)
	}
}
