package events

import (
	"encoding/json"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/semantic"
)

// The types below describe the JSON objects that Request and Activated carry
// as json.RawMessage: a client decodes them from, or encodes them into,
// those fields. Each has the fields of Cairn's own type in the same order
// (policy_test.go holds them to it), so that schemas/ can describe them.

// Policy is the compaction policy (Request.Policy). Every field may be
// omitted and then takes the value of DefaultPolicy; a client that sets
// some fields starts from DefaultPolicy, because a Policy encodes all of
// them.
type Policy struct {
	Version                           int     `json:"version" doc:"the policy schema version, 1" const:"1" default:"1"`
	Enabled                           bool    `json:"enabled" doc:"must be true for trigger auto" default:"true"`
	Mode                              string  `json:"mode" doc:"portable: Cairn writes the summary; native is not supported (native_compaction_unsupported)" enum:"portable|native" default:"\"portable\""`
	Model                             string  `json:"model" doc:"names the summarizing model; informational (1..200 bytes)" default:"\"current_task_model\""`
	TriggerRatio                      float64 `json:"trigger_ratio" doc:"an auto request compacts once the lane reaches limit × trigger_ratio" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.85"`
	PruneReleaseRatio                 float64 `json:"prune_release_ratio" doc:"projecting tool output alone is enough below limit × prune_release_ratio; < trigger_ratio" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.75"`
	PostCompactionTargetRatio         float64 `json:"post_compaction_target_ratio" doc:"a summary must bring the lane below limit × post_compaction_target_ratio; <= prune_release_ratio" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.7"`
	RecentTailRatio                   float64 `json:"recent_tail_ratio" doc:"sizes the verbatim tail as limit × recent_tail_ratio, clamped to [recent_tail_min_tokens, recent_tail_max_tokens]" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.1"`
	RecentTailMinTokens               int64   `json:"recent_tail_min_tokens" doc:"the least tokens the verbatim tail keeps" minimum:"1" default:"8000"`
	RecentTailMaxTokens               int64   `json:"recent_tail_max_tokens" doc:"the most tokens the verbatim tail keeps; >= recent_tail_min_tokens" minimum:"1" default:"32000"`
	SummaryOutputRatio                float64 `json:"summary_output_ratio" doc:"sizes the summary's output allowance as limit × summary_output_ratio, clamped to [summary_output_min_tokens, summary_output_max_tokens]" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.02"`
	SummaryOutputMinTokens            int64   `json:"summary_output_min_tokens" doc:"the least output tokens a summary call may use" minimum:"1" default:"4096"`
	SummaryOutputMaxTokens            int64   `json:"summary_output_max_tokens" doc:"the most output tokens a summary call may use; >= summary_output_min_tokens" minimum:"1" default:"16384"`
	SemanticMaxBytes                  int64   `json:"semantic_max_bytes" doc:"caps the canonical JSON size of a summary" minimum:"1" default:"131072"`
	MinimumPruneReclaimTokens         int64   `json:"minimum_prune_reclaim_tokens" doc:"the least a projection-only result must reclaim" minimum:"1" default:"8192"`
	MinimumTotalReclaimTokens         int64   `json:"minimum_total_reclaim_tokens" doc:"with minimum_total_reclaim_ratio, what a summary must reclaim" minimum:"1" default:"8192"`
	MinimumTotalReclaimRatio          float64 `json:"minimum_total_reclaim_ratio" doc:"with minimum_total_reclaim_tokens, what a summary must reclaim, as a share of tokens_before" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.15"`
	MaximumAutoCompactionsPerRootTurn int64   `json:"maximum_auto_compactions_per_root_turn" doc:"bounds auto compactions between user turns (skipped: automatic_limit)" minimum:"1" default:"3"`
	MinimumNewTokensBeforeRecompact   int64   `json:"minimum_new_tokens_before_recompact" doc:"an auto compaction of a lane that grew less than this is skipped (insufficient_new_tokens)" minimum:"1" default:"8192"`
	MaximumSchemaRepairs              int64   `json:"maximum_schema_repairs" doc:"the repair budget shared by all summary calls of one compaction" minimum:"1" default:"1"`
	MaximumOverflowRetries            int64   `json:"maximum_overflow_retries" doc:"carried for the caller; Cairn does not read it" minimum:"1" default:"1"`
	MaximumHierarchicalSummaryCalls   int64   `json:"maximum_hierarchical_summary_calls" doc:"bounds the number of chunks summarized (summary calls without repairs)" minimum:"1" default:"3"`
	ProviderTimeoutMS                 int64   `json:"provider_timeout_ms" doc:"advisory time limit of one summary call, in milliseconds" minimum:"1" default:"300000"`
}

// DefaultPolicy returns the policy Cairn applies when a request has none.
func DefaultPolicy() Policy { return Policy(engine.DefaultPolicy()) }

