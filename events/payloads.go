package events

import (
	"encoding/json"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/semantic"
)

// The types below describe the JSON objects that Request and Activated carry
// as json.RawMessage: a client decodes them from, or encodes them into,
// those fields. Most are Cairn's own types, so that what a client builds is
// what Cairn reads, and schemas/ is generated from their tags.

// Policy is the compaction policy (Request.Policy). Every field may be
// omitted and then takes the value of DefaultPolicy; a client that sets
// some fields starts from DefaultPolicy, because a Policy encodes all of
// them.
type Policy = engine.Policy

// DefaultPolicy returns the policy Cairn applies when a request has none.
func DefaultPolicy() Policy { return engine.DefaultPolicy() }

// Accounting is the producer's token accounting (Request.Accounting). All of
// it applies to the lane's first budget only, except method and
// profile_hash, which every budget uses.
type Accounting = engine.Accounting

// AntiThrash is a lane's automatic-compaction state (Request.AntiThrash).
// Cairn keeps it in the lane head; `processor compact` reads it from a
// request.
type AntiThrash = engine.State

// Usage is what one summary call cost, as the provider reported it: an
// entry of Activated.ProviderUsage and Checkpoint.ProviderUsage.
type Usage = engine.Usage

// UncertainAttempt is an entry of Activated.ProviderUsage for an earlier
// summary call whose outcome Cairn does not know (it may have been paid for).
type UncertainAttempt struct {
	Attempt     int    `json:"attempt" doc:"the attempt's number" minimum:"1"`
	Outcome     string `json:"outcome" doc:"always uncertain" const:"\"uncertain\""`
	RequestedAt string `json:"requested_at" doc:"when the call was made (RFC 3339, UTC)"`
	Deadline    string `json:"deadline" doc:"when the call would have timed out (RFC 3339, UTC)"`
}

// Range is an inclusive pair of chat sequences or lane ordinals.
type Range = engine.Range

// ManifestEntry records one tool output a compaction projected (replaced by
// an excerpt pointing at its artifacts).
type ManifestEntry = engine.ManifestEntry

// Semantic is the continuation summary a compacted checkpoint carries
// (Request.PreviousSemantic, Checkpoint.Semantic): docs/request.md and
// schemas/ describe its fields and bounds.
type Semantic = semantic.Semantic

// Checkpoint is a checkpoint as stored (Activated.Checkpoint).
// checkpoint_hash is the canonical hash of this object without created_at.
type Checkpoint struct {
	ID                                   string           `json:"id" doc:"the checkpoint id (the request_id), as checkpoint_id"`
	CheckpointID                         string           `json:"checkpoint_id" doc:"the checkpoint id (the request_id)"`
	ParentCheckpointID                   *string          `json:"parent_checkpoint_id" doc:"the checkpoint this one replaced; null for a lane's first"`
	ThreadID                             string           `json:"thread_id" doc:"the conversation"`
	RunID                                string           `json:"run_id" doc:"the run within the conversation"`
	RootTurnID                           string           `json:"root_turn_id" doc:"the user turn that started the run"`
	RunAgentID                           string           `json:"run_agent_id" doc:"the agent; with checkpoint_namespace it names the lane"`
	CheckpointNamespace                  string           `json:"checkpoint_namespace" doc:"the lane within the agent"`
	Trigger                              string           `json:"trigger" doc:"the request's trigger" enum:"auto|manual|overflow|model_switch_preflight"`
	Representation                       string           `json:"representation" doc:"portable: older history is summarized in semantic; pruned: tool output was only projected" enum:"portable|pruned"`
	SourceChatSeqRange                   Range            `json:"source_chat_seq_range" doc:"the chat_seq range of the lane the checkpoint was made from"`
	SummaryCoverageLastChatSeq           *int64           `json:"summary_coverage_last_chat_seq" doc:"the last chat_seq the summary covers; null when pruned"`
	ContextChatSeqHighWatermark          int64            `json:"context_chat_seq_high_watermark" doc:"the highest chat_seq of the lane"`
	RetainedFromChatSeq                  *int64           `json:"retained_from_chat_seq" doc:"the first chat_seq kept verbatim, or null"`
	SourceLaneEventOrdinalRange          Range            `json:"source_lane_event_ordinal_range" doc:"the lane_event_ordinal range the checkpoint was made from"`
	SummaryCoverageLastLaneEventOrdinal  *int64           `json:"summary_coverage_last_lane_event_ordinal" doc:"the last lane_event_ordinal the summary covers; null when pruned"`
	ContextLaneEventOrdinalHighWatermark int64            `json:"context_lane_event_ordinal_high_watermark" doc:"the highest lane_event_ordinal of the lane"`
	Semantic                             *Semantic        `json:"semantic" doc:"the continuation summary; null when pruned"`
	SemanticHash                         *string          `json:"semantic_hash" doc:"canonical hash of semantic, or null" pattern:"^[0-9a-f]{64}$"`
	RehydrationState                     json.RawMessage  `json:"rehydration_state" doc:"the request's rehydration_state, verbatim"`
	RehydrationStateHash                 string           `json:"rehydration_state_hash" doc:"canonical hash of rehydration_state" pattern:"^[0-9a-f]{64}$"`
	ProviderConnectionID                 string           `json:"provider_connection_id" doc:"the model connection the lane is sent through"`
	DestinationIdentityHash              string           `json:"destination_identity_hash" doc:"the request's destination identity" pattern:"^[0-9a-f]{64}$"`
	AccountingMethod                     string           `json:"accounting_method" doc:"how the token numbers were counted" enum:"conservative_utf8|local_tokenizer_v1|reported_usage_delta_v2"`
	AccountingCounter                    string           `json:"accounting_counter" doc:"which count tokens_before stands on: utf8_bytes, a tokenizer encoding, approx_v1 or reported_usage"`
	AccountingVersion                    int64            `json:"accounting_version" doc:"the accounting version" minimum:"1"`
	AccountingProfileHash                *string          `json:"accounting_profile_hash" doc:"the tokenizer profile hash, or null" pattern:"^[0-9a-f]{64}$"`
	CategoryBytes                        map[string]int64 `json:"category_bytes" doc:"bytes outside the lane's events, by category"`
	CategoryTokens                       map[string]int64 `json:"category_tokens" doc:"tokens outside the lane's events, by category"`
	TokensBefore                         int64            `json:"tokens_before" doc:"the lane's estimated tokens before"`
	TokensAfter                          int64            `json:"tokens_after" doc:"the lane's estimated tokens after"`
	TokensReclaimed                      int64            `json:"tokens_reclaimed" doc:"tokens_before - tokens_after"`
	RetainedEventIDs                     []string         `json:"retained_event_ids" doc:"the events kept verbatim in the tail"`
	ProjectionManifest                   []ManifestEntry  `json:"projection_manifest" doc:"the tool outputs that were projected"`
	ProviderUsage                        json.RawMessage  `json:"provider_usage" doc:"usage of each summary call (a list for a repaired chunk); null when pruned"`
	ValidationStatus                     string           `json:"validation_status" doc:"always valid" enum:"valid"`
	CreatedAt                            string           `json:"created_at" doc:"when the checkpoint was made (UTC, whole seconds); not part of checkpoint_hash"`
}
