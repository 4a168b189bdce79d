package consumer

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/jsonwire"
)

// envelope is the part of Request v1 (subjects.md) the pipeline itself
// reads: identity, lane, fences, claim check, deadline and harvest routing.
// The engine decodes the whole request strictly; this view is lenient so
// that a failed event can still name the request and lane of a malformed
// message. The json tags name the members both ways: fromMap reads a strict
// body's decoded map by them, encoding/json a body that is not strict.
type envelope struct {
	// The members are read in this order (fromMap): a body that fails
	// one keeps those before it, to name its failed event.
	V                  *int64        `json:"v"`
	RequestID          string        `json:"request_id"`
	RootTurnID         string        `json:"root_turn_id"`
	ParentCheckpointID *string       `json:"parent_checkpoint_id"`
	EventsObject       *string       `json:"events_object"`
	DeadlineAt         *string       `json:"deadline_at"`
	events.Correlation               // echoed into every event (header)
	Harvest            *bool         `json:"harvest"`
	Scope              *events.Scope `json:"scope"`
	PreviousSemantic   any           `json:"previous_semantic"`
	Events             any           `json:"events"`
	RehydrationState   any           `json:"rehydration_state"`

	deadline time.Time // parsed DeadlineAt; zero when none
	// decoded is the whole body as canonical.Decode returned it, when the
	// body is strict JSON (nil otherwise): the engine takes it instead of
	// decoding the body a second time.
	decoded map[string]any
}

func (e *envelope) lane() lanes.Lane {
	return lanes.Lane{RunAgentID: e.RunAgentID, CheckpointNamespace: e.CheckpointNamespace}
}

func (e *envelope) parent() string {
	if e.ParentCheckpointID == nil {
		return ""
	}
	return *e.ParentCheckpointID
}

// harvest is the envelope's harvest routing as an engine.Request, so that
// the scope and the harvest default follow the engine's one rule
// (EffectiveScope, HarvestEnabled).
func (e *envelope) harvest() *engine.Request {
	return &engine.Request{ThreadID: e.ThreadID, Scope: e.Scope, Harvest: e.Harvest}
}

// takeDecoded hands the decoded body on once: the engine owns what it is
// given, and a second compaction of the same delivery decodes afresh.
func (e *envelope) takeDecoded() map[string]any {
	m := e.decoded
	e.decoded = nil
	return m
}

// decodeEnvelope reads the pipeline's view of a request and checks what the
// pipeline depends on before the engine sees it: the version, the ids that
// key the ledger and the lane, exactly one source of events, and a parseable
// deadline. A body that is strict JSON is decoded once, by canonical.Decode,
// and the envelope read from that value; when it fails a check, the error
// reported is the engine's for the same body (what processor compact says
// offline), so that served and offline paths name the same first mistake.
// A body that is not strict JSON is read by encoding/json, so that its
// failed event can still name the request; when it fails a check, the
// error is again the engine's.
func decodeEnvelope(body []byte) (*envelope, error) {
	e := &envelope{}
	m, strict := decodeStrict(body)
	var err error
	if strict {
		err = e.fromMap(m)
	} else {
		err = e.fromJSON(body)
	}
	if err == nil {
		err = e.check()
	}
	if err != nil {
		return e, engineVerdict(body, m, err)
	}
	e.decoded = m
	return e, nil
}

