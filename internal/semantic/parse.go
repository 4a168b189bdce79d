package semantic

import (
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/canonical"
	"github.com/cairnhq/cairn/internal/errcode"
)

// Shape and constructor messages of the semantic schema. They are part of the
// contract: tests and summarizer repair prompts compare them verbatim.
const (
	msgNotMap          = "semantic output must be a map"
	msgDuplicateFields = "semantic output has duplicate fields"
	msgUnknownFields   = "unknown semantic fields"
	msgMissingFields   = "required semantic fields are missing"
	msgVersion         = "semantic version is invalid"
	msgCollection      = "semantic collection is invalid or oversized"
	msgUnexpected      = "semantic object has unexpected fields"
	msgObject          = "semantic object is invalid"
	msgText            = "semantic text is invalid or oversized"
	msgIDs             = "semantic source event IDs are invalid"
	msgUUID            = "semantic UUID is invalid"
	msgEnum            = "semantic enum value is invalid"
	msgOmissionHash    = "secret omission hash is invalid"
	msgExclusive       = "request excerpt and omission are mutually exclusive"
	msgCoverage        = "semantic coverage is invalid"
)

func invalid(message string) *errcode.Error {
	return errcode.New(errcode.InvalidSemantic, message)
}

func invalidWith(message string, details map[string]any) *errcode.Error {
	return errcode.WithDetails(errcode.InvalidSemantic, message, details)
}

var (
	uuid7Pattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	hashPattern  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ValidUUID7 reports whether s is a lowercase RFC 9562 version-7 UUID. Cairn
// does not require citations to be UUIDv7 (decision 0.2 item 12); the helper
// serves schemas and tests that want the stricter shape.
func ValidUUID7(s string) bool { return uuid7Pattern.MatchString(s) }

// ValidHash reports whether s is 64 lowercase hex characters.
func ValidHash(s string) bool { return hashPattern.MatchString(s) }

// validID reports whether s can be a citation: 1..IDMaxBytes bytes of valid
// UTF-8 (UTF-8 so that every valid semantic can be hashed).
func validID(s string) bool {
	return len(s) >= 1 && len(s) <= IDMaxBytes && utf8.ValidString(s)
}

// ParseJSON decodes a semantic document strictly (duplicate keys at any depth
// are rejected) and shape-checks it like Parse. Every error is an
// *errcode.Error with code invalid_compaction_semantic.
func ParseJSON(b []byte) (*Semantic, error) {
	if len(b) > MaxJSONBytes {
		return nil, invalidWith("semantic output exceeds the byte limit", map[string]any{"bytes": len(b), "limit": MaxJSONBytes})
	}
	v, err := canonical.Decode(b)
	if errors.Is(err, canonical.ErrDuplicateKey) {
		return nil, errcode.Wrap(errcode.InvalidSemantic, msgDuplicateFields, err)
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidSemantic, msgNotMap, err)
	}
	return Parse(v)
}

// Parse builds a Semantic from a decoded value: a map[string]any as returned
// by canonical.Decode or built by hand (lists as []any, numbers as json.Number
// or Go numbers), or a *Semantic (re-validated and returned as is) or Semantic (re-validated
// and returned by address).
// It applies closed-field normalisation (unknown fields, then missing fields)
// and the shape check of the schema in the contract's order; the first
// failure is returned as an *errcode.Error with code invalid_compaction_semantic
// and the contract's message. Parse never panics.
func Parse(v any) (*Semantic, error) {
	switch x := v.(type) {
	case *Semantic:
		if x == nil {
			return nil, invalid(msgNotMap)
		}
		if err := x.Validate(); err != nil {
			return nil, err
		}
		return x, nil
	case Semantic:
		if err := x.Validate(); err != nil {
			return nil, err
		}
		return &x, nil
	case map[string]any:
		return parseMap(x)
	default:
		return nil, invalid(msgNotMap)
	}
}

// Validate shape-checks a typed value. It is what Parse does
// after closed-field normalisation, applied to s's Map (without building it).
func (s *Semantic) Validate() error {
	if s == nil {
		return invalid(msgNotMap)
	}
	return s.validateShape()
}

func parseMap(m map[string]any) (*Semantic, error) {
	if err := closedFields(m); err != nil {
		return nil, err
	}
	var s Semantic
	var err error
	if err = version(m["version"]); err != nil {
		return nil, err
	}
	s.Version = Version
	if s.Objective, err = sourcedEntries(m["objective"], limits.Objective); err != nil {
		return nil, err
	}
	if s.UserRequests, err = userRequests(m["user_requests"]); err != nil {
		return nil, err
	}
	if s.Constraints, err = sourcedEntries(m["constraints"], limits.Constraints); err != nil {
		return nil, err
	}
	if s.Decisions, err = decisions(m["decisions"]); err != nil {
		return nil, err
	}
	if s.Progress, err = progress(m["progress"]); err != nil {
		return nil, err
	}
	if s.CriticalContext, err = sourcedEntries(m["critical_context"], limits.CriticalContext); err != nil {
		return nil, err
	}
	if s.Errors, err = errorEntries(m["errors"]); err != nil {
		return nil, err
	}
	if s.ArtifactRefs, err = artifactRefs(m["artifact_refs"]); err != nil {
		return nil, err
	}
	if s.Coverage, err = coverage(m["coverage"]); err != nil {
		return nil, err
	}
	return &s, nil
}

