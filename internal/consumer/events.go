package consumer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/outbox"
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

// header returns the fields every compaction event carries (docs/events.md). The
// event types are the public ones of package events, so what Cairn
// publishes and what its users decode cannot drift apart. occurred_at has
// whole seconds.
func header(req *envelope, requestID, id, kind string, now time.Time) events.Header {
	h := events.Header{V: events.Version, EventID: id, Kind: kind, RequestID: requestID, OccurredAt: now.UTC().Truncate(time.Second)}
	if req != nil {
		h.Correlation = req.Correlation
	}
	return h
}

// wireError is e as a failed event carries it, bounded: the message is
// cut to maxEchoMessage bytes and the details by boundValue, so that what a
// client sent and an error echoes cannot make the event too large to store.
func wireError(e *errcode.Error) events.Error {
	details, _ := boundValue(e.Details, 0).(map[string]any)
	if details == nil {
		details = map[string]any{}
	}
	return events.Error{Code: e.Code, Message: engine.TruncateUTF8(e.Message, maxEchoMessage), Details: details, Retryable: e.Retryable}
}

// Bounds of what a failed event echoes. A string is cut with a "…" marker,
// a list or object keeps its first entries (an object in key order) and
// says how many it had under "…", nesting stops at maxEchoDepth. Encoded
// with every character escaped (six bytes each), bounded details stay far
// below maxFailedEventBytes.
const (
	maxEchoMessage = 1024
	maxEchoString  = 256
	maxEchoEntries = 16
	maxEchoDepth   = 4
)

// boundValue returns v, a JSON-like value, within the echo bounds.
func boundValue(v any, depth int) any {
	switch x := v.(type) {
	case string:
		return engine.TruncateUTF8(x, maxEchoString)
	case []any:
		if depth >= maxEchoDepth {
			return []any{truncatedMarker}
		}
		out := make([]any, 0, min(len(x), maxEchoEntries)+1)
		for _, item := range x[:min(len(x), maxEchoEntries)] {
			out = append(out, boundValue(item, depth+1))
		}
		if len(x) > maxEchoEntries {
			out = append(out, fmt.Sprintf("%s %d more", truncatedMarker, len(x)-maxEchoEntries))
		}
		return out
	case []string:
		list := make([]any, len(x))
		for i, s := range x {
			list[i] = s
		}
		return boundValue(list, depth)
	case map[string]any:
		return boundMap(x, depth)
	case bool, nil, int, int64, uint64, float64, json.Number:
		return x
	default:
		// A type the bounds do not know: its encoding, as a bounded string.
		b, err := json.Marshal(x)
		if err != nil {
			return truncatedMarker
		}
		return engine.TruncateUTF8(string(b), maxEchoString)
	}
}

func boundMap(m map[string]any, depth int) map[string]any {
	if depth >= maxEchoDepth {
		return map[string]any{truncatedMarker: int64(len(m))}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]any, min(len(keys), maxEchoEntries)+1)
	for _, k := range keys[:min(len(keys), maxEchoEntries)] {
		out[engine.TruncateUTF8(k, maxEchoString)] = boundValue(m[k], depth+1)
	}
	if len(keys) > maxEchoEntries {
		out[truncatedMarker] = int64(len(keys))
	}
	return out
}

// truncatedMarker marks what the echo bounds left out.
const truncatedMarker = "…"

// record wraps an event payload as an outbox record with its headers: the
// event kind (the subject's last token) and the request's traceparent.
func record(subject, id string, payload any, traceparent string) (outbox.Record, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return outbox.Record{}, errcode.Wrap(errcode.Internal, "encode event", err)
	}
	return newRecord(subject, id, data, traceparent), nil
}

// activatedRecord is the outbox record of an activated event ev as Cairn
// stores it: ev with a null checkpoint, naming the checkpoint record of
// ev.CheckpointID, which holds it (see package lanes, cite.go).
func activatedRecord(id string, ev events.Activated, traceparent string) (outbox.Record, error) {
	ev.Checkpoint = nil
	rec, err := record(topology.SubjectActivated, id, ev, traceparent)
	rec.CheckpointRef = ev.CheckpointID
	return rec, err
}

func newRecord(subject, id string, data json.RawMessage, traceparent string) outbox.Record {
	h := map[string]string{topology.HeaderEventKind: subject[strings.LastIndexByte(subject, '.')+1:]}
	if usableTraceparent(traceparent) {
		h[topology.HeaderTraceparent] = traceparent
	}
	return outbox.Record{Subject: subject, EventID: id, Headers: h, Payload: data}
}

