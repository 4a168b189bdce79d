package consumer

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/engine"
)

func TestActivatedEncodeMatchesMarshal(t *testing.T) {
	for _, cp := range []json.RawMessage{
		nil,
		json.RawMessage(`{"summary":"x y","semantic":{"k":[1,2]}}`),
		json.RawMessage(`{"summary":"a <b> & c", "n": 1}`),
	} {
		ev := events.Activated{
			Header: header(&envelope{RequestID: "r", Correlation: engine.Correlation{ThreadID: "t<1>"}}, "r", "r:activated", kindActivated, time.Unix(0, 0)),
			Status: StatusCompacted, CheckpointID: "r", ParentCheckpointID: nullable("p"), Generation: 2,
			RetainedEventIDs: []string{"e1"}, ArtifactIDs: []string{}, ProviderUsage: json.RawMessage(`[]`), Checkpoint: cp,
		}
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeActivated(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
	}
}