// closedFields rejects unknown top-level keys, then missing ones. Duplicate
// keys cannot reach a Go map; ParseJSON reports them while decoding.
func closedFields(m map[string]any) error {
	var unknown []string
	for k := range m {
		if !slices.Contains(Fields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return invalidWith(msgUnknownFields, map[string]any{"fields": unknown})
	}
	var missing []string
	for _, k := range Fields {
		if _, ok := m[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return invalidWith(msgMissingFields, map[string]any{"fields": missing})
	}
	return nil
}

// version accepts 1 and 1.0 (the reference compares with ==, which equates
// them); anything else is invalid.
func version(v any) error {
	if f, ok := number(v); ok && f == Version {
		return nil
	}
	return invalid(msgVersion)
}

// number converts a numeric value of any accepted representation to float64.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	return 0, false
}

// integer converts an integer-typed value to int64. Floats (including 1.0
// and json.Number in float form) are not integers.
func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return n, err == nil
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

// list returns v as a list of at most maximum entries.
func list(v any, maximum int) ([]any, error) {
	var out []any
	switch x := v.(type) {
	case []any:
		out = x
	case []map[string]any:
		out = make([]any, len(x))
		for i, m := range x {
			out[i] = m
		}
	default:
		return nil, invalid(msgCollection)
	}
	if len(out) > maximum {
		return nil, invalid(msgCollection)
	}
	return out, nil
}

// closed returns v as an object whose key set is exactly keys.
func closed(v any, keys ...string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, invalid(msgObject)
	}
	if len(m) != len(keys) {
		return nil, invalid(msgUnexpected)
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return nil, invalid(msgUnexpected)
		}
	}
	return m, nil
}

// text returns v as 1..maximum bytes of valid UTF-8.
func text(v any, maximum int) (string, error) {
	s, ok := v.(string)
	if !ok || len(s) < 1 || len(s) > maximum || !utf8.ValidString(s) {
		return "", invalid(msgText)
	}
	return s, nil
}

