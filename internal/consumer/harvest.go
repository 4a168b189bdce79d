package consumer

import (
	"encoding/json"

	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/topology"
)

// buildHarvestRecord builds the conversation.memory.harvest job of a
// compaction from the cut events in their original, unprojected form (the
// request's events, not the engine's projection). facts.BuildJob renders,
// bounds and redacts the transcript; the record's id is the job's message
// id, unique on (conversation_id, head_entry_id).
func buildHarvestRecord(req *envelope, checkpointID string, events laneEvents, cutIDs []string, traceparent string) (outbox.Record, error) {
	entries, err := cutEntries(events, cutIDs)
	if err != nil {
		return outbox.Record{}, err
	}
	return harvestRecord(req, checkpointID, entries, traceparent)
}

// harvestRecord builds the harvest job record of the cut entries.
func harvestRecord(req *envelope, checkpointID string, entries []facts.Entry, traceparent string) (outbox.Record, error) {
	scope := req.harvest().EffectiveScope()
	job := facts.BuildJob(req.ThreadID, checkpointID, scope, entries)
	data, err := json.Marshal(job)
	if err != nil {
		return outbox.Record{}, errcode.Wrap(errcode.Internal, "encode event", err)
	}
	return newRecord(topology.SubjectHarvest, job.MsgID(), data, traceparent), nil
}

// cutEntries returns the cut events of the request's events, in order,
// as a harvest transcript shows them: id, role, content and tool name.
func cutEntries(events laneEvents, cutIDs []string) ([]facts.Entry, error) {
	all := events.list
	if all == nil {
		if err := json.Unmarshal(events.raw, &all); err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, "events are not an array of objects", err)
		}
	}
	cut := make(map[string]bool, len(cutIDs))
	for _, id := range cutIDs {
		cut[id] = true
	}
	entries := make([]facts.Entry, 0, len(cutIDs))
	for _, v := range all {
		e, _ := v.(map[string]any)
		id, _ := e["event_id"].(string)
		if !cut[id] {
			continue
		}
		entry := facts.Entry{ID: id}
		entry.Role, _ = e["role"].(string)
		entry.Content, _ = e["content"].(string)
		tool, _ := e["tool"].(map[string]any)
		entry.ToolName, _ = tool["name"].(string)
		entries = append(entries, entry)
	}
	return entries, nil
}
