package consumer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/canonical"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/lanes"
)

// envelope is the part of Request v1 (wire.md) the pipeline itself reads:
// identity, lane, fences, claim check, deadline and harvest routing. The
// engine decodes the whole request strictly; this view is lenient so that a
// failed event can still name the request and lane of a malformed message.
type envelope struct {
	V                        *int            `json:"v"`
	RequestID                string          `json:"request_id"`
	Trigger                  string          `json:"trigger"`
	ThreadID                 string          `json:"thread_id"`
	RootTurnID               string          `json:"root_turn_id"`
	RunAgentID               string          `json:"run_agent_id"`
	CheckpointNamespace      string          `json:"checkpoint_namespace"`
	ParentCheckpointID       *string         `json:"parent_checkpoint_id"`
	PreviousSemantic         json.RawMessage `json:"previous_semantic"`
	Events                   json.RawMessage `json:"events"`
	EventsObject             *string         `json:"events_object"`
	DeadlineAt               *string         `json:"deadline_at"`
	Scope                    *Scope          `json:"scope"`
	RehydrationState         json.RawMessage `json:"rehydration_state"`
	Harvest                  *bool           `json:"harvest"`
	NewTokensSinceCompaction *int64          `json:"new_tokens_since_compaction"`

	deadline time.Time // parsed DeadlineAt; zero when none
	// decoded is the whole body as canonical.Decode returned it, when the
	// body is strict JSON (nil otherwise): the engine takes it instead of
	// decoding the body a second time.
	decoded map[string]any
}

// Scope is where harvested facts go (wire.md).
type Scope struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
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

func (e *envelope) harvestScope() Scope {
	if e.Scope != nil && e.Scope.Kind != "" && e.Scope.ID != "" {
		return *e.Scope
	}
	return Scope{Kind: "thread", ID: e.ThreadID}
}

// takeDecoded hands the decoded body on once: the engine owns what it is
// given, and a second compaction of the same delivery decodes afresh.
func (e *envelope) takeDecoded() map[string]any {
	m := e.decoded
	e.decoded = nil
	return m
}

func (e *envelope) wantsHarvest() bool { return e.Harvest == nil || *e.Harvest }

func hasJSONValue(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// decodeEnvelope reads the pipeline's view of a request and checks what the
// pipeline depends on before the engine sees it: the version, the ids that
// key the ledger and the lane, exactly one source of events, and a parseable
// deadline.
func decodeEnvelope(body []byte) (*envelope, error) {
	var e envelope
	if err := e.unmarshal(body); err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, "compaction request must be a JSON object", err)
	}
	if e.V == nil {
		return &e, errcode.New(errcode.InvalidRequest, "required compaction request fields are missing")
	}
	if *e.V != 1 {
		return &e, errcode.WithDetails(errcode.UnsupportedVersion, "unsupported request version", map[string]any{"v": *e.V})
	}
	if err := e.checkNames(); err != nil {
		return &e, err
	}
	inline, object := hasJSONValue(e.Events), e.EventsObject != nil
	if inline == object {
		return &e, errcode.New(errcode.InvalidRequest, "exactly one of events and events_object is required")
	}
	if e.DeadlineAt != nil {
		t, err := time.Parse(time.RFC3339, *e.DeadlineAt)
		if err != nil {
			return &e, errcode.Wrap(errcode.InvalidRequest, "deadline_at is not RFC 3339", err)
		}
		e.deadline = t
	}
	return &e, nil
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
		if !engine.ValidName(*n.value) {
			return engine.InvalidName(n.field, "compaction request identities are invalid")
		}
	}
	return nil
}

// unmarshal fills e from body. encoding/json reads the whole body slowly
// (it validates every byte, then decodes), and the events array is nearly
// all of it; so a body that decodes as strict JSON (canonical.Decode, which
// the engine needs anyway and gets as e.decoded) has its events member cut
// out by a byte scan and only the rest goes through encoding/json, with the
// same result. Anything else is read whole by encoding/json as before, so
// that a malformed request can still be named in its failed event.
func (e *envelope) unmarshal(body []byte) error {
	if len(body) <= engine.MaxRequestBytes {
		if v, err := canonical.Decode(body); err == nil {
			m, isObject := v.(map[string]any)
			rest, events, ok := cutMember(body, "events")
			if isObject && ok && json.Unmarshal(rest, e) == nil {
				e.Events, e.decoded = events, m
				return nil
			}
			*e = envelope{}
		}
	}
	return json.Unmarshal(body, e)
}

