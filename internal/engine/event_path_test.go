package engine

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/cairnhq/cairn/errcode"
)

// An event error names where in the request the event is, as well as the
// event's own field: a producer with a 10 000-event lane should not have to
// search for the id.
func TestEventErrorsGiveTheirPath(t *testing.T) {
	data, err := os.ReadFile("../../examples/small-lane.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(laneEvents []any)
		path   string
	}{
		{"wrong content hash", func(ev []any) { ev[3].(map[string]any)["content_hash"] = zeros64 }, "events[3].content_hash"},
		{"unknown role", func(ev []any) { ev[2].(map[string]any)["role"] = "system" }, "events[2].role"},
		{"content of the wrong type", func(ev []any) { ev[1].(map[string]any)["content"] = 7 }, "events[1].content"},
	}
	for _, c := range cases {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		c.mutate(m["events"].([]any))
		body, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = DecodeRequest(body)
		e := errcode.As(err)
		if e == nil || e.Code != errcode.InvalidEvent {
			t.Fatalf("%s: err = %v, want %s", c.name, err, errcode.InvalidEvent)
		}
		if e.Details["path"] != c.path {
			t.Errorf("%s: details.path = %v, want %s (details %v)", c.name, e.Details["path"], c.path, e.Details)
		}
	}
}

const zeros64 = "0000000000000000000000000000000000000000000000000000000000000000"
