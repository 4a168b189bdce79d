package service

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/nats-io/nats.go/jetstream"
)

// Recorder reads what the processor recorded of requests: the ledger, the
// checkpoints and lane heads, and the request stream for asks by
// sequence. It writes nothing.
type Recorder struct {
	Ledger   *ledger.Ledger
	Lanes    *lanes.Store
	Requests jetstream.Stream
	// HistoryLimit bounds how far back a lane's history is walked to find
	// a checkpoint the lane has since moved past (the processor's own).
	HistoryLimit int
}

// Status answers a status query from the records.
func (r *Recorder) Status(ctx context.Context, q events.StatusQuery) (*events.StatusReply, error) {
	if err := checkQuery(q); err != nil {
		return nil, err
	}
	if q.StreamSequence == 0 {
		return r.byID(ctx, q.RequestID, q.ContentHash)
	}
	reply, err := r.bySequence(ctx, q.StreamSequence)
	if reply != nil {
		reply.StreamSequence = q.StreamSequence
	}
	return reply, err
}

// checkQuery enforces one way of naming the request, with valid ids.
func checkQuery(q events.StatusQuery) error {
	switch {
	case q.RequestID == "" && q.StreamSequence == 0:
		return errcode.Field(errcode.InvalidServiceRequest, "name the request by request_id or by stream_sequence", "request_id", "required")
	case q.RequestID != "" && q.StreamSequence != 0:
		return errcode.Field(errcode.InvalidServiceRequest, "name the request by request_id or by stream_sequence, not both", "stream_sequence", "exclusive")
	case q.StreamSequence != 0 && q.ContentHash != "":
		return errcode.Field(errcode.InvalidServiceRequest, "content_hash goes with request_id: a stream_sequence names the body", "content_hash", "conflict")
	case q.ContentHash != "" && !isSHA256(q.ContentHash):
		return errcode.Field(errcode.InvalidServiceRequest, "content_hash is not 64 lowercase hex digits", "content_hash", "pattern")
	}
	if q.RequestID != "" && !events.ValidName(q.RequestID) {
		return errcode.Field(errcode.InvalidServiceRequest, "request_id is not a valid id: 1..200 bytes of UTF-8 without control characters", "request_id", "pattern")
	}
	return nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// bySequence reads the request message and answers for its id and body.
// A message whose id the processor would not accept (no request_id, or a
// Nats-Msg-Id that differs from it) has no record by id: unknown.
func (r *Recorder) bySequence(ctx context.Context, seq uint64) (*events.StatusReply, error) {
	msg, err := r.Requests.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return &events.StatusReply{State: events.StateUnknown}, nil
	}
	if err != nil {
		return nil, err
	}
	id := bodyRequestID(msg.Data)
	if header := msg.Header.Get("Nats-Msg-Id"); header != "" && header != id {
		return &events.StatusReply{RequestID: header, State: events.StateUnknown}, nil
	}
	if !events.ValidName(id) {
		return &events.StatusReply{RequestID: id, State: events.StateUnknown}, nil
	}
	return r.byID(ctx, id, ledger.ContentHash(msg.Data))
}

// bodyRequestID is the request_id of a body, "" when it has none.
func bodyRequestID(body []byte) string {
	var head struct {
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(body, &head)
	return head.RequestID
}

// byID looks the request up where the processor records it: its ledger
// entry, or, for a request a local summarizer activated on its first
// delivery, its checkpoint record with the plan (internal/consumer,
// firstDelivery). hash, when set, must be the recorded body's. The
// checkpoint record is read alongside the entry: an activated outcome
// names it either way, so most asks cost one round trip, not two.
func (r *Recorder) byID(ctx context.Context, id, hash string) (*events.StatusReply, error) {
	reply := &events.StatusReply{RequestID: id, State: events.StateUnknown}
	var (
		cp    *lanes.Checkpoint
		cpErr error
	)
	read := make(chan struct{})
	go func() {
		defer close(read)
		cp, cpErr = r.Lanes.GetCheckpoint(ctx, id)
	}()
	entry, _, err := r.Ledger.Get(ctx, id)
	<-read
	switch {
	case err != nil:
		return nil, err
	case entry != nil && hash != "" && entry.ContentHash != hash:
		reply.State = events.StateConflict
		return reply, nil
	case entry != nil:
		return reply, fromEntry(entry, cp, cpErr, reply)
	case cpErr != nil:
		return nil, cpErr
	case cp == nil || cp.Plan == nil || len(cp.Plan.Outbox) == 0:
		// No record, a marker of an outcome the ledger is about to record,
		// or a checkpoint made through a ledger entry since forgotten.
		return reply, nil
	case hash != "" && cp.RequestHash != "" && cp.RequestHash != hash:
		reply.State = events.StateConflict
		return reply, nil
	}
	active, err := r.planActive(ctx, cp.Plan)
	if err != nil {
		return nil, err
	}
	reply.State = events.StateStored
	if active {
		reply.State = events.StateActivated
		if reply.Outcome, err = outcomeOf(cp.Plan.Outbox[0], cp); err != nil {
			return nil, err
		}
	}
	return reply, nil
}

// fromEntry fills the reply from a ledger entry: its state and, once
// terminal, the recorded outcome, made whole from the request's
// checkpoint record cp (read with error cpErr) when it names it.
func fromEntry(e *ledger.Entry, cp *lanes.Checkpoint, cpErr error, reply *events.StatusReply) error {
	reply.State = string(e.State)
	if !e.State.Terminal() {
		return nil
	}
	outcome := e.Outcome
	if outcome == nil && e.OutcomeInCheckpoint {
		if cpErr != nil {
			return cpErr
		}
		if cp != nil && cp.Plan != nil && len(cp.Plan.Outbox) > 0 {
			outcome = &cp.Plan.Outbox[0]
		}
	}
	if outcome == nil {
		return errcode.WithDetails(errcode.Internal, "finished request has no recorded outcome", map[string]any{"request_id": e.RequestID})
	}
	if outcome.CheckpointRef != "" && cpErr != nil {
		return cpErr
	}
	var err error
	reply.Outcome, err = outcomeOf(*outcome, cp)
	return err
}

// planActive reports whether a plan stored with its checkpoint was
// activated: its checkpoint is the lane's head or in the head's history.
// A lane that moved on further than the history limit is taken as having
// activated it, as the processor takes it (internal/consumer,
// finishEarlierActivation).
func (r *Recorder) planActive(ctx context.Context, plan *lanes.Head) (bool, error) {
	head, _, err := r.Lanes.Head(ctx, plan.Lane)
	if err != nil || head == nil || head.Generation < plan.Generation {
		return false, err
	}
	if head.Generation-plan.Generation >= int64(r.HistoryLimit) {
		return true, nil
	}
	return r.Lanes.InHistory(ctx, head, plan.CheckpointID, r.HistoryLimit)
}

// outcomeOf is a recorded outcome as a status reply gives it: whole,
// when it names its checkpoint record cp.
func outcomeOf(rec outbox.Record, cp *lanes.Checkpoint) (*events.StatusOutcome, error) {
	whole, err := lanes.Resolved(rec, cp)
	if err != nil {
		return nil, err
	}
	return &events.StatusOutcome{Subject: whole.Subject, EventID: whole.EventID, Event: whole.Payload}, nil
}
