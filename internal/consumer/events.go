package consumer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/rawjson"
	"github.com/cairnhq/cairn/internal/topology"
)

// Event kinds, as in the events' "kind" field and in event ids.
const (
	kindActivated = events.KindActivated
	kindSkipped   = events.KindSkipped
	kindFailed    = events.KindFailed
)

// eventID derives an event's id from its request and kind, so that a re-run
// of the same request yields the same id and the event stream's duplicate
// window absorbs the repeat: "<request_id>:<kind>". A failed event of a
// request reopened by a resend (round > 0) gets "<request_id>:failed:<round>".
func eventID(requestID, kind string, round int) string {
	if round > 0 {
		return fmt.Sprintf("%s:%s:%d", requestID, kind, round)
	}
	return requestID + ":" + kind
}

// header returns the fields every compaction event carries (wire.md). The
// event types are the public ones of package events, so what Cairn
// publishes and what its users decode cannot drift apart. occurred_at has
// whole seconds.
func header(req *envelope, requestID, id, kind string, now time.Time) events.Header {
	h := events.Header{V: events.Version, EventID: id, Kind: kind, RequestID: requestID, OccurredAt: now.UTC().Truncate(time.Second)}
	if req != nil {
		h.ThreadID, h.RunAgentID, h.CheckpointNamespace = req.ThreadID, req.RunAgentID, req.CheckpointNamespace
	}
	return h
}

// wireError is e as a failed event carries it.
func wireError(e *errcode.Error) events.Error {
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	return events.Error{Code: e.Code, Message: e.Message, Details: details, Retryable: e.Retryable}
}

// record wraps an event payload as an outbox record with its headers: the
// event kind (the subject's last token) and the request's traceparent.
func record(subject, id string, payload any, traceparent string) (outbox.Record, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return outbox.Record{}, errcode.Wrap(errcode.Internal, "encode event", err)
	}
	return newRecord(subject, id, data, traceparent), nil
}

func newRecord(subject, id string, data json.RawMessage, traceparent string) outbox.Record {
	h := map[string]string{topology.HeaderEventKind: subject[strings.LastIndexByte(subject, '.')+1:]}
	if traceparent != "" {
		h[topology.HeaderTraceparent] = traceparent
	}
	return outbox.Record{Subject: subject, EventID: id, Headers: h, Payload: data}
}

// encodeActivated is json.Marshal(ev) without re-scanning the checkpoint,
// the event's largest member: the event is encoded with a null checkpoint
// (its last member) and the checkpoint is appended in its place (see
// package rawjson).
func encodeActivated(ev events.Activated) (json.RawMessage, error) {
	cp := ev.Checkpoint
	ev.Checkpoint = nil
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "encode event", err)
	}
	const tail = `"checkpoint":null}`
	if !bytes.HasSuffix(data, []byte(tail)) {
		return nil, errcode.New(errcode.Internal, "encode event: checkpoint is not the last member")
	}
	out := make([]byte, 0, len(data)+len(cp))
	out = append(out, data[:len(data)-len("null}")]...)
	if out, err = rawjson.AppendRaw(out, cp); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "encode event", err)
	}
	return append(out, '}'), nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// usageWithAttempts returns the engine's provider_usage with the ledger's
// earlier, uncertain attempts of the request appended, so an operator sees
// every model call that may have been paid for.
func usageWithAttempts(usage json.RawMessage, attempts []ledger.Attempt) json.RawMessage {
	var list []json.RawMessage
	if hasJSONValue(usage) {
		if err := json.Unmarshal(usage, &list); err != nil {
			list = []json.RawMessage{usage}
		}
	}
	for _, a := range attempts {
		if a.Done {
			continue
		}
		entry, err := json.Marshal(map[string]any{
			"attempt": a.N, "outcome": "uncertain",
			"requested_at": a.RequestedAt.UTC().Format(time.RFC3339), "deadline": a.Deadline.UTC().Format(time.RFC3339),
		})
		if err == nil {
			list = append(list, entry)
		}
	}
	if list == nil {
		return json.RawMessage("[]")
	}
	out, err := json.Marshal(list)
	if err != nil {
		return json.RawMessage("[]")
	}
	return out
}
