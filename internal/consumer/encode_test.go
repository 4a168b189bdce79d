package consumer

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
)

func TestActivatedEncodeMatchesMarshal(t *testing.T) {
	for _, cp := range []json.RawMessage{
		nil,
		json.RawMessage(`{"summary":"x y","semantic":{"k":[1,2]}}`),
		json.RawMessage(`{"summary":"a <b> & c", "n": 1}`),
	} {
		ev := events.Activated{
			Header: header(&envelope{RequestID: "r", ThreadID: "t<1>"}, "r", "r:activated", kindActivated, time.Unix(0, 0)),
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

func TestCountValidArrayMatchesCountArray(t *testing.T) {
	for _, raw := range []string{
		`[]`, ` [ ] `, `[1]`, `[{"a":[1,2,{"b":"],\"["}]},"x",[3,4],null]`, "[\n {\"a\":1} ,\n\t{} ]",
		`[[],[],[]]`, `["\\"]`, `[1,2,3,4,5,6]`, `{"a":1}`, `"s"`,
		`[true, false , 12.5e3 ,"a b", -0]`, "[1\n]", "[ {} ,[ ] ]",
	} {
		for _, limit := range []int{3, 10} {
			wn, werr := countArray([]byte(raw), limit)
			gn, gerr := countValidArray([]byte(raw), limit)
			if wn != gn || (werr == nil) != (gerr == nil) {
				t.Errorf("%s limit %d: got %d %v, want %d %v", raw, limit, gn, gerr, wn, werr)
			}
		}
	}
}
