package consumer

import (
	"encoding/json"

	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/topology"
)

// transcriptEvent is the part of an InputEvent a harvest transcript shows.
type transcriptEvent struct {
	EventID string         `json:"event_id"`
	Role    string         `json:"role"`
	Content *string        `json:"content"`
	Tool    map[string]any `json:"tool"`
}

// buildHarvestRecord builds the conversation.memory.harvest job of a
// compaction from the cut events in their original, unprojected form (the
// request's events, not the engine's projection). facts.BuildJob renders,
// bounds and redacts the transcript; the record's id is the job's message
// id, unique on (conversation_id, head_entry_id).
func buildHarvestRecord(req *envelope, checkpointID string, events json.RawMessage, cutIDs []string, traceparent string) (outbox.Record, error) {
	entries, err := cutEntries(events, cutIDs)
	if err != nil {
		return outbox.Record{}, err
	}
	return harvestRecord(req, checkpointID, entries, traceparent)
}

// harvestRecord builds the harvest job record of the cut entries.
func harvestRecord(req *envelope, checkpointID string, entries []facts.Entry, traceparent string) (outbox.Record, error) {
	scope := req.harvestScope()
	job := facts.BuildJob(req.ThreadID, checkpointID, facts.Scope{Kind: scope.Kind, ID: scope.ID}, entries)
	data, err := json.Marshal(job)
	if err != nil {
		return outbox.Record{}, errcode.Wrap(errcode.Internal, "encode event", err)
	}
	return newRecord(topology.SubjectHarvest, job.MsgID(), data, traceparent), nil
}

// cutEntries decodes the cut events of the events array, in order.
func cutEntries(events json.RawMessage, cutIDs []string) ([]facts.Entry, error) {
	var all []transcriptEvent
	if err := json.Unmarshal(events, &all); err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, "events are not an array of objects", err)
	}
	cut := make(map[string]bool, len(cutIDs))
	for _, id := range cutIDs {
		cut[id] = true
	}
	entries := make([]facts.Entry, 0, len(cutIDs))
	for _, e := range all {
		if !cut[e.EventID] {
			continue
		}
		entry := facts.Entry{ID: e.EventID, Role: e.Role}
		if e.Content != nil {
			entry.Content = *e.Content
		}
		if name, ok := e.Tool["name"].(string); ok {
			entry.ToolName = name
		}
		entries = append(entries, entry)
	}
	return entries, nil
}
