package events

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn/errcode"
	"github.com/nats-io/nats.go"
)

// Subjects of Cairn's NATS service, "cairn" in `nats micro ls`
// (subjects.md, Service). Each takes a JSON request and answers JSON.
const (
	ServicePrefix   = "cairn.svc"
	SubjectStatus   = ServicePrefix + ".status"
	SubjectLane     = ServicePrefix + ".lane"
	SubjectValidate = ServicePrefix + ".validate"
)

// States of a request in a status reply (StatusReply.State). Activated,
// skipped and failed carry the outcome event.
const (
	StateUnknown          = "unknown"
	StateStarted          = "started"
	StateSummaryRequested = "summary_requested"
	StateStored           = "stored"
	StateActivated        = "activated"
	StateSkipped          = "skipped"
	StateFailed           = "failed"
	StateConflict         = "conflict"
)

// StatusQuery asks what became of one request: by RequestID, or by the
// StreamSequence of its message in COMPACT_REQUESTS (exactly one of the
// two). ContentHash, with RequestID, is the lowercase hex SHA-256 of the
// body the asker sent: a request_id recorded with another body then
// answers state conflict instead of the other body's outcome.
type StatusQuery struct {
	RequestID      string `json:"request_id,omitempty" doc:"the request asked about"`
	StreamSequence uint64 `json:"stream_sequence,omitempty" doc:"the sequence of the request message in COMPACT_REQUESTS, instead of request_id" minimum:"1"`
	ContentHash    string `json:"content_hash,omitempty" doc:"with request_id: lowercase hex SHA-256 of the body published; another recorded body answers state conflict" pattern:"^[0-9a-f]{64}$"`
}

// StatusReply is the service's answer to a StatusQuery.
type StatusReply struct {
	RequestID string `json:"request_id" doc:"the request asked about (for an ask by sequence, the message's)"`
	// StreamSequence echoes a query by sequence.
	StreamSequence uint64 `json:"stream_sequence,omitempty" doc:"echoes an ask by stream_sequence"`
	// State is one of the State constants. unknown: Cairn holds no record
	// of the request (not received, or received and not yet recorded).
	State string `json:"state" doc:"unknown: no record (not received, or not yet recorded); started, summary_requested, stored: in progress; activated, skipped, failed: finished; conflict: recorded with another body" enum:"unknown|started|summary_requested|stored|activated|skipped|failed|conflict"`
	// Outcome is the terminal event as Cairn recorded it; null unless the
	// state is activated, skipped or failed.
	Outcome *StatusOutcome `json:"outcome" doc:"the outcome event as published; null unless the state is activated, skipped or failed"`
}

// StatusOutcome is a recorded outcome event: its subject, its event_id
// (the Nats-Msg-Id it is published with) and its body, as published.
type StatusOutcome struct {
	Subject string          `json:"subject" doc:"the subject the event was published on" enum:"conversation.compact.activated|conversation.compact.skipped|conversation.compact.failed"`
	EventID string          `json:"event_id" doc:"the event's event_id, its Nats-Msg-Id"`
	Event   json.RawMessage `json:"event" doc:"the event, as in activated.json, skipped.json or failed.json"`
}

// Terminal reports whether the reply carries the request's outcome.
func (r *StatusReply) Terminal() bool { return r.Outcome != nil }

// Event decodes the outcome as Decode does a message of the events stream.
func (r *StatusReply) Event() (Event, error) {
	if r.Outcome == nil {
		return Event{}, fmt.Errorf("events: request %s has no outcome yet (state %s)", r.RequestID, r.State)
	}
	return Decode(r.Outcome.Subject, r.Outcome.Event)
}

// ServiceErrorReply is the body of an error reply of the service, whose
// headers carry Nats-Service-Error and Nats-Service-Error-Code.
type ServiceErrorReply struct {
	Error *errcode.Error `json:"error"`
}

// Status asks Cairn's service what became of a request. An error reply
// is returned as its typed error (errcode: invalid_service_request, ...);
// no service listening is nats.ErrNoResponders.
func Status(ctx context.Context, nc *nats.Conn, q StatusQuery) (*StatusReply, error) {
	var reply StatusReply
	if err := askService(ctx, nc, SubjectStatus, q, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// askService sends one JSON request to a service subject and decodes the
// answer into out, or the error reply into a typed error.
func askService(ctx context.Context, nc *nats.Conn, subject string, q any, out any) error {
	body, err := json.Marshal(q)
	if err != nil {
		return fmt.Errorf("events: encode %s request: %w", subject, err)
	}
	msg, err := nc.RequestWithContext(ctx, subject, body)
	if err != nil {
		return fmt.Errorf("events: ask %s: %w", subject, err)
	}
	if msg.Header.Get("Nats-Service-Error-Code") != "" {
		var e ServiceErrorReply
		if json.Unmarshal(msg.Data, &e) != nil || e.Error == nil {
			return fmt.Errorf("events: %s answered %s: %s", subject, msg.Header.Get("Nats-Service-Error-Code"), msg.Header.Get("Nats-Service-Error"))
		}
		return e.Error
	}
	if err := json.Unmarshal(msg.Data, out); err != nil {
		return fmt.Errorf("events: decode the answer of %s: %w", subject, err)
	}
	return nil
}