// decodeStrict is body as canonical.Decode reads it, when that is an object.
func decodeStrict(body []byte) (map[string]any, bool) {
	if len(body) > engine.MaxRequestBytes {
		return nil, false
	}
	v, err := canonical.Decode(body)
	if err != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// engineVerdict is the engine's error for the request body (decoded as m
// when strict JSON), which failed the envelope's check with own; own when
// the engine accepts the body.
func engineVerdict(body []byte, m map[string]any, own error) error {
	var err error
	if m != nil {
		_, err = engine.DecodeRequestValue(m)
	} else {
		_, err = engine.DecodeRequest(body)
	}
	if err != nil {
		return err
	}
	return own
}

func (e *envelope) check() error {
	if e.V == nil {
		return versionError(nil)
	}
	if *e.V != engine.RequestVersion {
		return versionError(*e.V)
	}
	if err := e.checkNames(); err != nil {
		return err
	}
	if inline, object := e.Events != nil, e.EventsObject != nil; inline == object {
		field, rule := "events_object", "exclusive"
		if !inline {
			field, rule = "events", "required"
		}
		return errcode.WithDetails(errcode.InvalidRequest, "exactly one of events and events_object is required",
			map[string]any{"field": field, "fields": []any{"events", "events_object"}, "rule": rule})
	}
	if e.DeadlineAt != nil {
		t, err := time.Parse(time.RFC3339, *e.DeadlineAt)
		if err != nil {
			return errcode.WithDetails(errcode.InvalidRequest, "deadline_at is not RFC 3339",
				map[string]any{"field": "deadline_at", "rule": "format", "reason": err.Error()})
		}
		e.deadline = t
	}
	return nil
}

// checkNames checks every id and name the pipeline puts in a KV key, an
// object name, a subject or a header (the request id, the lane, the
// parent checkpoint, events_object, the thread and scope of harvested
// facts) against engine.ValidName, before any of them reaches the server:
// a name longer than the server's 4 KiB control line makes it close the
// connection. A field given as a string must be a valid name; only
// thread_id may be absent or empty here (the engine requires it, and the
// pipeline needs it only for harvesting).
func (e *envelope) checkNames() error {
	type name struct {
		field    string
		value    *string
		required bool
	}
	names := []name{
		{"request_id", &e.RequestID, true}, {"thread_id", &e.ThreadID, false},
		{"run_agent_id", &e.RunAgentID, true}, {"checkpoint_namespace", &e.CheckpointNamespace, true},
		{"parent_checkpoint_id", e.ParentCheckpointID, true}, {"events_object", e.EventsObject, true},
	}
	if e.Scope != nil {
		names = append(names, name{"scope", &e.Scope.Kind, true}, name{"scope", &e.Scope.ID, true})
	}
	for _, n := range names {
		if n.value == nil || (*n.value == "" && !n.required) {
			continue
		}
		if !events.ValidName(*n.value) {
			return events.InvalidName(n.field, "compaction request identities are invalid")
		}
	}
	return nil
}

// fromMap fills e from a request canonical.Decode decoded, by the json
// tags of its fields (embedded ones included, so that a field added to
// events.Correlation is echoed with no edit here). As with encoding/json,
// an absent or null member leaves its field unset, and a member of the
// wrong JSON type is an error naming it; members the engine decodes itself
// (of type any) are taken as decoded.
func (e *envelope) fromMap(m map[string]any) error {
	dst := reflect.ValueOf(e).Elem()
	for _, f := range envelopeFields {
		raw := m[f.Name]
		if raw == nil {
			continue
		}
		if jsonwire.ReadMember(dst.FieldByIndex(f.Index), f, raw) == "" {
			continue
		}
		if f.Name == "v" {
			return versionError(raw)
		}
		return typeError(f.Name, f.Type.String())
	}
	return nil
}

// envelopeFields are listed once: listing them for every request took a
// tenth of its decoding.
var envelopeFields = jsonwire.Fields(reflect.TypeFor[envelope]())

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// fromJSON fills e from a body that is not strict JSON, with encoding/json.
// Its error is never the one reported: the engine refuses every such body
// with its own (engineVerdict).
func (e *envelope) fromJSON(body []byte) error {
	if err := json.Unmarshal(body, e); err != nil {
		return errcode.Wrap(errcode.InvalidRequest, "compaction request must be a JSON object", err)
	}
	return nil
}

// versionError is the failure of a request whose v is not 1, absent or of
// another type included (value nil: absent), as the engine reports it.
func versionError(value any) *errcode.Error {
	return errcode.WithDetails(errcode.UnsupportedVersion, "unsupported request version",
		map[string]any{"field": "v", "rule": "enum", "value": value, "supported": []any{int64(engine.RequestVersion)}})
}

// typeError is the failure of a member of the wrong JSON type, in the
// engine's terms: the field's path, rule "type" and the type expected.
func typeError(field, expected string) *errcode.Error {
	return errcode.WithDetails(errcode.InvalidRequest, "compaction request field has the wrong type",
		map[string]any{"field": field, "rule": "type", "expected": expected})
}

// The rehydration state a request may carry is bounded below the
// engine's 1 MiB by the server's max_payload: the checkpoint carries the
// state verbatim, and every stored message that holds the checkpoint (its
// record, a ledger entry, a lane head) must fit in one message. The state
// may take half of what max_payload leaves after rehydrationReserve (two
// summaries of the default semantic_max_bytes, 128 KiB each, and 64 KiB of
// ids, hashes and accounting); the other half is the margin for the rest
// of the checkpoint and the record around it. With the default 1 MiB
// max_payload the limit is 352 KiB.
const (
	rehydrationReserve       = 320 << 10
	engineMaxRehydration     = 1 << 20
	defaultServerMaxPayload  = 1 << 20
	rehydrationRuleFormatted = "at most %d bytes encoded: (max_payload − 320 KiB) / 2"
)

// maxRehydrationBytes is the largest rehydration state a request may
// carry under a server whose max_payload is maxPayload (0: unknown, the
// default 1 MiB); never below a quarter of max_payload.
func maxRehydrationBytes(maxPayload int64) int64 {
	if maxPayload <= 0 {
		maxPayload = defaultServerMaxPayload
	}
	return min(max((maxPayload-rehydrationReserve)/2, maxPayload/4), engineMaxRehydration)
}

// checkRehydrationSize refuses, before the request does any work, a
// rehydration state whose stored form cannot fit: payload_too_large, not
// retryable. Without it such a request failed only at its first ledger
// write, after the model call.
func checkRehydrationSize(req *envelope, maxPayload int64) error {
	if req.RehydrationState == nil {
		return nil
	}
	size, limit := encodedSize(req.RehydrationState), maxRehydrationBytes(maxPayload)
	if size <= limit {
		return nil
	}
	return errcode.WithDetails(errcode.PayloadTooLarge, "rehydration_state exceeds the size Cairn can store",
		map[string]any{"field": "rehydration_state", "rule": "range", "expected": fmt.Sprintf(rehydrationRuleFormatted, limit),
			"bytes": size, "limit": limit})
}

// encodedSize is the size of v as Cairn stores it: encoding/json's
// encoding, which escapes '<', '>' and '&' and U+2028 and U+2029 as six
// bytes each where JSON does not require it.
func encodedSize(v any) int64 {
	b, err := json.Marshal(v)
	if err != nil {
		return 0 // not encodable: the engine refuses it
	}
	return int64(len(b))
}
