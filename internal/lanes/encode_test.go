package lanes

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/outbox"
)

// fullHead has every field set, so that a field the hand-written encoder
// forgets shows as a difference from encoding/json.
func fullHead(t *testing.T) *Head {
	h := &Head{
		Lane:               Lane{RunAgentID: "agent <1>", CheckpointNamespace: "ns\u2028"},
		CheckpointID:       "cp-2",
		ParentCheckpointID: "cp-1",
		Generation:         2,
		HeadHash:           "h2",
		SemanticHash:       "s2",
		State:              json.RawMessage(`{"successful_auto_compactions":1}`),
		RootTurnID:         "turn-1",
		Outbox: []outbox.Record{{Subject: "conversation.compact.activated", EventID: "cp-2:activated",
			Payload: json.RawMessage(`{"a":"<b>"}`)}},
		UpdatedAt: time.Date(2026, 12, 1, 10, 0, 0, 5, time.UTC),
	}
	v := reflect.ValueOf(h).Elem()
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("fullHead leaves %s unset: set it so the encoder is checked on it", v.Type().Field(i).Name)
		}
	}
	return h
}

func TestHeadEncodesAsEncodingJSON(t *testing.T) {
	h := fullHead(t)
	got, err := h.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("Head.Encode\n%s\nencoding/json\n%s", got, want)
	}
}
