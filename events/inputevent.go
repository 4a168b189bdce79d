package events

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
)

// Bounds of an InputEvent (subjects.md, Request v1).
const (
	MaxContentBytes     = 1 << 20
	MaxEventArtifactIDs = 128
)

// InputEvent is one closed, lane-local source event (subjects.md). Its JSON
// names are the wire names. Content, Tool, ArtifactIDs and Truncated are
// covered by ContentHash; Provenance by ProvenanceSHA256.
type InputEvent struct {
	EventID             string         `json:"event_id" doc:"unique id of the event within the lane (1..200 bytes)" minLength:"1" maxLength:"200"`
	RunAgentID          string         `json:"run_agent_id" doc:"the agent; with checkpoint_namespace it names the lane; the request's run_agent_id" minLength:"1" maxLength:"200"`
	ChatSeq             int64          `json:"chat_seq" doc:"position in the conversation, > 0, never below an earlier event's" minimum:"1"`
	LaneEventOrdinal    int64          `json:"lane_event_ordinal" doc:"position in the lane, > 0 and strictly increasing" minimum:"1"`
	CheckpointNamespace string         `json:"checkpoint_namespace" doc:"the lane within the agent (1..200 bytes); the request's checkpoint_namespace" minLength:"1" maxLength:"200"`
	Role                string         `json:"role" doc:"who wrote the event" enum:"user|assistant|tool"`
	Provenance          any            `json:"provenance" doc:"any JSON value describing where the event came from"`
	ProvenanceSHA256    string         `json:"provenance_sha256,omitempty" doc:"canonical hash of provenance (docs/canonical-json.md); computed by Cairn when absent or null" null:"true" pattern:"^[0-9a-f]{64}$"`
	ContentHash         string         `json:"content_hash,omitempty" doc:"canonical hash of {artifact_ids, content, tool, truncated}; computed by Cairn when absent or null" null:"true" pattern:"^[0-9a-f]{64}$"`
	Content             *string        `json:"content" required:"false" doc:"the event's text (at most 1 MiB of UTF-8), null or absent" maxLength:"1048576"`
	Tool                map[string]any `json:"tool,omitempty" doc:"tool call or result metadata (call_id, name, ...), canonical JSON"`
	ArtifactIDs         []string       `json:"artifact_ids,omitempty" doc:"ids of artifacts the event refers to (at most 128, each 1..200 bytes)" maxItems:"128"`
	Truncated           bool           `json:"truncated,omitempty" doc:"the producer already cut the content"`
	Protected           bool           `json:"protected,omitempty" doc:"never cut or projected"`
	// TokenCount, when set, is the caller's token estimate for the event; when
	// nil the event costs the byte size of its canonical View.
	TokenCount *int64 `json:"token_count,omitempty" doc:"the producer's own token count of the event, used instead of Cairn's" minimum:"0"`
}

var eventFields = jsonKeys(reflect.TypeFor[InputEvent]())

// requiredEventFields are the fields an event must carry. provenance_sha256
// and content_hash may be left out (or null): Cairn then computes them from
// the event itself, so they attest nothing the producer checked
// (docs/request.md, "Hashes a producer may leave out").
var requiredEventFields = []string{"event_id", "run_agent_id", "chat_seq", "lane_event_ordinal",
	"checkpoint_namespace", "role", "provenance"}

// fieldError is an invalid_compaction_event naming the event and the field
// that broke the rule, so a producer can find it in a long lane.
func (e InputEvent) fieldError(field, rule, message string) *errcode.Error {
	return errcode.WithDetails(errcode.InvalidEvent, message, map[string]any{
		"event_id": e.EventID, "field": field, "rule": rule,
	})
}

// hashMemberRule is the rule a hash member that optionalString refused broke:
// pattern for a string (the empty one), type for any other value.
func hashMemberRule(v any) string {
	if _, isString := v.(string); isString {
		return "pattern"
	}
	return "type"
}

// hashMismatch is fieldError for a hash that does not match what the event
// hashes to, with both values.
func (e InputEvent) hashMismatch(field, rule, message string, expected hexSum, received string) *errcode.Error {
	err := e.fieldError(field, rule, message)
	err.Details["expected"], err.Details["received"] = string(expected[:]), received
	return err
}

