package lanes

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/outbox"
)

// activated is an activated event of checkpoint id, with strings that
// encoding/json escapes.
func activated(id string) events.Activated {
	return events.Activated{
		Header: events.Header{V: 1, Kind: events.KindActivated, EventID: id + ":activated", RequestID: id + " <&>",
			OccurredAt: time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)},
		Status: "compacted", CheckpointID: id, Generation: 2, CheckpointHash: strings.Repeat("a", 64),
		RetainedEventIDs: []string{"e<1>", "\u2028"}, ArtifactIDs: []string{}, ProviderUsage: json.RawMessage(`[ {"n": 1} ]`),
	}
}

// stored is the outbox record of ev as Cairn stores it: a null
// checkpoint, and the id of the checkpoint record.
func stored(t *testing.T, ev events.Activated) outbox.Record {
	t.Helper()
	ev.Checkpoint = nil
	payload, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return outbox.Record{Subject: events.SubjectActivated, EventID: ev.EventID, Payload: payload, CheckpointRef: ev.CheckpointID}
}

// whole is json.Marshal's bytes for ev with its checkpoint: what the
// events stream carries.
func whole(t *testing.T, ev events.Activated, checkpoint json.RawMessage) string {
	t.Helper()
	ev.Checkpoint = checkpoint
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A record made whole has json.Marshal's bytes for the whole event, with
// a checkpoint json.Marshal leaves as it is, one it escapes for HTML, one
// it compacts, and none; a record that names another checkpoint, or
// none, is left as it is.
func TestWithCheckpointEncodesAsJSONMarshal(t *testing.T) {
	ev := activated("r")
	rec := stored(t, ev)
	for _, checkpoint := range []string{
		`{"id":"r","semantic":{"goal":"ship"}}`,
		`{"id":"r","semantic":{"goal":"a <b> & c \u2028"}}`,
		"{ \"id\": \"r\",\n \"n\": [1, 2] }",
		"",
	} {
		var raw json.RawMessage // none: nil, which encoding/json writes as null
		if checkpoint != "" {
			raw = json.RawMessage(checkpoint)
		}
		got, err := WithCheckpoint(rec, "r", raw)
		if err != nil {
			t.Fatalf("%q: %v", checkpoint, err)
		}
		if want := whole(t, ev, raw); string(got.Payload) != want || got.CheckpointRef != "" {
			t.Fatalf("checkpoint %q:\n got %s (naming %q)\nwant %s", checkpoint, got.Payload, got.CheckpointRef, want)
		}
	}
	if got, err := WithCheckpoint(rec, "other", json.RawMessage(`{}`)); err != nil || string(got.Payload) != string(rec.Payload) || got.CheckpointRef != "r" {
		t.Fatalf("a record naming another checkpoint became %s (%v)", got.Payload, err)
	}
	plain := outbox.Record{Subject: "h", EventID: "j", Payload: json.RawMessage(`{"x":1}`)}
	if got, err := WithCheckpoint(plain, "", json.RawMessage(`{}`)); err != nil || string(got.Payload) != `{"x":1}` {
		t.Fatalf("a record naming no checkpoint became %s (%v)", got.Payload, err)
	}
}

// A lane head stores its activated event without the checkpoint, naming
// the checkpoint record; records carried to the next head keep naming
// theirs. The relay's Resolve makes each whole from its record, and a
// record whose checkpoint is not stored is an internal error.
func TestHeadStoresItsEventNamingTheCheckpointRecord(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	lane := Lane{"agent", "main"}
	bodies := map[string]json.RawMessage{"c1": json.RawMessage(`{"id":"c1","note":"<one>"}`), "c2": json.RawMessage(`{"id":"c2"}`)}
	for id, body := range bodies {
		if err := s.PutCheckpoint(ctx, &Checkpoint{ID: id, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	first, second := stored(t, activated("c1")), stored(t, activated("c2"))
	rev, err := s.Advance(ctx, lane, 0, &Head{Lane: lane, CheckpointID: "c1", Outbox: []outbox.Record{first}, CheckpointBody: bodies["c1"]})
	if err != nil {
		t.Fatal(err)
	}
	head, _, err := s.Head(ctx, lane)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Advance(ctx, lane, rev, &Head{Lane: lane, CheckpointID: "c2", Outbox: append(head.Outbox, second)}); err != nil {
		t.Fatal(err)
	}
	key, err := lane.Key()
	if err != nil {
		t.Fatal(err)
	}
	entry, err := s.heads.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	value := string(entry.Value())
	if strings.Contains(value, `"note"`) || strings.Count(value, `"checkpoint":null`) != 2 ||
		!strings.Contains(value, `"checkpoint_ref":"c1"`) || !strings.Contains(value, `"checkpoint_ref":"c2"`) {
		t.Fatalf("the head does not store its events naming their checkpoints: %s", value)
	}
	head, _, err = s.Head(ctx, lane)
	if err != nil || len(head.Outbox) != 2 {
		t.Fatalf("head %+v (%v)", head, err)
	}
	for i, id := range []string{"c1", "c2"} {
		got, err := s.Resolve(ctx, head.Outbox[i])
		if want := whole(t, activated(id), bodies[id]); err != nil || string(got.Payload) != want || got.CheckpointRef != "" {
			t.Fatalf("resolved %s (%v), want %s", got.Payload, err, want)
		}
	}
	missing := stored(t, activated("c3"))
	if _, err := s.Resolve(ctx, missing); errcode.Code(err) != errcode.Internal {
		t.Fatalf("a record naming a checkpoint that is not stored: %v", err)
	}
}

// Published makes the head's own event whole from the body it holds and
// leaves a carried one, which names another checkpoint, to the relay.
func TestPublishedUsesTheBodyItHolds(t *testing.T) {
	body := json.RawMessage(`{"id":"c2"}`)
	h := &Head{CheckpointID: "c2", Outbox: []outbox.Record{stored(t, activated("c1")), stored(t, activated("c2"))}, CheckpointBody: body}
	records, err := h.Published()
	if err != nil {
		t.Fatal(err)
	}
	if records[0].CheckpointRef != "c1" || string(records[1].Payload) != whole(t, activated("c2"), body) || records[1].CheckpointRef != "" {
		t.Fatalf("published %+v", records)
	}
	if h.Outbox[1].CheckpointRef != "c2" {
		t.Fatal("Published changed the head's records")
	}
	h.CheckpointBody = nil
	if records, err = h.Published(); err != nil || records[1].CheckpointRef != "c2" {
		t.Fatalf("without the body the event is left to the relay: %+v (%v)", records, err)
	}
}
