package consumer

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/streamread"
)

// harvestRecord builds the conversation.memory.harvest job of a compaction:
// a pointer job (facts.PointerJobVersion) naming the cut events and the
// request they are read from when the job runs (Processor.CutEntries). The
// record's id is the job's message id, unique on (conversation_id,
// head_entry_id).
func harvestRecord(req *envelope, checkpointID string, cutIDs []string, requestSeq uint64, traceparent string) (outbox.Record, error) {
	job := facts.BuildPointerJob(req.ThreadID, checkpointID, req.harvest().EffectiveScope(), cutIDs, requestSeq)
	data, err := json.Marshal(job)
	if err != nil {
		return outbox.Record{}, errcode.Wrap(errcode.Internal, "encode event", err)
	}
	return newRecord(topology.SubjectHarvest, job.MsgID(), data, traceparent), nil
}

// CutEntries reads the cut events of a harvest job from the request that
// made the cut (facts.RequestReader): the request at requestSeq in
// COMPACT_REQUESTS, with its events inline or claim-checked, unless this
// process compacted it and still holds its cut (cutHandoff). They are the
// events in their original, unprojected form, not the engine's projection.
func (p *Processor) CutEntries(ctx context.Context, requestSeq uint64, requestID string, entryIDs []string) ([]facts.Entry, error) {
	if entries, ok := p.handoff.take(requestSeq, requestID, entryIDs); ok {
		return entries, nil
	}
	source := map[string]any{"request_seq": requestSeq, "request_id": requestID}
	stream, err := p.requestStream(ctx)
	if err != nil {
		return nil, err
	}
	msg, err := streamread.MsgAt(ctx, stream, requestSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, errcode.WithDetails(errcode.HarvestFailed, "the request of this harvest job is no longer stored", source)
	}
	if err != nil {
		return nil, err
	}
	req, err := decodeEnvelope(msg.Data)
	if err != nil || req.RequestID != requestID {
		return nil, errcode.WithDetails(errcode.HarvestFailed, "the harvest job's request_seq names another request", source)
	}
	evs, err := p.loadEvents(ctx, req)
	if err != nil {
		return nil, err
	}
	return cutEntries(evs, entryIDs)
}

// handOff holds the cut of a request with inline events for its harvest
// job (cutHandoff). Claim-checked events are not held: their cut would
// be decoded here rather than by the job.
func (p *Processor) handOff(requestSeq uint64, req *envelope, cutIDs []string) {
	list, ok := req.Events.([]any)
	if !ok {
		return
	}
	if entries, err := cutEntries(laneEvents{list: list}, cutIDs); err == nil {
		p.handoff.put(requestSeq, req.RequestID, cutIDs, entries)
	}
}

// requestStream returns the COMPACT_REQUESTS handle, looked up on first
// use and kept: a lookup is a stream info request, which every harvest job
// would otherwise add. A failed lookup is not kept.
func (p *Processor) requestStream(ctx context.Context) (jetstream.Stream, error) {
	p.requestsMu.Lock()
	defer p.requestsMu.Unlock()
	if p.requests == nil {
		stream, err := p.js.Stream(ctx, topology.StreamRequests)
		if err != nil {
			return nil, err
		}
		p.requests = stream
	}
	return p.requests, nil
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
