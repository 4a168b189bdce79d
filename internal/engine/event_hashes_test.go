package engine

import (
	"encoding/json"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
)

// wireEvent is an event as a producer writes it: a JSON object.
func wireEvent(t *testing.T, e events.InputEvent, drop ...string) map[string]any {
	t.Helper()
	b, err := json.Marshal(e.Map())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range drop {
		delete(m, k)
	}
	return m
}

func decodeWire(t *testing.T, m map[string]any) (events.InputEvent, error) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var e events.InputEvent
	err = json.Unmarshal(b, &e)
	return e, err
}

func TestOmittedHashesAreComputed(t *testing.T) {
	sealed := event(t, 1, events.RoleTool, "\x1b[31mred\x1b[0m 1e-07", withTool(map[string]any{"call_id": "c", "ratio": 1e21}))
	for _, drop := range [][]string{{"content_hash"}, {"provenance_sha256"}, {"content_hash", "provenance_sha256"}} {
		got, err := decodeWire(t, wireEvent(t, sealed, drop...))
		if err != nil {
			t.Fatalf("without %v: %v", drop, err)
		}
		if got.ContentHash != sealed.ContentHash || got.ProvenanceSHA256 != sealed.ProvenanceSHA256 {
			t.Fatalf("without %v: hashes %s %s, want %s %s", drop, got.ContentHash, got.ProvenanceSHA256, sealed.ContentHash, sealed.ProvenanceSHA256)
		}
	}
	m := wireEvent(t, sealed)
	m["content_hash"] = nil
	if _, err := decodeWire(t, m); err != nil {
		t.Fatalf("null content_hash: %v", err)
	}
}

func TestHashErrorsNameTheEventAndField(t *testing.T) {
	sealed := event(t, 3, events.RoleUser, "hello")
	const wrong = "0000000000000000000000000000000000000000000000000000000000000000"
	for _, field := range []string{"content_hash", "provenance_sha256"} {
		m := wireEvent(t, sealed)
		m[field] = wrong
		_, err := decodeWire(t, m)
		e := errcode.As(err)
		if e == nil || e.Code != errcode.InvalidEvent {
			t.Fatalf("%s: err = %v, want %s", field, err, errcode.InvalidEvent)
		}
		want := map[string]any{"event_id": sealed.EventID, "field": field, "received": wrong}
		for k, v := range want {
			if e.Details[k] != v {
				t.Errorf("%s: details[%s] = %v, want %v (details %v)", field, k, e.Details[k], v, e.Details)
			}
		}
		expected := sealed.ContentHash
		if field == "provenance_sha256" {
			expected = sealed.ProvenanceSHA256
		}
		if e.Details["expected"] != expected {
			t.Errorf("%s: details[expected] = %v, want %s", field, e.Details["expected"], expected)
		}
	}
}

func TestMissingEventFieldsAreListed(t *testing.T) {
	m := wireEvent(t, event(t, 2, events.RoleUser, "x"), "role", "chat_seq")
	_, err := decodeWire(t, m)
	e := errcode.As(err)
	if e == nil {
		t.Fatalf("err = %v", err)
	}
	got, _ := e.Details["missing_fields"].([]any)
	if len(got) != 2 || got[0] != "chat_seq" || got[1] != "role" {
		t.Fatalf("missing_fields = %v, want [chat_seq role]", e.Details["missing_fields"])
	}
}
