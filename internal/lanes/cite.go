package lanes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/rawjson"
)

// A checkpoint's bytes are stored once, in its record. An activated
// event ends with the checkpoint it activates, byte for byte the record's
// own "checkpoint" member (both are encoding/json's bytes for the body);
// the plan inside the record and the lane head that carries the event in
// its outbox store the event with that member null instead, and say so
// (Checkpoint.PlanCitesCheckpoint, Head.OutboxCites). Reading them puts
// the checkpoint back. Stored whole, the checkpoint would be written three
// times per activation of a local summarizer: in its record, in the
// record's plan and in the head.

// cited is how a stored event that cites its checkpoint ends: the member
// that held the checkpoint, null, and the event's closing brace.
const cited = `"checkpoint":null}`

// CiteCheckpoint returns an event's payload with its checkpoint member
// null, when the payload ends with the member "checkpoint" holding body;
// RestoreCheckpoint gives it back. The request ledger cites a remote
// summarizer's checkpoint this way.
func CiteCheckpoint(payload, body json.RawMessage) (json.RawMessage, bool) {
	if len(body) == 0 {
		return nil, false
	}
	encoded, err := rawjson.AppendRaw(nil, body)
	if err != nil {
		return nil, false
	}
	return citeCheckpoint(payload, encoded)
}

// RestoreCheckpoint puts body back into a payload CiteCheckpoint cited,
// body as a checkpoint record stores it.
func RestoreCheckpoint(payload, body json.RawMessage) (json.RawMessage, error) {
	encoded, err := rawjson.AppendRaw(nil, body)
	if err != nil {
		return nil, err
	}
	return restoreCheckpoint(payload, encoded)
}

// citeCheckpoint returns payload with its checkpoint member nulled, when
// payload ends with the member "checkpoint" holding body (encoded as a
// record stores it).
func citeCheckpoint(payload, body []byte) ([]byte, bool) {
	rest, closed := bytes.CutSuffix(payload, []byte("}"))
	rest, found := bytes.CutSuffix(rest, body)
	if !closed || !found || !bytes.HasSuffix(rest, []byte(`"checkpoint":`)) {
		return nil, false
	}
	return append(rest[:len(rest):len(rest)], "null}"...), true
}

// restoreCheckpoint undoes citeCheckpoint.
func restoreCheckpoint(payload, body []byte) ([]byte, error) {
	prefix, ok := bytes.CutSuffix(payload, []byte("null}"))
	if !ok || !bytes.HasSuffix(payload, []byte(cited)) {
		return nil, errors.New("the event does not cite its checkpoint")
	}
	out := make([]byte, 0, len(prefix)+len(body)+1)
	return append(append(append(out, prefix...), body...), '}'), nil
}

// CiteFirst returns a copy of plan h whose first record, its activated
// event, cites body (the checkpoint it activates), or false when that
// event does not end with body. RestoreFirst undoes it.
func (h *Head) CiteFirst(body json.RawMessage) (*Head, bool) {
	if h == nil || len(h.Outbox) == 0 {
		return nil, false
	}
	payload, ok := CiteCheckpoint(h.Outbox[0].Payload, body)
	if !ok {
		return nil, false
	}
	plan := *h
	plan.Outbox = slices.Clone(h.Outbox)
	plan.Outbox[0].Payload = payload
	return &plan, true
}

// RestoreFirst puts body back into the first record of a plan that
// CiteFirst cited.
func (h *Head) RestoreFirst(body json.RawMessage) error {
	if len(h.Outbox) == 0 {
		return errors.New("the plan has no event to cite the checkpoint")
	}
	payload, err := RestoreCheckpoint(h.Outbox[0].Payload, body)
	h.Outbox[0].Payload = payload
	return err
}

