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
	"github.com/cairnhq/cairn/jsonwire"
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
	EventID             string         `json:"event_id" doc:"unique id of the event within the lane (1..200 bytes)" minLength:"1" maxLength:"200" invalid:"event identities are invalid"`
	RunAgentID          string         `json:"run_agent_id" doc:"the agent; with checkpoint_namespace it names the lane; the request's run_agent_id" minLength:"1" maxLength:"200" invalid:"event identities are invalid"`
	ChatSeq             int64          `json:"chat_seq" doc:"position in the conversation, > 0, never below an earlier event's" minimum:"1" invalid:"chat sequence is invalid"`
	LaneEventOrdinal    int64          `json:"lane_event_ordinal" doc:"position in the lane, > 0 and strictly increasing" minimum:"1" invalid:"lane ordinal is invalid"`
	CheckpointNamespace string         `json:"checkpoint_namespace" doc:"the lane within the agent (1..200 bytes); the request's checkpoint_namespace" minLength:"1" maxLength:"200" invalid:"checkpoint namespace is invalid"`
	Role                string         `json:"role" doc:"who wrote the event" enum:"user|assistant|tool" invalid:"event role is invalid"`
	Provenance          any            `json:"provenance" doc:"any JSON value describing where the event came from" invalid:"event provenance is invalid"`
	ProvenanceSHA256    string         `json:"provenance_sha256,omitempty" doc:"canonical hash of provenance (docs/canonical-json.md); computed by Cairn when absent or null" null:"true" pattern:"^[0-9a-f]{64}$" invalid:"event hashes are invalid"`
	ContentHash         string         `json:"content_hash,omitempty" doc:"canonical hash of {artifact_ids, content, tool, truncated}; computed by Cairn when absent or null" null:"true" pattern:"^[0-9a-f]{64}$" invalid:"event hashes are invalid"`
	Content             *string        `json:"content" required:"false" doc:"the event's text (at most 1 MiB of UTF-8), null or absent" maxLength:"1048576" invalid:"event content is invalid"`
	Tool                map[string]any `json:"tool,omitempty" doc:"tool call or result metadata (call_id, name, ...), canonical JSON" nil:"null" invalid:"event tool projection is invalid"`
	ArtifactIDs         []string       `json:"artifact_ids,omitempty" doc:"ids of artifacts the event refers to (at most 128, each 1..200 bytes)" maxItems:"128" invalid:"event artifact IDs are invalid"`
	Truncated           bool           `json:"truncated,omitempty" doc:"the producer already cut the content" invalid:"event flags are invalid"`
	Protected           bool           `json:"protected,omitempty" doc:"never cut or projected" invalid:"event flags are invalid"`
	// TokenCount, when set, is the caller's token estimate for the event; when
	// nil the event costs the byte size of its canonical View.
	TokenCount *int64 `json:"token_count,omitempty" doc:"the producer's own token count of the event, used instead of Cairn's" minimum:"0" invalid:"event token count is invalid"`
}

// inputEventFields are InputEvent's members. Those not tagged omitempty
// or required:"false" are the ones an event must carry; provenance_sha256
// and content_hash may be left out (or null): Cairn then computes them from
// the event itself, so they attest nothing the producer checked
// (docs/request.md, "Hashes a producer may leave out").
var (
	inputEventFields = jsonwire.Fields(reflect.TypeFor[InputEvent]())
	eventFields      = jsonwire.KeySet(jsonwire.Names(inputEventFields, false)...)
	eventMessages    = invalidMessages(inputEventFields)
)

// invalidMessages maps each field's name to its invalid tag: the message
// of an error of the field's value, whichever rule it broke.
func invalidMessages(fields []jsonwire.Field) map[string]string {
	m := make(map[string]string, len(fields))
	for _, f := range fields {
		m[f.Name] = f.Tag.Get("invalid")
	}
	return m
}

// invalid is fieldError with the field's own message (its invalid tag).
func (e InputEvent) invalid(field, rule string) *errcode.Error {
	return e.fieldError(field, rule, eventMessages[field])
}