// contentSum is the content hash of these fields as a hexSum.
func contentSum(content *string, tool map[string]any, artifactIDs []string, truncated bool) (hexSum, error) {
	bp := scratch.get()
	b, err := appendContentPayload(*bp, content, tool, artifactIDs, truncated)
	var sum hexSum
	if err == nil {
		sum = sumOf(b)
	}
	scratch.put(bp, b)
	return sum, err
}

// provenanceSum is canonical.Hash(provenance) as a hexSum.
func provenanceSum(provenance any) (hexSum, error) {
	bp := scratch.get()
	b, err := canonical.AppendEncode(*bp, provenance)
	var sum hexSum
	if err == nil {
		sum = sumOf(b)
	}
	scratch.put(bp, b)
	return sum, err
}

// hexSum is a SHA-256 in lowercase hex, as canonical.HashBytes returns it,
// held in an array: validating an event compares two hashes with the
// event's fields, which then allocates nothing.
type hexSum [2 * sha256.Size]byte

func sumOf(b []byte) hexSum {
	sum := sha256.Sum256(b)
	var h hexSum
	hex.Encode(h[:], sum[:])
	return h
}

// matches reports whether text is this hash.
func (h *hexSum) matches(text string) bool { return string(h[:]) == text }

// errToolNotCanonical reports a tool object outside canonical JSON.
var errToolNotCanonical = errors.New("tool object is not canonical JSON")

// appendContentPayload appends the canonical encoding of the content-hash
// payload, keys in byte order, without building a map.
func appendContentPayload(dst []byte, content *string, tool map[string]any, artifactIDs []string, truncated bool) ([]byte, error) {
	var err error
	dst = append(dst, `{"artifact_ids":`...)
	if dst, err = appendStrings(dst, artifactIDs); err != nil {
		return dst, err
	}
	dst = append(dst, `,"content":`...)
	if dst, err = appendOptionalString(dst, content); err != nil {
		return dst, err
	}
	dst = append(dst, `,"tool":`...)
	if dst, err = canonical.AppendEncode(dst, mapOrNil(tool)); err != nil {
		return dst, fmt.Errorf("%w: %w", errToolNotCanonical, err)
	}
	dst = append(dst, `,"truncated":`...)
	return append(strconv.AppendBool(dst, truncated), '}'), nil
}

