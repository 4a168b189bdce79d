package lanes

import (
	"context"
	"encoding/json"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/outbox"
)

// A checkpoint's bytes are stored once, in its record. An activated event
// carries the checkpoint it activates; wherever Cairn stores such an event
// (a lane head's outbox, the plan in a checkpoint record, a ledger entry's
// plan or outcome) it stores the event with a null checkpoint and the id
// of the record that holds it (outbox.Record.CheckpointRef). The event is
// made whole only where it leaves Cairn: published on the events stream,
// or in a status reply.

// WithCheckpoint returns rec made whole when it names the checkpoint id,
// whose body the caller holds: the stored event decoded, body set as its
// checkpoint, and the event encoded again, so the bytes are json.Marshal's
// for the whole event. A record that names no checkpoint, or another one,
// is returned as it is.
func WithCheckpoint(rec outbox.Record, id string, body json.RawMessage) (outbox.Record, error) {
	if rec.CheckpointRef == "" || rec.CheckpointRef != id {
		return rec, nil
	}
	var ev events.Activated
	if err := json.Unmarshal(rec.Payload, &ev); err != nil {
		return outbox.Record{}, errcode.Wrap(errcode.Internal, "a stored activated event is corrupt", err)
	}
	ev.Checkpoint = body
	payload, err := json.Marshal(ev)
	if err != nil {
		return outbox.Record{}, errcode.Wrap(errcode.Internal, "encode event", err)
	}
	rec.Payload, rec.CheckpointRef = payload, ""
	return rec, nil
}

// Resolve returns rec made whole from the checkpoint record it names,
// which it reads (the relay's RelayConfig.Resolve). A record that names
// no checkpoint is returned as it is.
func (s *Store) Resolve(ctx context.Context, rec outbox.Record) (outbox.Record, error) {
	if rec.CheckpointRef == "" {
		return rec, nil
	}
	cp, err := s.GetCheckpoint(ctx, rec.CheckpointRef)
	if err != nil {
		return outbox.Record{}, err
	}
	return Resolved(rec, cp)
}

// Resolved is Resolve given the record rec names as GetCheckpoint read
// it (nil when there is none).
func Resolved(rec outbox.Record, cp *Checkpoint) (outbox.Record, error) {
	if rec.CheckpointRef == "" {
		return rec, nil
	}
	if cp == nil || cp.IsMarker() || cp.ID != rec.CheckpointRef {
		return outbox.Record{}, errcode.WithDetails(errcode.Internal, "the checkpoint an event names is not stored",
			map[string]any{"checkpoint_id": rec.CheckpointRef})
	}
	return WithCheckpoint(rec, cp.ID, cp.Body)
}

// Published returns h's records as the relay publishes them, those that
// name h's checkpoint made whole from CheckpointBody without a read.
// Records carried from an earlier head name their own checkpoints and are
// left for the relay to resolve.
func (h *Head) Published() ([]outbox.Record, error) {
	out := make([]outbox.Record, len(h.Outbox))
	for i, rec := range h.Outbox {
		if rec.CheckpointRef == h.CheckpointID && len(h.CheckpointBody) == 0 {
			out[i] = rec
			continue
		}
		var err error
		if out[i], err = WithCheckpoint(rec, h.CheckpointID, h.CheckpointBody); err != nil {
			return nil, err
		}
	}
	return out, nil
}
