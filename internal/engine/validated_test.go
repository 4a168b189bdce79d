package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
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
	if req.validatedEvents == nil {
		t.Fatal("the decoded fixture has no record of its events")
	}
	return req
}

// toolArgs is the decoded fixture's nested tool object.
func toolArgs(r *Request) map[string]any { return r.Events[1].Tool["args"].(map[string]any) }

// builtInCode is r as a caller would build it in code: the same values,
// no record of a decoding.
func builtInCode(r *Request) *Request {
	c := *r
	c.validatedEvents = nil
	return &c
}

func sameError(a, b error) bool {
	ea, eb := errcode.As(a), errcode.As(b)
	if ea == nil || eb == nil {
		return a == nil && b == nil
	}
	return ea.Code == eb.Code && ea.Message == eb.Message && reflect.DeepEqual(ea.Details, eb.Details)
}

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
			if want := builtInCode(req).Validate(); !sameError(err, want) {
				t.Fatalf("decoded request fails with %v, built in code with %v", err, want)
			}
		})
	}
}

func TestRecordMatchesEqualValuesOnly(t *testing.T) {
	req := decodedFixture(t)
	if req.validatedEvents == nil || !req.validatedEvents.matches(req.Events) {
		t.Fatal("decoded events do not match their own record")
	}
	// Equal values in new variables are the values that passed.
	req.Events = slices.Clone(req.Events)
	req.Events[0].Content = ptr(strings.Clone(*req.Events[0].Content))
	req.Events[1].Tool = maps.Clone(req.Events[1].Tool)
	req.Events[1].ArtifactIDs = slices.Clone(req.Events[1].ArtifactIDs)
	if !req.validatedEvents.matches(req.Events) {
		t.Fatal("equal values do not match the record")
	}
	mustCompact(t, req, validSummarizer())
	// Protected is read by neither Validate nor the lane rule.
	req.Events[0].Protected = !req.Events[0].Protected
	if !req.validatedEvents.matches(req.Events) {
		t.Fatal("protected flag is recorded")
	}
	if req.validatedEvents.matches(req.Events[1:]) || (*eventsRecord)(nil).matches(req.Events) {
		t.Fatal("a record matched other events")
	}
}

// TestRecordCoversEveryValidatedField fails when InputEvent gains a field:
// if Validate reads it, recordEvents and matches must cover it too.
func TestRecordCoversEveryValidatedField(t *testing.T) {
	var fields []string
	for f := range reflect.TypeFor[events.InputEvent]().Fields() {
		fields = append(fields, f.Name)
	}
	want := []string{"EventID", "RunAgentID", "ChatSeq", "LaneEventOrdinal", "CheckpointNamespace", "Role",
		"Provenance", "ProvenanceSHA256", "ContentHash", "Content", "Tool", "ArtifactIDs", "Truncated",
		"Protected", "TokenCount"}
	if !slices.Equal(fields, want) {
		t.Fatalf("InputEvent fields %v; update recordEvents, matches and this list", fields)
	}
}

// TestChangedDecodedEventsFailAsBuiltInCode changes one value anywhere in
// a decoded request's events, at random, and checks that validation fails
// (or passes) exactly as for the same request built in code.
func TestChangedDecodedEventsFailAsBuiltInCode(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 2000 {
		req := decodedFixture(t)
		what := changeAtRandom(rng, req)
		got, want := req.Validate(), builtInCode(req).Validate()
		if !sameError(got, want) {
			t.Fatalf("change %d (%s): decoded %v, built in code %v", i, what, got, want)
		}
	}
}

// changeAtRandom changes one value of one event of r and says which.
func changeAtRandom(rng *rand.Rand, r *Request) string {
	e := &r.Events[rng.IntN(len(r.Events))]
	switch rng.IntN(10) {
	case 0:
		e.ChatSeq += int64(rng.IntN(3)) - 1
		return "chat_seq"
	case 1:
		e.Role = []string{events.RoleUser, events.RoleAssistant, events.RoleTool}[rng.IntN(3)]
		return "role"
	case 2:
		if e.Content != nil {
			*e.Content += "!"
		}
		return "content"
	case 3:
		if e.TokenCount != nil {
			*e.TokenCount = int64(rng.IntN(3)) - 1
		}
		return "token_count"
	case 4:
		e.Truncated = !e.Truncated
		return "truncated"
	case 5:
		e.Protected = !e.Protected
		return "protected"
	case 6:
		e.ContentHash = []string{e.ContentHash, e.ProvenanceSHA256, strings.Repeat("b", 64)}[rng.IntN(3)]
		return "content_hash"
	case 7:
		if len(e.ArtifactIDs) > 0 {
			e.ArtifactIDs[0] = []string{"", artifactID(1), artifactID(9)}[rng.IntN(3)]
		}
		return "artifact_ids"
	case 8:
		return "provenance " + changeTree(rng, e.Provenance)
	default:
		return "tool " + changeTree(rng, mapOrNil(e.Tool))
	}
}

// changeTree changes one member of a decoded JSON object or list in place,
// descending at random; it leaves a scalar as it is.
func changeTree(rng *rand.Rand, v any) string {
	replacements := []any{nil, true, "x", canonicalNumber("3"), canonicalNumber("1.5"), map[string]any{}, []any{}}
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		if len(keys) == 0 || rng.IntN(4) == 0 {
			x[fmt.Sprint("k", rng.IntN(3))] = replacements[rng.IntN(len(replacements))]
			return "member set"
		}
		k := keys[rng.IntN(len(keys))]
		switch rng.IntN(3) {
		case 0:
			delete(x, k)
			return "member deleted"
		case 1:
			x[k] = replacements[rng.IntN(len(replacements))]
			return "member replaced"
		}
		return k + ": " + changeTree(rng, x[k])
	case []any:
		if len(x) == 0 {
			return "empty list"
		}
		i := rng.IntN(len(x))
		if rng.IntN(2) == 0 {
			x[i] = replacements[rng.IntN(len(replacements))]
			return "element replaced"
		}
		return fmt.Sprint(i, ": ", changeTree(rng, x[i]))
	}
	return "scalar"
}

// equalJSON agrees with reflect.DeepEqual on every pair of a set of JSON
// trees and of values canonical.Decode never makes.
func TestEqualJSONIsDeepEqual(t *testing.T) {
	values := []any{
		nil, true, false, "", "x", json.Number("1"), json.Number("1.0"), 1.0, int64(1),
		map[string]any(nil), map[string]any{}, map[string]any{"a": nil}, map[string]any{"a": "x"},
		map[string]any{"a": map[string]any{"b": []any{"x", json.Number("2")}}},
		map[string]any{"a": map[string]any{"b": []any{"x", json.Number("3")}}},
		map[string]any{"b": "x"}, []any(nil), []any{}, []any{nil}, []any{"x"}, []any{[]any{}},
		[]string{"x"},
	}
	for _, a := range values {
		for _, b := range values {
			if got, want := equalJSON(a, b), reflect.DeepEqual(a, b); got != want {
				t.Errorf("equalJSON(%#v, %#v) = %v, reflect.DeepEqual says %v", a, b, got, want)
			}
		}
	}
}
