package consumer

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
)

// A lane head stores its activated event without the checkpoint, which
// the checkpoint record holds: a processor stopped right after the head
// moved leaves the event unpublished, and the next one publishes it whole
// from the head and the record.
func TestHeadCitesItsCheckpoint(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	first := startLocalAt(t, e, 0, stepHeadAdvanced)
	e.publish(t, engineBody(t, "cites-1", "cites", "", 40, nil), "cites-1")
	stopped(t, first)

	cp, err := e.checkpoint(t, "cites-1")
	if err != nil || cp == nil {
		t.Fatalf("checkpoint %+v (%v)", cp, err)
	}
	key, err := laneOf("cites").Key()
	if err != nil {
		t.Fatal(err)
	}
	value := storedValue(t, e.stores.Heads, key)
	if !strings.Contains(value, `"checkpoint":null}`) || !strings.Contains(value, `"outbox_cites":"cites-1:activated"`) ||
		strings.Contains(value, string(cp.Body)) {
		t.Fatalf("the head stores its event's checkpoint (%d bytes, checkpoint %d): %.300s", len(value), len(cp.Body), value)
	}

	second := startLocalAt(t, e, time.Hour, "")
	defer finish(t, second)
	ev := onlyEvent(t, e.awaitOutcome(t, "cites-1"))
	var want map[string]any
	mustJSON(t, cp.Body, &want)
	raw, _ := json.Marshal(ev.Body["checkpoint"])
	var got map[string]any
	mustJSON(t, raw, &got)
	if ev.str("kind") != "activated" || !reflect.DeepEqual(got, want) {
		t.Fatalf("published %s with checkpoint %v, want the stored one", ev.str("kind"), ev.Body["checkpoint"])
	}
}

// An activated event's payload is what json.Marshal makes of the whole
// event, although its checkpoint is put in without encoding/json's pass:
// with a checkpoint it leaves as it is, one it escapes for HTML, one it
// compacts, and none.
func TestActivatedRecordEncodesAsJSONMarshal(t *testing.T) {
	ev := events.Activated{
		Header: events.Header{V: 1, Kind: kindActivated, EventID: "r:activated", RequestID: "r <&>"},
		Status: StatusCompacted, CheckpointID: "r", Generation: 2, CheckpointHash: strings.Repeat("a", 64),
		RetainedEventIDs: []string{"e<1>"}, ArtifactIDs: []string{}, ProviderUsage: json.RawMessage(`[]`),
	}
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
		rec, err := activatedRecord("r:activated", ev, raw, "")
		if err != nil {
			t.Fatalf("%q: %v", checkpoint, err)
		}
		whole := ev
		whole.Checkpoint = raw
		want, err := json.Marshal(whole)
		if err != nil {
			t.Fatal(err)
		}
		if string(rec.Payload) != string(want) {
			t.Fatalf("checkpoint %q:\n got %s\nwant %s", checkpoint, rec.Payload, want)
		}
	}
}
