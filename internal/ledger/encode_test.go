package ledger

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/outbox"
)

// Entries are stored with AppendJSON; the bytes must be json.Marshal's, so
// that a value written before and after the encoder changed compares equal.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	at := time.Date(2026, 11, 29, 23, 1, 2, 345678901, time.UTC)
	cp := json.RawMessage(`{"created_at":"2026-11-29T23:01:02Z","summary":"a <b> & c","semantic":{"k":["x y","\u2028"]}}`)
	rec := outbox.Record{Subject: "cairn.compaction.activated", EventID: "r-1:activated",
		Headers: map[string]string{"traceparent": "00-abc-def-01", "Cairn-Event-Kind": "activated"},
		Payload: json.RawMessage(`{"kind":"activated","checkpoint":` + string(cp) + `}`)}
	plan := &lanes.Head{Lane: lanes.Lane{RunAgentID: "agent \"q\"", CheckpointNamespace: "main"}, CheckpointID: "r-1",
		Generation: 3, HeadHash: "h", SemanticHash: "s", State: json.RawMessage(`{"a": 1}`),
		Outbox:    []outbox.Record{rec, {Subject: "cairn.memory.harvest", EventID: "harvest:t:r-1", Payload: json.RawMessage(`{"transcript":"é"}`)}},
		UpdatedAt: at}
	for _, e := range []*Entry{
		{RequestID: "r-0", ContentHash: "00", State: Started},
		{RequestID: "r-1", ContentHash: "ab", State: Stored, Round: 2, Retryable: true,
			Attempts: []Attempt{{N: 1, RequestedAt: at, Deadline: at.Add(time.Minute)},
				{N: 2, RequestedAt: at, Deadline: at, Done: true, Usage: json.RawMessage(`{"input_tokens":3}`)}},
			Plan:       plan,
			Checkpoint: &lanes.Checkpoint{ID: "r-1", Hash: "h", ParentID: "r-0", ParentHash: "g", Generation: 3, Body: cp},
			HarvestCut: []string{"e-1", "e \"2\"", "\u2028"},
			Outcome:    &rec, UpdatedAt: at.In(time.FixedZone("x", -7200))},
		{RequestID: "r-2", State: Activated, Plan: &lanes.Head{}, Checkpoint: &lanes.Checkpoint{}, Outcome: &outbox.Record{Headers: map[string]string{}}},
	} {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("entry %s:\n got %s\nwant %s", e.RequestID, got, want)
		}
	}
}