func stringsOrEmpty(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

func stringOrNil(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func mapOrNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// Validate checks the event against the contract in the contract's order;
// the first failure wins. Errors are invalid_compaction_event.
func (e InputEvent) Validate() error {
	switch {
	case !isID(e.EventID):
		return e.fieldError("event_id", "range", "event identities are invalid")
	case !isID(e.RunAgentID):
		return e.fieldError("run_agent_id", "range", "event identities are invalid")
	case e.ChatSeq <= 0:
		return e.fieldError("chat_seq", "range", "chat sequence is invalid")
	case e.LaneEventOrdinal <= 0:
		return e.fieldError("lane_event_ordinal", "range", "lane ordinal is invalid")
	case !isNamespace(e.CheckpointNamespace):
		return e.fieldError("checkpoint_namespace", "range", "checkpoint namespace is invalid")
	case e.Role != RoleUser && e.Role != RoleAssistant && e.Role != RoleTool:
		return e.fieldError("role", "enum", "event role is invalid")
	}
	provenanceHash, err := provenanceSum(e.Provenance)
	switch {
	case err != nil:
		return e.fieldError("provenance", "canonical", "event provenance is invalid")
	case !isHash64(e.ProvenanceSHA256):
		return e.fieldError("provenance_sha256", "pattern", "event hashes are invalid")
	case !isHash64(e.ContentHash):
		return e.fieldError("content_hash", "pattern", "event hashes are invalid")
	case !provenanceHash.matches(e.ProvenanceSHA256):
		return e.hashMismatch("provenance_sha256", "hash", "provenance hash does not match", provenanceHash, e.ProvenanceSHA256)
	}
	return e.validateContent()
}

func (e InputEvent) validateContent() error {
	if e.Content != nil && (len(*e.Content) > MaxContentBytes || !utf8.ValidString(*e.Content)) {
		return e.fieldError("content", "range", "event content is invalid")
	}
	hash, err := contentSum(e.Content, e.Tool, e.ArtifactIDs, e.Truncated)
	if errors.Is(err, errToolNotCanonical) {
		return e.fieldError("tool", "canonical", "event tool projection is invalid")
	}
	if len(e.ArtifactIDs) > MaxEventArtifactIDs {
		return e.fieldError("artifact_ids", "range", "event artifact IDs are invalid")
	}
	for _, id := range e.ArtifactIDs {
		if !isID(id) {
			return e.fieldError("artifact_ids", "range", "event artifact IDs are invalid")
		}
	}
	if err != nil {
		return e.fieldError("content_hash", "canonical", "content hash does not match")
	}
	if !hash.matches(e.ContentHash) {
		return e.hashMismatch("content_hash", "hash", "content hash does not match", hash, e.ContentHash)
	}
	if e.TokenCount != nil && *e.TokenCount < 0 {
		return e.fieldError("token_count", "range", "event token count is invalid")
	}
	return nil
}

// DecodeEvent builds an InputEvent from a decoded JSON object and validates it.
// Every error is invalid_compaction_event.
func DecodeEvent(v any) (InputEvent, error) {
	e, err := DecodeEventFields(v)
	if err != nil {
		return InputEvent{}, err
	}
	return e, e.Validate()
}

// DecodeEventFields builds an InputEvent from a decoded JSON object,
// checking its key set and JSON types and filling in the hashes it leaves
// out; Validate checks the values. Every error is invalid_compaction_event.
func DecodeEventFields(v any) (InputEvent, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return InputEvent{}, errcode.Field(errcode.InvalidEvent, "event must be a map", "event", "type").With("expected", "object")
	}
	if unknown := unknownKeys(m, eventFields); len(unknown) > 0 {
		return InputEvent{}, errcode.WithDetails(errcode.InvalidEvent, "unknown event fields", map[string]any{
			"event_id": m["event_id"], "field": truncateUTF8(unknown[0], maxListedNameSize), "rule": "unknown",
			"fields": stringsToAny(unknown),
		})
	}
	var missing []string
	for _, f := range requiredEventFields {
		if _, ok := m[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return InputEvent{}, errcode.WithDetails(errcode.InvalidEvent, "required event fields are missing",
			map[string]any{"event_id": m["event_id"], "field": missing[0], "rule": "required",
				"missing_fields": stringsToAny(missing)})
	}
	e, err := eventFromMap(m)
	if err != nil {
		return e, err
	}
	return e, e.fillOmittedHashes()
}

// eventFromMap converts field types; a wrong JSON type fails with the message
// of the check that would have rejected the value.
func eventFromMap(m map[string]any) (InputEvent, error) {
	var e InputEvent
	var ok1, ok2 bool
	e.EventID, ok1 = m["event_id"].(string)
	e.RunAgentID, ok2 = m["run_agent_id"].(string)
	if !ok1 {
		return e, e.fieldError("event_id", "type", "event identities are invalid")
	}
	if !ok2 {
		return e, e.fieldError("run_agent_id", "type", "event identities are invalid")
	}
	if e.ChatSeq, ok1 = canonical.Int(m["chat_seq"]); !ok1 {
		return e, e.fieldError("chat_seq", "type", "chat sequence is invalid")
	}
	if e.LaneEventOrdinal, ok1 = canonical.Int(m["lane_event_ordinal"]); !ok1 {
		return e, e.fieldError("lane_event_ordinal", "type", "lane ordinal is invalid")
	}
	if e.CheckpointNamespace, ok1 = m["checkpoint_namespace"].(string); !ok1 {
		return e, e.fieldError("checkpoint_namespace", "type", "checkpoint namespace is invalid")
	}
	if e.Role, ok1 = m["role"].(string); !ok1 {
		return e, e.fieldError("role", "type", "event role is invalid")
	}
	e.Provenance = m["provenance"]
	if e.ProvenanceSHA256, ok1 = optionalString(m, "provenance_sha256"); !ok1 {
		return e, e.fieldError("provenance_sha256", hashMemberRule(m["provenance_sha256"]), "event hashes are invalid")
	}
	if e.ContentHash, ok2 = optionalString(m, "content_hash"); !ok2 {
		return e, e.fieldError("content_hash", hashMemberRule(m["content_hash"]), "event hashes are invalid")
	}
	return e, eventContentFromMap(&e, m)
}

// optionalString reads a string member that may be absent or null ("").
func optionalString(m map[string]any, key string) (string, bool) {
	switch v := m[key].(type) {
	case nil:
		return "", true
	case string:
		return v, v != ""
	default:
		return "", false
	}
}

// fillOmittedHashes computes the hashes a producer left out. A hash that is
// present is never replaced: Validate checks it.
func (e *InputEvent) fillOmittedHashes() error {
	if e.ProvenanceSHA256 == "" {
		sum, err := provenanceSum(e.Provenance)
		if err != nil {
			return e.fieldError("provenance", "canonical", "event provenance is invalid")
		}
		e.ProvenanceSHA256 = string(sum[:])
	}
	if e.ContentHash == "" {
		sum, err := contentSum(e.Content, e.Tool, e.ArtifactIDs, e.Truncated)
		if err != nil {
			if verr := e.validateContent(); verr != nil {
				return verr // the content or tool is what is wrong
			}
			return e.fieldError("content_hash", "canonical", "content hash does not match")
		}
		e.ContentHash = string(sum[:])
	}
	return nil
}

func eventContentFromMap(e *InputEvent, m map[string]any) error {
	switch c := m["content"].(type) {
	case nil:
	case string:
		e.Content = &c
	default:
		return e.fieldError("content", "type", "event content is invalid")
	}
	switch t := m["tool"].(type) {
	case nil:
	case map[string]any:
		e.Tool = t
	default:
		return e.fieldError("tool", "type", "event tool projection is invalid")
	}
	if raw, present := m["artifact_ids"]; present && raw != nil {
		ids, ok := asStringList(raw)
		if !ok {
			return e.fieldError("artifact_ids", "type", "event artifact IDs are invalid")
		}
		e.ArtifactIDs = ids
	}
	var ok1, ok2 bool = true, true
	if raw, present := m["truncated"]; present {
		e.Truncated, ok1 = raw.(bool)
	}
	if raw, present := m["protected"]; present {
		e.Protected, ok2 = raw.(bool)
	}
	if !ok1 {
		return e.fieldError("truncated", "type", "event flags are invalid")
	}
	if !ok2 {
		return e.fieldError("protected", "type", "event flags are invalid")
	}
	if raw, present := m["token_count"]; present && raw != nil {
		n, ok := canonical.Int(raw)
		if !ok {
			return e.fieldError("token_count", "type", "event token count is invalid")
		}
		e.TokenCount = &n
	}
	return nil
}

// Map returns the event's wire form (all 15 fields), for persisting a lane.
func (e InputEvent) Map() map[string]any {
	var tokenCount any
	if e.TokenCount != nil {
		tokenCount = *e.TokenCount
	}
	return map[string]any{
		"event_id":             e.EventID,
		"chat_seq":             e.ChatSeq,
		"run_agent_id":         e.RunAgentID,
		"checkpoint_namespace": e.CheckpointNamespace,
		"lane_event_ordinal":   e.LaneEventOrdinal,
		"role":                 e.Role,
		"provenance":           e.Provenance,
		"provenance_sha256":    e.ProvenanceSHA256,
		"content":              stringOrNil(e.Content),
		"tool":                 mapOrNil(e.Tool),
		"artifact_ids":         stringsOrEmpty(e.ArtifactIDs),
		"truncated":            e.Truncated,
		"content_hash":         e.ContentHash,
		"protected":            e.Protected,
		"token_count":          tokenCount,
	}
}

// CanonicalValue makes an InputEvent encodable by the canonical encoder.
func (e InputEvent) CanonicalValue() any { return e.Map() }

// UnmarshalJSON decodes and validates one wire event, rejecting duplicate
// and unknown keys. Errors are invalid_compaction_event.
func (e *InputEvent) UnmarshalJSON(data []byte) error {
	v, err := canonical.Decode(data)
	if err != nil {
		if errors.Is(err, canonical.ErrDuplicateKey) {
			return errcode.Wrap(errcode.InvalidEvent, "event has duplicate fields", err)
		}
		return errcode.Wrap(errcode.InvalidEvent, "event must be a map", err)
	}
	decoded, err := DecodeEvent(v)
	if err != nil {
		return err
	}
	*e = decoded
	return nil
}
