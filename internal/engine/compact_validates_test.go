package engine

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
)

// decodedFixture decodes the fixture request, whose tool event carries a
// nested tool object, so that every kind of JSON value is in its events.
func decodedFixture(t testing.TB) *Request {
	t.Helper()
	built := fixtureRequest(t)
	built.Events[1] = event(t, 2, events.RoleTool, strings.Repeat("t", 6000), withTool(map[string]any{
		"call_id": "call-1", "name": "test", "status": "success",
		"args": map[string]any{"n": int64(3), "flags": []any{true, nil, "x", canonicalNumber("1.5")}},
	}), withArtifacts(artifactID(1)))
	req, err := DecodeRequest(fixtureJSON(t, built, nil))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// toolArgs is the decoded fixture's nested tool object.
func toolArgs(r *Request) map[string]any { return r.Events[1].Tool["args"].(map[string]any) }

// Compact validates the request it is given: events changed after
// DecodeRequest, in place or replaced, are rejected as the decoder would
// reject them.
func TestCompactRejectsEventsChangedAfterDecoding(t *testing.T) {
	for _, tc := range []struct {
		name, code, message string
		change              func(r *Request)
	}{
		{"an event field assigned", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) { r.Events[2].ContentHash = strings.Repeat("b", 64) }},
		{"an event role assigned", errcode.InvalidEvent, "event role is invalid",
			func(r *Request) { r.Events[0].Role = "system" }},
		{"content written through its pointer", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) { *r.Events[0].Content = "changed" }},
		{"content pointer replaced", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) { r.Events[0].Content = ptr("changed") }},
		{"token count written through its pointer", errcode.InvalidEvent, "event token count is invalid",
			func(r *Request) { *r.Events[3].TokenCount = -1 }},
		{"truncated flag flipped", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) { r.Events[3].Truncated = true }},
		{"artifact id edited in place", errcode.InvalidEvent, "event artifact IDs are invalid",
			func(r *Request) { r.Events[1].ArtifactIDs[0] = "" }},
		{"artifact id appended", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) { r.Events[1].ArtifactIDs = append(r.Events[1].ArtifactIDs, artifactID(2)) }},
		{"tool member changed in place", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) { r.Events[1].Tool["status"] = "failure" }},
		{"tool member added", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) { r.Events[1].Tool["extra"] = nil }},
		{"tool member renamed", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) { delete(r.Events[1].Tool, "status"); r.Events[1].Tool["state"] = "success" }},
		{"nested list element changed in place", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) { toolArgs(r)["flags"].([]any)[1] = false }},
		{"number replaced by its text", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) { toolArgs(r)["n"] = "3" }},
		{"tool made non-canonical", errcode.InvalidEvent, "event tool projection is invalid",
			func(r *Request) { toolArgs(r)["n"] = math.Inf(1) }},
		{"empty tool for none", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) { r.Events[0].Tool = map[string]any{} }},
		{"tool removed", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) { r.Events[1].Tool = nil }},
		{"provenance changed in place", errcode.InvalidEvent, "provenance hash does not match",
			func(r *Request) { r.Events[0].Provenance.(map[string]any)["origin"] = "derived" }},
		{"events replaced", errcode.InvalidEvent, "content hash does not match",
			func(r *Request) {
				r.Events = slices.Clone(r.Events)
				r.Events[4].ContentHash = strings.Repeat("c", 64)
			}},
		{"events cut short", errcode.InvalidRequest, "active input event IDs are invalid",
			func(r *Request) { r.Events = r.Events[:3] }},
		{"events reordered", errcode.InvalidRequest, "compaction events are not one ordered lane",
			func(r *Request) { r.Events[2], r.Events[3] = r.Events[3], r.Events[2] }},
		{"request agent changed", errcode.InvalidRequest, "compaction events are not one ordered lane",
			func(r *Request) { r.RunAgentID = "agent-2" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := decodedFixture(t)
			tc.change(req)
			_, err := Compact(context.Background(), req, validSummarizer(), fixedNow)
			if e := wantCode(t, err, tc.code); e.Message != tc.message {
				t.Fatalf("message %q, want %q", e.Message, tc.message)
			}
		})
	}
}
