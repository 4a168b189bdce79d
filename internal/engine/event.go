package engine

import (
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
)

// Bounds of a request and of the compaction of its events (subjects.md,
// Request v1).
const (
	maxEventsPerRequest  = 10_000
	maxFocusBytes        = 2_000
	maxRehydrationBytes  = 1 << 20
	projectionThreshold  = 2 * 1024
	projectionHalfBytes  = 1024
	projectionSeparator  = "\n...[projected]...\n"
	promptReserveTokens  = 4096
	projectionVersion    = 1
	semanticDefaultBytes = 131_072
)

func stringsOrEmpty(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

func stringOrNil(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// View returns an event as a summarizer sees it (EventView). Its
// artifact_ids are [] when the event has none, as in its canonical form,
// so that the payload's JSON carries a list too.
func View(e events.InputEvent) EventView {
	return EventView{
		EventID: e.EventID, RunAgentID: e.RunAgentID, ChatSeq: e.ChatSeq,
		LaneEventOrdinal: e.LaneEventOrdinal, CheckpointNamespace: e.CheckpointNamespace,
		Role: e.Role, Provenance: e.Provenance, ProvenanceSHA256: e.ProvenanceSHA256,
		ContentHash: e.ContentHash, Content: e.Content, Tool: e.Tool,
		ArtifactIDs: stringsOrEmpty(e.ArtifactIDs), Truncated: e.Truncated,
	}
}

// CanonicalValue is the view's canonical form, built from its tags.
func (v EventView) CanonicalValue() any { return events.Plain(&v) }

// EstimatedTokens is an event's cost for the tail budget and for chunking:
// TokenCount when set, else the byte length of the canonical 13-key view.
// The error is invalid_compaction_event for a view outside canonical JSON.
func EstimatedTokens(e events.InputEvent) (int64, error) {
	if e.TokenCount != nil && *e.TokenCount >= 0 {
		return *e.TokenCount, nil
	}
	n, err := viewSize(&e)
	if err != nil {
		return 0, errcode.Wrap(errcode.InvalidEvent, "event is not canonical JSON", err)
	}
	return int64(n), nil
}

// callIDs returns the tool call ids e carries: tool.call_id and the
// call_id of every object in tool.calls (a non-list calls is one element),
// non-strings dropped. The list may repeat an id; callers treat it as a set,
// which keeps this linear however many calls one event lists.
func callIDs(e events.InputEvent) []string {
	if e.Tool == nil {
		return nil
	}
	var ids []string
	if id, ok := e.Tool["call_id"].(string); ok {
		ids = append(ids, id)
	}
	calls, present := e.Tool["calls"]
	if !present {
		return ids
	}
	list, isList := calls.([]any)
	if !isList {
		list = []any{calls}
	}
	for _, c := range list {
		if obj, ok := c.(map[string]any); ok {
			if id, ok := obj["call_id"].(string); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}
