package service

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cairnhq/cairn/events"
)

// encodeStatus writes what json.Marshal writes, with and without an
// outcome, for ids that need escaping too.
func TestEncodeStatusIsMarshal(t *testing.T) {
	replies := []events.StatusReply{
		{RequestID: "r-1", State: events.StateUnknown},
		{RequestID: "r<&>\u2028\"", StreamSequence: 7, State: events.StateActivated, Outcome: &events.StatusOutcome{
			Subject: events.SubjectActivated, EventID: "r<&>\u2028\":activated", Event: json.RawMessage(`{"v":1,"kind":"activated","nested":{"a":[1,2.5,"x"]}}`),
		}},
	}
	for _, r := range replies {
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeStatus(&r)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("encodeStatus = %s, %v\njson.Marshal = %s", got, err, want)
		}
	}
}
