package consumer

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A lane head stores its activated event without the checkpoint, naming
// the checkpoint record, which holds it: a processor stopped right after
// the head moved leaves the event unpublished, and the next one
// publishes it whole from the head and the record.
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
	if !strings.Contains(value, `"checkpoint":null}`) || !strings.Contains(value, `"checkpoint_ref":"cites-1"`) ||
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
