package lanes

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/outbox"
)

// activation is a plan's activated event for checkpoint id with body, as
// encoding/json writes it (the checkpoint last).
func activation(t *testing.T, id string, body json.RawMessage) outbox.Record {
	t.Helper()
	payload, err := json.Marshal(struct {
		CheckpointID string          `json:"checkpoint_id"`
		Checkpoint   json.RawMessage `json:"checkpoint"`
	}{id, body})
	if err != nil {
		t.Fatal(err)
	}
	return outbox.Record{Subject: "activated", EventID: id + ":activated", Payload: payload}
}

// A head stores its own activated event citing the checkpoint record, and
// gives it back whole (ResolveOutbox, OutboxOf). Records carried from an
// earlier head, resolved first, are stored whole: the head cites only its
// own checkpoint.
func TestHeadCitesItsCheckpointRecord(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	lane := Lane{"agent", "main"}
	bodies := map[string]json.RawMessage{"c1": json.RawMessage(`{"id":"c1","note":"<one>"}`), "c2": json.RawMessage(`{"id":"c2"}`)}
	for id, body := range bodies {
		if err := s.PutCheckpoint(ctx, &Checkpoint{ID: id, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	first := activation(t, "c1", bodies["c1"])
	rev, err := s.Advance(ctx, lane, 0, &Head{Lane: lane, CheckpointID: "c1", Outbox: []outbox.Record{first}, CheckpointBody: bodies["c1"]})
	if err != nil {
		t.Fatal(err)
	}
	stored, _, err := s.Head(ctx, lane)
	if err != nil {
		t.Fatal(err)
	}
	if stored.OutboxCites != first.EventID || strings.Contains(string(stored.Outbox[0].Payload), `"id":"c1"`) {
		t.Fatalf("stored head %+v, want its event citing c1", stored)
	}
	if err := s.ResolveOutbox(ctx, stored); err != nil || string(stored.Outbox[0].Payload) != string(first.Payload) || stored.OutboxCites != "" {
		t.Fatalf("resolved %s (%v), want %s", stored.Outbox[0].Payload, err, first.Payload)
	}

	second := activation(t, "c2", bodies["c2"])
	next := &Head{Lane: lane, CheckpointID: "c2", Outbox: append(stored.Outbox, second), CheckpointBody: bodies["c2"]}
	if _, err := s.Advance(ctx, lane, rev, next); err != nil {
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
	if n := strings.Count(string(entry.Value()), `"checkpoint":null}`); n != 1 || !strings.Contains(string(entry.Value()), `"outbox_cites":"c2:activated"`) {
		t.Fatalf("the second head cites %d events: %s", n, entry.Value())
	}
	records, err := s.OutboxOf(ctx, entry.Value())
	if err != nil || len(records) != 2 || string(records[0].Payload) != string(first.Payload) || string(records[1].Payload) != string(second.Payload) {
		t.Fatalf("OutboxOf = %v (%v), want both events whole", records, err)
	}
}