// maxTraceparent bounds the traceparent an event copies from its request:
// a W3C traceparent has 55 characters; anything much longer is not one,
// and a header is not the place to echo a client's bytes.
const maxTraceparent = 128

// usableTraceparent reports whether a request's traceparent may be copied
// into an event's headers: short, printable ASCII.
func usableTraceparent(tp string) bool {
	if tp == "" || len(tp) > maxTraceparent {
		return false
	}
	for i := 0; i < len(tp); i++ {
		if tp[i] < 0x21 || tp[i] > 0x7e {
			return false
		}
	}
	return true
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
		entry, err := json.Marshal(events.UncertainAttempt{
			Attempt: a.N, Outcome: events.OutcomeUncertain,
			RequestedAt: a.RequestedAt.UTC().Format(time.RFC3339), Deadline: a.Deadline.UTC().Format(time.RFC3339),
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

// failedRecord builds the failed event. Its id is deterministic: from the
// request id and ledger round; for a conflicting body from the request id
// and the body's hash; for an undecodable message from its Nats-Msg-Id.
// An id that breaks the name rule (engine.ValidName), or none at all,
// cannot name the event (it would not fit a header, or would be echoed
// with control characters): the event is then named after the body,
// request_id "msg-<32 hex of its sha256>" and event id "…:failed".
//
// The event echoes the request's lane and thread only when they are valid
// names, and the error bounded (wireError). An event that is still over
// failedEventLimit (a server configured with a small max_payload) is
// replaced by a minimal one: the code, a cut message, no details.
func (p *Processor) failedRecord(d *delivery, e *errcode.Error) (outbox.Record, error) {
	rid := requestIDOf(d)
	var id string
	switch {
	case !events.ValidName(rid):
		rid = bodyName(d.body)
		id = rid + ":" + kindFailed
	case d.route == routeConflict:
		id = rid + ":conflict:" + ledger.ContentHash(d.body)[:16]
	case d.entry != nil:
		id = eventID(rid, kindFailed, d.entry.Round)
	default:
		id = eventID(rid, kindFailed, 0)
	}
	ev := events.Failed{Header: header(nil, rid, id, kindFailed, p.now()), Error: wireError(e), StreamSequence: d.streamSeq}
	if d.req != nil {
		ev.ThreadID, ev.RunAgentID, ev.CheckpointNamespace = nameOrEmpty(d.req.ThreadID), nameOrEmpty(d.req.RunAgentID), nameOrEmpty(d.req.CheckpointNamespace)
	}
	rec, err := record(topology.SubjectFailed, id, ev, d.traceparent)
	if err == nil && len(rec.Payload) <= p.failedEventLimit() {
		return rec, nil
	}
	ev.Error = minimalError(e)
	return record(topology.SubjectFailed, id, ev, d.traceparent)
}

// bodyName names a message by its body: "msg-<32 hex of its sha256>".
func bodyName(body []byte) string { return "msg-" + ledger.ContentHash(body)[:32] }

func nameOrEmpty(s string) string {
	if events.ValidName(s) {
		return s
	}
	return ""
}

// maxFailedEventBytes bounds a failed event's payload; its headers are
// bounded by the id rule and maxTraceparent.
const maxFailedEventBytes = 64 << 10

// failedEventLimit is the largest failed event published whole: at most
// maxFailedEventBytes, and always room for headers under the server's
// max_payload.
func (p *Processor) failedEventLimit() int {
	limit := maxFailedEventBytes
	if mp := p.maxPayload(); mp > 0 {
		limit = min(limit, int(mp)-4<<10)
	}
	return limit
}

// maxPayload is the server's max_payload as the connection knows it, 0
// when unknown.
func (p *Processor) maxPayload() int64 {
	if p.js == nil || p.js.Conn() == nil {
		return 0
	}
	return p.js.Conn().MaxPayload()
}

// minimalError is the error of a failed event that did not fit whole:
// the code, the message cut short, and details saying so.
func minimalError(e *errcode.Error) events.Error {
	return events.Error{Code: e.Code, Message: engine.TruncateUTF8(e.Message, maxEchoString),
		Details: map[string]any{"truncated": true}, Retryable: e.Retryable}
}

// hasJSONValue reports whether raw holds a value other than null.
func hasJSONValue(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}