// fieldError is an invalid_compaction_event naming the event and the field
// that broke the rule, so a producer can find it in a long lane.
func (e InputEvent) fieldError(field, rule, message string) *errcode.Error {
	return errcode.WithDetails(errcode.InvalidEvent, message, map[string]any{
		"event_id": e.EventID, "field": field, "rule": rule,
	})
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
	if dst, err = canonical.AppendStrings(dst, artifactIDs); err != nil {
		return dst, err
	}
	dst = append(dst, `,"content":`...)
	if dst, err = canonical.AppendStringOrNull(dst, content); err != nil {
		return dst, err
	}
	dst = append(dst, `,"tool":`...)
	if dst, err = canonical.AppendEncode(dst, mapOrNil(tool)); err != nil {
		return dst, fmt.Errorf("%w: %w", errToolNotCanonical, err)
	}
	dst = append(dst, `,"truncated":`...)
	return append(strconv.AppendBool(dst, truncated), '}'), nil
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
		return e.invalid("event_id", "range")
	case !isID(e.RunAgentID):
		return e.invalid("run_agent_id", "range")
	case e.ChatSeq <= 0:
		return e.invalid("chat_seq", "range")
	case e.LaneEventOrdinal <= 0:
		return e.invalid("lane_event_ordinal", "range")
	case !isNamespace(e.CheckpointNamespace):
		return e.invalid("checkpoint_namespace", "range")
	case e.Role != RoleUser && e.Role != RoleAssistant && e.Role != RoleTool:
		return e.invalid("role", "enum")
	}
	provenanceHash, err := provenanceSum(e.Provenance)
	switch {
	case err != nil:
		return e.invalid("provenance", "canonical")
	case !jsonwire.IsHash64(e.ProvenanceSHA256):
		return e.invalid("provenance_sha256", "pattern")
	case !jsonwire.IsHash64(e.ContentHash):
		return e.invalid("content_hash", "pattern")
	case !provenanceHash.matches(e.ProvenanceSHA256):
		return e.hashMismatch("provenance_sha256", "hash", "provenance hash does not match", provenanceHash, e.ProvenanceSHA256)
	}
	return e.validateContent()
}

func (e InputEvent) validateContent() error {
	if e.Content != nil && (len(*e.Content) > MaxContentBytes || !utf8.ValidString(*e.Content)) {
		return e.invalid("content", "range")
	}
	hash, err := contentSum(e.Content, e.Tool, e.ArtifactIDs, e.Truncated)
	if errors.Is(err, errToolNotCanonical) {
		return e.invalid("tool", "canonical")
	}
	if len(e.ArtifactIDs) > MaxEventArtifactIDs {
		return e.invalid("artifact_ids", "range")
	}
	for _, id := range e.ArtifactIDs {
		if !isID(id) {
			return e.invalid("artifact_ids", "range")
		}
	}
	if err != nil {
		return e.fieldError("content_hash", "canonical", "content hash does not match")
	}
	if !hash.matches(e.ContentHash) {
		return e.hashMismatch("content_hash", "hash", "content hash does not match", hash, e.ContentHash)
	}
	if e.TokenCount != nil && *e.TokenCount < 0 {
		return e.invalid("token_count", "range")
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
	if unknown := jsonwire.UnknownKeys(m, eventFields); len(unknown) > 0 {
		return InputEvent{}, errcode.WithDetails(errcode.InvalidEvent, "unknown event fields", map[string]any{
			"event_id": m["event_id"], "field": jsonwire.TruncateUTF8(unknown[0], maxListedNameSize), "rule": "unknown",
			"fields": jsonwire.StringsToAny(unknown),
		})
	}
	if missing := jsonwire.Missing(inputEventFields, m); len(missing) > 0 {
		return InputEvent{}, errcode.WithDetails(errcode.InvalidEvent, "required event fields are missing",
			map[string]any{"event_id": m["event_id"], "field": missing[0], "rule": "required",
				"missing_fields": jsonwire.StringsToAny(missing)})
	}
	var e InputEvent
	err := jsonwire.Read(reflect.ValueOf(&e).Elem(), inputEventFields, m, func(f jsonwire.Field, rule string) error {
		return e.invalid(f.Name, rule)
	})
	if err != nil {
		return e, err
	}
	return e, e.fillOmittedHashes()
}

// fillOmittedHashes computes the hashes a producer left out. A hash that is
// present is never replaced: Validate checks it.
func (e *InputEvent) fillOmittedHashes() error {
	if e.ProvenanceSHA256 == "" {
		sum, err := provenanceSum(e.Provenance)
		if err != nil {
			return e.invalid("provenance", "canonical")
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

// Map returns the event's wire form as encoding/json writes it from the
// tags: an omitempty member with its zero value is left out, content is
// null when nil. An optional member added to InputEvent thus changes no
// encoded event that does not set it.
func (e InputEvent) Map() map[string]any {
	m := plainMembers(reflect.ValueOf(e), inputEventFields)
	v := reflect.ValueOf(e)
	for _, f := range inputEventFields {
		if f.OmitEmpty && v.FieldByIndex(f.Index).IsZero() {
			delete(m, f.Name)
		}
	}
	return m
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
