package engine

import (
	"encoding/json"
	"reflect"
	"slices"

	"github.com/cairnhq/cairn/events"
)

// eventsRecord is DecodeRequestValue's private record of every value
// InputEvent.Validate read when the decoded events passed it.
//
// Compact validates its request again because a caller may build or change
// the events after decoding; yet the consumer decodes and compacts the same
// untouched events, and validating an event costs two canonical encodings
// and two SHA-256s. Identities (of the slice, its maps) would prove nothing,
// since a caller can assign a field of req.Events[i], write through Content
// or TokenCount, or edit ArtifactIDs, Tool or Provenance in place. So the
// record keeps the values themselves: the scalars, and deep copies of the
// JSON trees, whose strings share their bytes with the events and so
// compare in constant time while unchanged. Any difference, or a value
// canonical.Decode cannot produce, fails the match and the events are
// validated in full; so the record only skips checks whose every input
// equals one that passed. It is never changed once made: Compact only
// reads it, and copies of a Request may share it.
type eventsRecord struct {
	scalars []eventScalars // one per event
	trees   []eventTrees   // one per event
}

// eventScalars are an event's validated fields other than its JSON trees,
// with Content and TokenCount read through their pointers (writing through
// them changes what Validate reads), in one value compared at once.
type eventScalars struct {
	eventID, runAgentID, namespace, role string
	provenanceSHA256, contentHash        string
	content                              string
	chatSeq, ordinal, tokenCount         int64
	hasContent, hasTokenCount, truncated bool
}

func scalarsOf(e *events.InputEvent) eventScalars {
	s := eventScalars{
		eventID: e.EventID, runAgentID: e.RunAgentID, namespace: e.CheckpointNamespace, role: e.Role,
		provenanceSHA256: e.ProvenanceSHA256, contentHash: e.ContentHash,
		chatSeq: e.ChatSeq, ordinal: e.LaneEventOrdinal, truncated: e.Truncated,
	}
	if e.Content != nil {
		s.content, s.hasContent = *e.Content, true
	}
	if e.TokenCount != nil {
		s.tokenCount, s.hasTokenCount = *e.TokenCount, true
	}
	return s
}

// eventTrees are deep copies of an event's JSON trees, the tool as the
// content hash sees it (a nil map is null).
type eventTrees struct {
	provenance, tool any
	artifactIDs      []string
}

// recordEvents returns the record of events that have just passed
// InputEvent.Validate.
func recordEvents(laneEvents []events.InputEvent) *eventsRecord {
	rec := &eventsRecord{scalars: make([]eventScalars, len(laneEvents)), trees: make([]eventTrees, len(laneEvents))}
	for i := range laneEvents {
		e := &laneEvents[i]
		rec.scalars[i] = scalarsOf(e)
		rec.trees[i] = eventTrees{cloneJSON(e.Provenance), cloneJSON(mapOrNil(e.Tool)), slices.Clone(e.ArtifactIDs)}
	}
	return rec
}

// matches reports whether events hold exactly the recorded values; Protected,
// which Validate does not read, may differ.
func (rec *eventsRecord) matches(laneEvents []events.InputEvent) bool {
	if rec == nil || len(laneEvents) != len(rec.scalars) {
		return false
	}
	for i := range laneEvents {
		e, t := &laneEvents[i], &rec.trees[i]
		if scalarsOf(e) != rec.scalars[i] || !slices.Equal(e.ArtifactIDs, t.artifactIDs) ||
			!equalJSON(e.Provenance, t.provenance) || !equalJSON(mapOrNil(e.Tool), t.tool) {
			return false
		}
	}
	return true
}

// equalJSON is reflect.DeepEqual for the trees canonical.Decode makes
// (objects, lists, strings, json.Number, bool, null), by a type switch;
// any other value is compared by reflect.DeepEqual. Kept by the speed rule
// (docs/architecture.md, "Speed work") on
// BenchmarkFairProcessor/generated=100.
func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equalJSON(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && (x == nil) == (y == nil) && slices.EqualFunc(x, y, equalJSON)
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	return reflect.DeepEqual(a, b)
}

// cloneJSON is a deep copy of v's objects and lists; any other value
// (a string, json.Number, bool or null) is immutable and kept.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		m := make(map[string]any, len(x))
		for k, member := range x {
			m[k] = cloneJSON(member)
		}
		return m
	case []any:
		if x == nil {
			return x
		}
		list := make([]any, len(x))
		for i, el := range x {
			list[i] = cloneJSON(el)
		}
		return list
	}
	return v
}
