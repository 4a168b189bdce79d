package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/cairnhq/cairn/events"
)

// The content-hash vectors of docs/canonical-json.md, through the engine's own
// payload encoder.
func TestContentHashVectors(t *testing.T) {
	cases := []struct {
		content   *string
		tool      map[string]any
		artifacts []string
		truncated bool
		want      string
	}{
		{ptr("implement the requested behavior"), nil, nil, false, "2bdd27bf9b99a8505106b92dfe213d30ef3db8e37a12fe4eb65bfa21970e4698"},
		{nil, map[string]any{"call_id": "call-1", "name": "test", "status": "success"}, []string{"a1"}, true,
			"a16da712fba5305ccf5d94e1bc7140e48d8b4aba7126ba7c0a5cf0a127e3c99b"},
	}
	for _, tc := range cases {
		if got, err := events.ContentHash(tc.content, tc.tool, tc.artifacts, tc.truncated); err != nil || got != tc.want {
			t.Errorf("ContentHashOf = %s, want %s (%v)", got, tc.want, err)
		}
	}
	r, err := events.NewRehydrationState(map[string]any{"todo": map[string]any{"revision": int64(1)}})
	if err != nil || r.Hash != "b9aa23955014a342b89349f43e530874c9f489dd72ce1e7e488d0b47a8a5cd2a" {
		t.Errorf("rehydration hash %s (%v)", r.Hash, err)
	}
	if e := event(t, 1, events.RoleUser, "x"); e.ProvenanceSHA256 != "b1e4ff039f83558a6feec68fee9cd5148af0eb44508c4ab90aa8cf0730453f94" {
		t.Errorf("direct_user provenance hash %s", e.ProvenanceSHA256)
	}
}

// Cairn decision 0.2 item 12: citations are event ids of any 1..200-byte
// shape, not only UUIDv7, so a lane with host-specific ids still compacts
// with a summary that cites them.
func TestNonUUIDEventIDsCanBeCited(t *testing.T) {
	req := fixtureRequest(t)
	for i := range req.Events {
		req.Events[i].EventID = fmt.Sprintf("msg_%d", i+1)
		req.Events[i].ArtifactIDs = replaceAll(req.Events[i].ArtifactIDs, artifactID(1), "artifact:log-1")
		req.Events[i] = seal(t, req.Events[i])
	}
	req.ActiveInputEventIDs = []string{"msg_6"}
	s := &scripted{reply: func(_ int, p Payload) (Summary, error) { return extractive{}.Summarize(context.Background(), p) }}
	res := mustCompact(t, req, s)
	sem := res.Checkpoint.Semantic
	if res.Status != events.StatusCompacted || sem.UserRequests[0].SourceEventID != "msg_1" || sem.ArtifactRefs[0].ArtifactID != "artifact:log-1" {
		t.Fatalf("status %s semantic %+v", res.Status, sem)
	}
}

func replaceAll(list []string, from, to string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		if s == from {
			s = to
		}
		out[i] = s
	}
	return out
}
