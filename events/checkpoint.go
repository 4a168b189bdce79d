package events

import (
	"encoding/json"
	"reflect"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/jsonwire"
	"github.com/cairnhq/cairn/semantic"
)

// Representations of a checkpoint.
const (
	RepresentationPortable = "portable"
	RepresentationPruned   = "pruned"
)

// ValidationStatusValid is the only validation status a checkpoint can have.
const ValidationStatusValid = "valid"

// Range is an inclusive pair of chat sequences or lane ordinals.
type Range struct {
	First int64 `json:"first" doc:"the first, inclusive"`
	Last  int64 `json:"last" doc:"the last, inclusive"`
}

// Checkpoint is an immutable candidate context checkpoint (subjects.md, Events).
// It becomes a lane's active head only when the caller activates it.
//
// It is also the checkpoint as stored and as Activated.Checkpoint carries
// it: json.Unmarshal decodes one, json.Marshal encodes it canonically. Its
// JSON is Map's, which adds two keys no field holds, id (CheckpointID
// again) and rehydration_state_hash (RehydrationState.Hash);
// checkpoint_hash is the canonical hash of this object without created_at
// (Hash). schemas/ is generated from the tags below.
type Checkpoint struct {
	CheckpointID                         string             `json:"checkpoint_id" doc:"the checkpoint id (the request_id)"`
	ParentCheckpointID                   *string            `json:"parent_checkpoint_id" doc:"the checkpoint this one replaced; null for a lane's first"`
	ThreadID                             string             `json:"thread_id" doc:"the conversation"`
	RunID                                string             `json:"run_id" doc:"the run within the conversation"`
	RootTurnID                           string             `json:"root_turn_id" doc:"the user turn that started the run"`
	RunAgentID                           string             `json:"run_agent_id" doc:"the agent; with checkpoint_namespace it names the lane"`
	CheckpointNamespace                  string             `json:"checkpoint_namespace" doc:"the lane within the agent"`
	Trigger                              string             `json:"trigger" doc:"the request's trigger" enum:"auto|manual|overflow|model_switch_preflight"`
	Representation                       string             `json:"representation" doc:"portable: older history is summarized in semantic; pruned: tool output was only projected" enum:"portable|pruned"`
	SourceChatSeqRange                   Range              `json:"source_chat_seq_range" doc:"the chat_seq range of the lane the checkpoint was made from"`
	SummaryCoverageLastChatSeq           *int64             `json:"summary_coverage_last_chat_seq" doc:"the last chat_seq the summary covers; null when pruned"`
	ContextChatSeqHighWatermark          int64              `json:"context_chat_seq_high_watermark" doc:"the highest chat_seq of the lane"`
	RetainedFromChatSeq                  *int64             `json:"retained_from_chat_seq" doc:"the first chat_seq kept verbatim, or null"`
	SourceLaneEventOrdinalRange          Range              `json:"source_lane_event_ordinal_range" doc:"the lane_event_ordinal range the checkpoint was made from"`
	SummaryCoverageLastLaneEventOrdinal  *int64             `json:"summary_coverage_last_lane_event_ordinal" doc:"the last lane_event_ordinal the summary covers; null when pruned"`
	ContextLaneEventOrdinalHighWatermark int64              `json:"context_lane_event_ordinal_high_watermark" doc:"the highest lane_event_ordinal of the lane"`
	Semantic                             *semantic.Semantic `json:"semantic" doc:"the continuation summary; null when pruned"`
	SemanticHash                         *string            `json:"semantic_hash" doc:"canonical hash of semantic, or null" pattern:"^[0-9a-f]{64}$"`
	// RehydrationState is rehydration_state (its Data) and
	// rehydration_state_hash (its Hash).
	RehydrationState        RehydrationState `json:"rehydration_state" doc:"the request's rehydration_state, verbatim"`
	ProviderConnectionID    string           `json:"provider_connection_id" doc:"the model connection the lane is sent through"`
	DestinationIdentityHash string           `json:"destination_identity_hash" doc:"the request's destination identity" pattern:"^[0-9a-f]{64}$"`
	AccountingMethod        string           `json:"accounting_method" doc:"how the token numbers were counted" enum:"conservative_utf8|local_tokenizer_v1|reported_usage_delta_v2"`
	// AccountingCounter is the before budget's counter: which count
	// tokens_before stands on (utf8_bytes, an encoding, approx_v1,
	// reported_usage).
	AccountingCounter     string           `json:"accounting_counter" doc:"which count tokens_before stands on: utf8_bytes, a tokenizer encoding, approx_v1 or reported_usage"`
	AccountingVersion     int64            `json:"accounting_version" doc:"the accounting version" minimum:"1"`
	AccountingProfileHash *string          `json:"accounting_profile_hash" doc:"the tokenizer profile hash, or null" pattern:"^[0-9a-f]{64}$"`
	CategoryBytes         map[string]int64 `json:"category_bytes" doc:"bytes outside the lane's events, by category"`
	CategoryTokens        map[string]int64 `json:"category_tokens" doc:"tokens outside the lane's events, by category"`
	TokensBefore          int64            `json:"tokens_before" doc:"the lane's estimated tokens before"`
	TokensAfter           int64            `json:"tokens_after" doc:"the lane's estimated tokens after"`
	TokensReclaimed       int64            `json:"tokens_reclaimed" doc:"tokens_before - tokens_after"`
	RetainedEventIDs      []string         `json:"retained_event_ids" doc:"the events kept verbatim in the tail"`
	ProjectionManifest    []ManifestEntry  `json:"projection_manifest" doc:"the tool outputs that were projected"`
	// ProviderUsage is nil for a pruned checkpoint, else the per-chunk
	// usages, one per summary call (a repaired chunk is a nested list).
	ProviderUsage    []any  `json:"provider_usage" doc:"usage of each summary call (a list for a repaired chunk); null when pruned" nil:"null"`
	ValidationStatus string `json:"validation_status" doc:"always valid" enum:"valid"`
	CreatedAt        string `json:"created_at" doc:"when the checkpoint was made: RFC 3339 in UTC with whole seconds; not part of checkpoint_hash" pattern:"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"`

	// semanticEncoding is the canonical encoding of encodedSemantic, set by
	// ReuseSemanticEncoding.
	semanticEncoding []byte
	encodedSemantic  *semantic.Semantic
}