func nullableText(v any, maximum int) (*string, error) {
	if v == nil {
		return nil, nil
	}
	s, err := text(v, maximum)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// eventIDs returns v as a list of minimum..SourceEventIDs unique citations.
func eventIDs(v any, minimum int) ([]string, error) {
	var raw []any
	switch x := v.(type) {
	case []any:
		raw = x
	case []string:
		raw = make([]any, len(x))
		for i, s := range x {
			raw[i] = s
		}
	default:
		return nil, invalid(msgIDs)
	}
	if len(raw) < minimum || len(raw) > limits.SourceEventIDs {
		return nil, invalid(msgIDs)
	}
	out := make([]string, 0, len(raw))
	for _, r := range raw {
		id, ok := r.(string)
		if !ok || !validID(id) || slices.Contains(out, id) {
			return nil, invalid(msgIDs)
		}
		out = append(out, id)
	}
	return out, nil
}

// citation returns v as one id (source_event_id, artifact_id).
func citation(v any) (string, error) {
	s, ok := v.(string)
	if !ok || !validID(s) {
		return "", invalid(msgUUID)
	}
	return s, nil
}

func enum(v any, allowed []string) (string, error) {
	s, ok := v.(string)
	if !ok || !slices.Contains(allowed, s) {
		return "", invalid(msgEnum)
	}
	return s, nil
}

func sourcedEntries(v any, maximum int) ([]Sourced, error) {
	raw, err := list(v, maximum)
	if err != nil {
		return nil, err
	}
	out := make([]Sourced, 0, len(raw))
	for _, r := range raw {
		m, err := closed(r, "text", "source_event_ids")
		if err != nil {
			return nil, err
		}
		var e Sourced
		if e.Text, err = text(m["text"], limits.TextBytes); err != nil {
			return nil, err
		}
		if e.SourceEventIDs, err = eventIDs(m["source_event_ids"], 1); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func userRequests(v any) ([]UserRequest, error) {
	raw, err := list(v, limits.UserRequests)
	if err != nil {
		return nil, err
	}
	out := make([]UserRequest, 0, len(raw))
	for _, r := range raw {
		m, err := closed(r, "source_event_id", "exact_excerpt", "secret_omission", "status")
		if err != nil {
			return nil, err
		}
		var e UserRequest
		if e.SourceEventID, err = citation(m["source_event_id"]); err != nil {
			return nil, err
		}
		if e.Status, err = enum(m["status"], requestStatuses); err != nil {
			return nil, err
		}
		if e.ExactExcerpt, e.SecretOmission, err = excerptOrOmission(m["exact_excerpt"], m["secret_omission"]); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// excerptOrOmission requires exactly one of the two: with no omission the
// excerpt must be text (so both null is a text error); with no excerpt the
// omission must be a closed {class, source_span_hash}.
func excerptOrOmission(excerpt, omission any) (*string, *SecretOmission, error) {
	switch {
	case omission == nil:
		s, err := text(excerpt, limits.TextBytes)
		if err != nil {
			return nil, nil, err
		}
		return &s, nil, nil
	case excerpt == nil:
		m, err := closed(omission, "class", "source_span_hash")
		if err != nil {
			return nil, nil, err
		}
		class, err := text(m["class"], ClassMaxBytes)
		if err != nil {
			return nil, nil, err
		}
		hash, ok := m["source_span_hash"].(string)
		if !ok || !ValidHash(hash) {
			return nil, nil, invalid(msgOmissionHash)
		}
		return nil, &SecretOmission{Class: class, SourceSpanHash: hash}, nil
	default:
		return nil, nil, invalid(msgExclusive)
	}
}

func decisions(v any) ([]Decision, error) {
	raw, err := list(v, limits.Decisions)
	if err != nil {
		return nil, err
	}
	out := make([]Decision, 0, len(raw))
	for _, r := range raw {
		m, err := closed(r, "text", "rationale", "source_event_ids")
		if err != nil {
			return nil, err
		}
		var e Decision
		if e.Text, err = text(m["text"], limits.TextBytes); err != nil {
			return nil, err
		}
		if e.Rationale, err = nullableText(m["rationale"], limits.TextBytes); err != nil {
			return nil, err
		}
		if e.SourceEventIDs, err = eventIDs(m["source_event_ids"], 1); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func progress(v any) (Progress, error) {
	var p Progress
	m, err := closed(v, "completed", "active", "blocked", "pending")
	if err != nil {
		return p, err
	}
	if p.Completed, err = progressItems(m["completed"], limits.ProgressCompleted); err != nil {
		return p, err
	}
	if p.Active, err = progressItems(m["active"], limits.ProgressActive); err != nil {
		return p, err
	}
	if p.Blocked, err = progressItems(m["blocked"], limits.ProgressBlocked); err != nil {
		return p, err
	}
	if p.Pending, err = progressItems(m["pending"], limits.ProgressPending); err != nil {
		return p, err
	}
	return p, nil
}

func progressItems(v any, maximum int) ([]ProgressItem, error) {
	raw, err := list(v, maximum)
	if err != nil {
		return nil, err
	}
	out := make([]ProgressItem, 0, len(raw))
	for _, r := range raw {
		m, err := closed(r, "text", "source_event_ids", "verification_event_ids")
		if err != nil {
			return nil, err
		}
		var e ProgressItem
		if e.Text, err = text(m["text"], limits.TextBytes); err != nil {
			return nil, err
		}
		if e.SourceEventIDs, err = eventIDs(m["source_event_ids"], 1); err != nil {
			return nil, err
		}
		if e.VerificationEventIDs, err = eventIDs(m["verification_event_ids"], 0); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func errorEntries(v any) ([]ErrorEntry, error) {
	raw, err := list(v, limits.Errors)
	if err != nil {
		return nil, err
	}
	out := make([]ErrorEntry, 0, len(raw))
	for _, r := range raw {
		m, err := closed(r, "message", "status", "source_event_ids")
		if err != nil {
			return nil, err
		}
		var e ErrorEntry
		if e.Message, err = text(m["message"], limits.TextBytes); err != nil {
			return nil, err
		}
		if e.Status, err = enum(m["status"], errorStatuses); err != nil {
			return nil, err
		}
		if e.SourceEventIDs, err = eventIDs(m["source_event_ids"], 1); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func artifactRefs(v any) ([]ArtifactRef, error) {
	raw, err := list(v, limits.ArtifactRefs)
	if err != nil {
		return nil, err
	}
	out := make([]ArtifactRef, 0, len(raw))
	for _, r := range raw {
		m, err := closed(r, "artifact_id", "purpose", "source_event_ids")
		if err != nil {
			return nil, err
		}
		var e ArtifactRef
		if e.ArtifactID, err = citation(m["artifact_id"]); err != nil {
			return nil, err
		}
		if e.Purpose, err = text(m["purpose"], limits.TextBytes); err != nil {
			return nil, err
		}
		if e.SourceEventIDs, err = eventIDs(m["source_event_ids"], 1); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// coverage requires integers with first > 0 and last >= first. A non-object
// is "semantic object is invalid", as in the reference.
func coverage(v any) (Coverage, error) {
	m, err := closed(v, "first_chat_seq", "last_chat_seq")
	if err != nil {
		return Coverage{}, err
	}
	first, okFirst := integer(m["first_chat_seq"])
	last, okLast := integer(m["last_chat_seq"])
	if !okFirst || !okLast || first <= 0 || last < first {
		return Coverage{}, invalid(msgCoverage)
	}
	return Coverage{FirstChatSeq: first, LastChatSeq: last}, nil
}