// Accounting is the producer's token accounting (Request.Accounting). All of
// it applies to the lane's first budget only, except method and
// profile_hash, which every budget uses.
type Accounting struct {
	Method                string           `json:"method,omitempty" doc:"how tokens are counted; absent means conservative_utf8" enum:"conservative_utf8|local_tokenizer_v1|reported_usage_delta_v2"`
	ProfileHash           *string          `json:"profile_hash,omitempty" doc:"hash of the tokenizer profile the counts stand on, or null" pattern:"^[0-9a-f]{64}$"`
	ReportedInputTokens   int64            `json:"reported_input_tokens,omitempty" doc:"input tokens the provider reported for the lane's last call" minimum:"0"`
	CategoryBytes         map[string]int64 `json:"category_bytes,omitempty" doc:"bytes of the request outside the lane's events, by category (system prompt, tools, ...); each >= 0"`
	ReportedUsageBaseline any              `json:"reported_usage_baseline,omitempty" doc:"the reported usage the delta of reported_usage_delta_v2 starts from; passed through"`
	ComponentDescriptors  any              `json:"component_descriptors,omitempty" doc:"descriptions of the request's other components; passed through"`
}

// AntiThrash is a lane's automatic-compaction state (Request.AntiThrash).
// Cairn keeps it in the lane head; `processor compact` reads it from a
// request.
type AntiThrash struct {
	SuccessfulAutoCompactions         int64   `json:"successful_auto_compactions" doc:"auto compactions since the last user turn" minimum:"0"`
	LastCompactionLaneEventOrdinal    *int64  `json:"last_compaction_lane_event_ordinal" doc:"the lane ordinal the last compaction reached, or null"`
	LastCompactionTokensAfter         *int64  `json:"last_compaction_tokens_after" doc:"tokens_after of the last compaction, or null"`
	NewTokensSinceCompaction          int64   `json:"new_tokens_since_compaction" doc:"tokens added since the last compaction" minimum:"0"`
	OverflowRetryUsed                 bool    `json:"overflow_retry_used" doc:"an overflow compaction already ran in this turn"`
	ConsecutiveIneffectiveCompactions int64   `json:"consecutive_ineffective_compactions" doc:"compactions in a row that reclaimed too little" minimum:"0"`
	CancellationPending               bool    `json:"cancellation_pending" doc:"a cancellation is pending: auto requests are skipped (cancellation_pending)"`
	AccountingMethod                  *string `json:"accounting_method" doc:"the units of the token numbers, or null" enum:"conservative_utf8|local_tokenizer_v1|reported_usage_delta_v2"`
	AccountingVersion                 *int64  `json:"accounting_version" doc:"the accounting version, > 0, or null"`
	AccountingProfileHash             *string `json:"accounting_profile_hash" doc:"the tokenizer profile hash, or null" pattern:"^[0-9a-f]{64}$"`
}

// Usage is what one summary call cost, as the provider reported it: an
// entry of Activated.ProviderUsage and Checkpoint.ProviderUsage.
type Usage struct {
	InputTokens  int64  `json:"input_tokens" doc:"input tokens the provider counted" minimum:"0"`
	OutputTokens int64  `json:"output_tokens" doc:"output tokens the provider counted" minimum:"0"`
	CachedTokens int64  `json:"cached_tokens,omitempty" doc:"input tokens served from the provider's cache" minimum:"0"`
	Attempts     int    `json:"attempts,omitempty" doc:"provider calls behind this usage, retries included" minimum:"1"`
	Model        string `json:"model,omitempty" doc:"the model that answered"`
}

// UncertainAttempt is an entry of Activated.ProviderUsage for an earlier
// summary call whose outcome Cairn does not know (it may have been paid for).
type UncertainAttempt struct {
	Attempt     int    `json:"attempt" doc:"the attempt's number" minimum:"1"`
	Outcome     string `json:"outcome" doc:"always uncertain" const:"\"uncertain\""`
	RequestedAt string `json:"requested_at" doc:"when the call was made (RFC 3339, UTC)"`
	Deadline    string `json:"deadline" doc:"when the call would have timed out (RFC 3339, UTC)"`
}

// Range is an inclusive pair of chat sequences or lane ordinals.
type Range struct {
	First int64 `json:"first" doc:"the first, inclusive"`
	Last  int64 `json:"last" doc:"the last, inclusive"`
}

// ManifestEntry records one tool output a compaction projected (replaced by
// an excerpt pointing at its artifacts).
type ManifestEntry struct {
	ProjectionVersion    int64    `json:"projection_version" doc:"the projection rules' version, 1"`
	EventID              string   `json:"event_id" doc:"the projected event"`
	OriginalContentHash  string   `json:"original_content_hash" doc:"content_hash of the event before projection" pattern:"^[0-9a-f]{64}$"`
	ProjectedContentHash string   `json:"projected_content_hash" doc:"content_hash of the projected event" pattern:"^[0-9a-f]{64}$"`
	OriginalBytes        int64    `json:"original_bytes" doc:"byte length of the original content" minimum:"0"`
	ArtifactIDs          []string `json:"artifact_ids" doc:"the artifacts that hold the original output"`
}

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