// storedForm is c as its record stores it: the plan's activated event
// cites the record's checkpoint. A plan whose event does not end with the
// checkpoint is stored as it is.
func (c *Checkpoint) storedForm() *Checkpoint {
	plan, ok := c.Plan.CiteFirst(c.Body)
	if !ok {
		return c
	}
	stored := *c
	stored.Plan, stored.PlanCitesCheckpoint = plan, true
	return &stored
}

// restoreCitedCheckpoint undoes storedForm on a decoded record.
func (c *Checkpoint) restoreCitedCheckpoint() error {
	if !c.PlanCitesCheckpoint {
		return nil
	}
	c.PlanCitesCheckpoint = false
	if c.Plan == nil {
		return errors.New("the record cites its checkpoint without a plan")
	}
	return c.Plan.RestoreFirst(c.Body)
}

// storedForm is h as the heads bucket stores it: the outbox record that
// ends with CheckpointBody cites it. Without CheckpointBody, or without
// such a record (records carried from an earlier head end with other
// checkpoints), h is stored as it is.
func (h *Head) storedForm() *Head {
	if len(h.CheckpointBody) == 0 || h.OutboxCites != "" {
		return h
	}
	body, err := rawjson.AppendRaw(nil, h.CheckpointBody)
	if err != nil {
		return h
	}
	for i, r := range h.Outbox {
		if payload, ok := citeCheckpoint(r.Payload, body); ok {
			stored := *h
			stored.Outbox = slices.Clone(h.Outbox)
			stored.Outbox[i].Payload = payload
			stored.OutboxCites = r.EventID
			return &stored
		}
	}
	return h
}

// ResolveOutbox puts the checkpoint back into the outbox record a stored
// head cites it from (OutboxCites), reading the checkpoint record. A head
// whose cited record was cleared needs no read.
func (s *Store) ResolveOutbox(ctx context.Context, h *Head) error {
	if h.OutboxCites == "" {
		return nil
	}
	i := slices.IndexFunc(h.Outbox, func(r outbox.Record) bool { return r.EventID == h.OutboxCites })
	if i < 0 {
		h.OutboxCites = ""
		return nil
	}
	payload, err := s.RestoreFromRecord(ctx, h.CheckpointID, h.Outbox[i].Payload)
	if err != nil {
		return err
	}
	h.Outbox = slices.Clone(h.Outbox)
	h.Outbox[i].Payload = payload
	h.OutboxCites = ""
	return nil
}

// RestoreFromRecord puts the checkpoint back into an event that cites
// the checkpoint record of id, reading the record.
func (s *Store) RestoreFromRecord(ctx context.Context, id string, payload json.RawMessage) (json.RawMessage, error) {
	cp, err := s.GetCheckpoint(ctx, id)
	if err != nil {
		return nil, err
	}
	return RestoreFromCheckpoint(cp, id, payload)
}

// RestoreFromCheckpoint puts the checkpoint back into an event that cites
// the checkpoint record of id, given the record as GetCheckpoint read it
// (nil when there is none).
func RestoreFromCheckpoint(cp *Checkpoint, id string, payload json.RawMessage) (json.RawMessage, error) {
	if cp == nil || cp.IsMarker() {
		return nil, errcode.WithDetails(errcode.Internal, "the checkpoint an event cites is not stored",
			map[string]any{"checkpoint_id": id})
	}
	whole, err := restoreCheckpoint(payload, cp.Body)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "a stored event's citation is corrupt", err)
	}
	return whole, nil
}

// OutboxOf returns the pending records of a stored lane head value, the
// cited checkpoint put back: the relay's RelayConfig.Records.
func (s *Store) OutboxOf(ctx context.Context, value []byte) ([]outbox.Record, error) {
	var h Head
	if err := json.Unmarshal(value, &h); err != nil {
		return nil, fmt.Errorf("lanes: lane head is corrupt: %w", err)
	}
	if err := s.ResolveOutbox(ctx, &h); err != nil {
		return nil, err
	}
	return h.Outbox, nil
}