// cutMember returns the JSON object obj (known to be valid JSON) with the
// value of its top-level member key replaced by null, and that value. It
// returns obj itself when there is no such member, and ok false when it
// cannot tell: obj is not an object, or some key has escapes or differs
// from key only in case (encoding/json matches keys case-insensitively).
func cutMember(obj []byte, key string) (rest, value []byte, ok bool) {
	i := skipSpace(obj, 0)
	if i == len(obj) || obj[i] != '{' {
		return nil, nil, false
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
		if i == len(obj) || obj[i] == '}' {
			return obj, nil, true
		}
		end := bytes.IndexByte(obj[i+1:], '"')
		if obj[i] != '"' || end < 0 {
			return nil, nil, false
		}
		name := obj[i+1 : i+1+end]
		if bytes.IndexByte(name, '\\') >= 0 {
			return nil, nil, false
		}
		i = skipSpace(obj, i+end+2)
		if i == len(obj) || obj[i] != ':' {
			return nil, nil, false
		}
		from := skipSpace(obj, i+1)
		to := skipValue(obj, from)
		switch {
		case string(name) == key:
			rest = make([]byte, 0, len(obj)-(to-from)+4)
			rest = append(append(append(rest, obj[:from]...), "null"...), obj[to:]...)
			return rest, obj[from:to], true
		case bytes.EqualFold(name, []byte(key)):
			return nil, nil, false
		}
		i = to
	}
}

// skipValue returns the index just past the JSON value starting at i in
// valid JSON.
func skipValue(b []byte, i int) int {
	depth, inString := 0, false
	for ; i < len(b); i++ {
		if inString {
			// Strings are most of a request (event content): jump to the
			// next quote and count the backslashes before it.
			j := bytes.IndexByte(b[i:], '"')
			if j < 0 {
				return len(b)
			}
			if i += j; escaped(b, i) {
				continue
			}
			inString = false
			if depth == 0 {
				return i + 1
			}
			continue
		}
		c := b[i]
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i // the end of the enclosing object
			}
		case ',':
			if depth == 0 {
				return i
			}
		case ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// escaped reports whether the quote at b[i], inside a string, is escaped:
// an odd run of backslashes precedes it. The run cannot reach back past the
// string's opening quote.
func escaped(b []byte, i int) bool {
	n := 0
	for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
		n++
	}
	return n%2 == 1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// The rehydration state a request may carry is bounded below the
// engine's 1 MiB by the server's max_payload: the checkpoint carries the
// state verbatim, and the ledger entry of a stored request holds the
// checkpoint twice (itself, and inside its plan's activated event) in one
// message. rehydrationReserve is kept for the rest of those two copies:
// two summaries of the default semantic_max_bytes (128 KiB) and 64 KiB of
// ids, hashes and accounting. With the default 1 MiB max_payload the
// limit is 352 KiB.
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
	size, limit := encodedSize(req.RehydrationState), maxRehydrationBytes(maxPayload)
	if size <= limit {
		return nil
	}
	return errcode.WithDetails(errcode.PayloadTooLarge, "rehydration_state exceeds the size Cairn can store",
		map[string]any{"field": "rehydration_state", "rule": fmt.Sprintf(rehydrationRuleFormatted, limit),
			"bytes": size, "limit": limit})
}

// encodedSize is an upper bound of raw's size once Cairn stores it: the
// bytes as sent, plus the growth of the characters encoding/json escapes
// where JSON does not require it ('<', '>' and '&' become six bytes,
// U+2028 and U+2029 grow from three to six).
func encodedSize(raw json.RawMessage) int64 {
	n := int64(len(raw))
	n += 5 * int64(bytes.Count(raw, []byte("<"))+bytes.Count(raw, []byte(">"))+bytes.Count(raw, []byte("&")))
	n += 3 * int64(bytes.Count(raw, []byte("\u2028"))+bytes.Count(raw, []byte("\u2029")))
	return n
}