// OutcomeUncertain is UncertainAttempt's only outcome.
const OutcomeUncertain = "uncertain"

// UncertainAttempt is an entry of an activated event's provider_usage for an
// earlier summary call whose outcome Cairn does not know (it may have been
// paid for); the engine's own entries are Usage.
type UncertainAttempt struct {
	// The fields are in key order, so that the entry encodes with its
	// keys sorted, as every other object of the event does.
	Attempt     int    `json:"attempt" doc:"the attempt's number" minimum:"1"`
	Deadline    string `json:"deadline" doc:"when the call would have timed out (RFC 3339, UTC)"`
	Outcome     string `json:"outcome" doc:"always uncertain" const:"\"uncertain\""`
	RequestedAt string `json:"requested_at" doc:"when the call was made (RFC 3339, UTC)"`
}

// checkpointFields are Checkpoint's members.
var checkpointFields = jsonwire.Fields(reflect.TypeFor[Checkpoint]())

// Map returns the checkpoint's persisted form: every member by its tags
// (plainMembers), plus id (CheckpointID again) and rehydration_state_hash;
// rehydration_state is its data only.
func (c *Checkpoint) Map() map[string]any {
	plain := *c
	reuse := c.semanticEncoding != nil && c.encodedSemantic == c.Semantic
	if reuse {
		plain.Semantic = nil
	}
	m := plainMembers(reflect.ValueOf(&plain).Elem(), checkpointFields)
	if reuse {
		m["semantic"] = canonical.Raw(c.semanticEncoding)
	}
	m["id"] = c.CheckpointID
	m["rehydration_state"], m["rehydration_state_hash"] = c.RehydrationState.Data, c.RehydrationState.Hash
	return m
}

// ReuseSemanticEncoding records enc, the canonical encoding of
// c.Semantic, for Map to use while c.Semantic is still that value: the
// engine encodes the semantic to bound and hash it, and storing the
// checkpoint then need not encode it again. It is a cache: the bytes are
// those Map would make, and BenchmarkEngineCompactor (internal/consumer)
// and processor bench --events 100 measure it.
func (c *Checkpoint) ReuseSemanticEncoding(enc []byte) {
	c.semanticEncoding, c.encodedSemantic = enc, c.Semantic
}

// MarshalJSON encodes Map canonically: the checkpoint as stored.
func (c Checkpoint) MarshalJSON() ([]byte, error) {
	body, _, err := c.EncodeAndHash()
	return body, err
}

// UnmarshalJSON decodes a stored checkpoint. rehydration_state and
// provider_usage are read by the canonical decoder, so that Map and
// Hash of the result give back the stored bytes and checkpoint_hash.
func (c *Checkpoint) UnmarshalJSON(data []byte) error {
	type fields Checkpoint // without these methods, so the decode is encoding/json's
	var w struct {
		*fields
		RehydrationState     json.RawMessage `json:"rehydration_state"`
		RehydrationStateHash string          `json:"rehydration_state_hash"`
		ProviderUsage        json.RawMessage `json:"provider_usage"`
	}
	w.fields = (*fields)(c)
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	state, err := decodeVerbatim(w.RehydrationState)
	if err != nil {
		return err
	}
	object, _ := state.(map[string]any)
	c.RehydrationState = RehydrationState{Data: object, Hash: w.RehydrationStateHash}
	usage, err := decodeVerbatim(w.ProviderUsage)
	c.ProviderUsage, _ = usage.([]any)
	return err
}

// decodeVerbatim decodes a member that is not Go-typed; absent is null.
func decodeVerbatim(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return canonical.Decode(raw)
}

// Hash is the checkpoint_hash (docs/canonical-json.md, "Worked example:
// checkpoint_hash"): the canonical hash of the
// persistence map without created_at, so a re-run of the same request at
// another time has the same hash.
func (c *Checkpoint) Hash() (string, error) {
	m := c.Map()
	delete(m, "created_at")
	h, err := canonical.Hash(m)
	if err != nil {
		return "", errcode.Wrap(errcode.Internal, "checkpoint is not canonical JSON", err)
	}
	return h, nil
}

// EncodeAndHash returns the canonical encoding of the persistence map and
// Hash's value, from one encoding of the map.
func (c *Checkpoint) EncodeAndHash() ([]byte, string, error) {
	body, h, err := canonical.EncodeHashWithout(c.Map(), "created_at")
	if err != nil {
		return nil, "", errcode.Wrap(errcode.Internal, "checkpoint is not canonical JSON", err)
	}
	return body, h, nil
}
