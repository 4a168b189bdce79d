package engine

import (
	"time"

	"github.com/cairnhq/cairn/internal/canonical"
	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/semantic"
)

// Representations of a checkpoint.
const (
	RepresentationPortable = "portable"
	RepresentationPruned   = "pruned"
)

// Result statuses.
const (
	StatusSkipped   = "skipped"
	StatusPruned    = "pruned"
	StatusCompacted = "compacted"
)

// ValidationStatusValid is the only validation status a checkpoint can have.
const ValidationStatusValid = "valid"

// Range is an inclusive pair of chat sequences or lane ordinals.
type Range struct {
	First int64 `json:"first" doc:"the first, inclusive"`
	Last  int64 `json:"last" doc:"the last, inclusive"`
}

func (r Range) value() map[string]any { return map[string]any{"first": r.First, "last": r.Last} }

// Checkpoint is an immutable candidate context checkpoint (subjects.md, Events).
// It becomes a lane's active head only when the caller activates it.
type Checkpoint struct {
	CheckpointID                         string
	ParentCheckpointID                   *string
	ThreadID                             string
	RunID                                string
	RootTurnID                           string
	RunAgentID                           string
	CheckpointNamespace                  string
	Trigger                              string
	Representation                       string
	SourceChatSeqRange                   Range
	SummaryCoverageLastChatSeq           *int64
	ContextChatSeqHighWatermark          int64
	RetainedFromChatSeq                  *int64
	SourceLaneEventOrdinalRange          Range
	SummaryCoverageLastLaneEventOrdinal  *int64
	ContextLaneEventOrdinalHighWatermark int64
	Semantic                             *semantic.Semantic
	SemanticHash                         *string
	RehydrationState                     RehydrationState
	ProviderConnectionID                 string
	DestinationIdentityHash              string
	AccountingMethod                     string
	// AccountingCounter is the before budget's counter: which count
	// tokens_before stands on (utf8_bytes, an encoding, approx_v1,
	// reported_usage).
	AccountingCounter     string
	AccountingVersion     int64
	AccountingProfileHash *string
	CategoryBytes         map[string]int64
	CategoryTokens        map[string]int64
	TokensBefore          int64
	TokensAfter           int64
	TokensReclaimed       int64
	RetainedEventIDs      []string
	ProjectionManifest    []ManifestEntry
	// ProviderUsage is nil for a pruned checkpoint, else the per-chunk
	// usages, one per summary call (a repaired chunk is a nested list).
	ProviderUsage    []any
	ValidationStatus string
	CreatedAt        string
}

// ToMap returns the checkpoint's persisted form: every field plus id,
// ranges as {first, last}, the semantic as its plain map, rehydration state
// as its data only.
func (c *Checkpoint) ToMap() map[string]any {
	manifest := make([]any, len(c.ProjectionManifest))
	for i, m := range c.ProjectionManifest {
		m.ArtifactIDs = stringsOrEmpty(m.ArtifactIDs)
		// Strings, integers and a list of strings: encoding/json cannot fail.
		manifest[i], _ = plainValue(m)
	}
	var usage any
	if c.ProviderUsage != nil {
		usage = c.ProviderUsage
	}
	return map[string]any{
		"id":                              c.CheckpointID,
		"checkpoint_id":                   c.CheckpointID,
		"parent_checkpoint_id":            stringOrNil(c.ParentCheckpointID),
		"thread_id":                       c.ThreadID,
		"run_id":                          c.RunID,
		"root_turn_id":                    c.RootTurnID,
		"run_agent_id":                    c.RunAgentID,
		"checkpoint_namespace":            c.CheckpointNamespace,
		"trigger":                         c.Trigger,
		"representation":                  c.Representation,
		"source_chat_seq_range":           c.SourceChatSeqRange.value(),
		"summary_coverage_last_chat_seq":  intPtrValue(c.SummaryCoverageLastChatSeq),
		"context_chat_seq_high_watermark": c.ContextChatSeqHighWatermark,
		"retained_from_chat_seq":          intPtrValue(c.RetainedFromChatSeq),
		"source_lane_event_ordinal_range": c.SourceLaneEventOrdinalRange.value(),
		"summary_coverage_last_lane_event_ordinal":  intPtrValue(c.SummaryCoverageLastLaneEventOrdinal),
		"context_lane_event_ordinal_high_watermark": c.ContextLaneEventOrdinalHighWatermark,
		"semantic":                  semanticValue(c.Semantic),
		"semantic_hash":             stringOrNil(c.SemanticHash),
		"rehydration_state":         c.RehydrationState.Data,
		"rehydration_state_hash":    c.RehydrationState.Hash,
		"provider_connection_id":    c.ProviderConnectionID,
		"destination_identity_hash": c.DestinationIdentityHash,
		"accounting_method":         c.AccountingMethod,
		"accounting_counter":        c.AccountingCounter,
		"accounting_version":        c.AccountingVersion,
		"accounting_profile_hash":   stringOrNil(c.AccountingProfileHash),
		"category_bytes":            nonNilCategories(c.CategoryBytes),
		"category_tokens":           nonNilCategories(c.CategoryTokens),
		"tokens_before":             c.TokensBefore,
		"tokens_after":              c.TokensAfter,
		"tokens_reclaimed":          c.TokensReclaimed,
		"retained_event_ids":        stringsOrEmpty(c.RetainedEventIDs),
		"projection_manifest":       manifest,
		"provider_usage":            usage,
		"validation_status":         c.ValidationStatus,
		"created_at":                c.CreatedAt,
	}
}

func nonNilCategories(c map[string]int64) map[string]int64 {
	if c == nil {
		return map[string]int64{}
	}
	return c
}

// Hash is the checkpoint_hash (docs/canonical-json.md, "Worked example:
// checkpoint_hash"): the canonical hash of the
// persistence map without created_at, so a re-run of the same request at
// another time has the same hash.
func (c *Checkpoint) Hash() (string, error) {
	m := c.ToMap()
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
	body, h, err := canonical.EncodeHashWithout(c.ToMap(), "created_at")
	if err != nil {
		return nil, "", errcode.Wrap(errcode.Internal, "checkpoint is not canonical JSON", err)
	}
	return body, h, nil
}

// formatCreatedAt is the checkpoint timestamp: UTC, whole seconds, Z.
func formatCreatedAt(now time.Time) string {
	return now.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05Z")
}

// Result is the outcome of Compact.
type Result struct {
	Status string
	// Checkpoint is nil for skipped.
	Checkpoint         *Checkpoint
	TokensBefore       int64
	TokensAfter        int64
	TokensReclaimed    int64
	SourceEventCount   int
	RetainedEventCount int
	// RetainedEvents are the events the next provider request carries after
	// the checkpoint (projected for pruned, verbatim tail for compacted).
	RetainedEvents []InputEvent
	// ArtifactIDs are the unique artifact ids of all source events, first seen first.
	ArtifactIDs []string
	// Suppression is the reason of a skipped result.
	Suppression string
	// ProviderUsage is the checkpoint's usage list for compacted, nil otherwise.
	ProviderUsage []any
	// State is the lane's anti-thrash state in this request's accounting
	// units (rebased and with new tokens observed). Persist
	// it for a skipped result; after activating a checkpoint persist
	// State.RecordSuccess(...) instead. Not part of the wire form.
	State State
}

// Map returns the Result as `processor compact` prints it:
// status, checkpoint, token counts, event counts, retained_event_ids,
// artifact_ids, provider_usage ({"suppression": reason} when skipped).
func (r *Result) Map() map[string]any {
	var checkpoint any
	if r.Checkpoint != nil {
		checkpoint = r.Checkpoint.ToMap()
	}
	retained := make([]string, len(r.RetainedEvents))
	for i, e := range r.RetainedEvents {
		retained[i] = e.EventID
	}
	var usage any
	switch {
	case r.Status == StatusSkipped:
		usage = map[string]any{"suppression": r.Suppression}
	case r.ProviderUsage != nil:
		usage = r.ProviderUsage
	}
	return map[string]any{
		"status":               r.Status,
		"checkpoint":           checkpoint,
		"tokens_before":        r.TokensBefore,
		"tokens_after":         r.TokensAfter,
		"tokens_reclaimed":     r.TokensReclaimed,
		"source_event_count":   int64(r.SourceEventCount),
		"retained_event_count": int64(r.RetainedEventCount),
		"retained_event_ids":   retained,
		"artifact_ids":         stringsOrEmpty(r.ArtifactIDs),
		"provider_usage":       usage,
	}
}

// MarshalJSON encodes Map canonically.
func (r *Result) MarshalJSON() ([]byte, error) { return canonical.Encode(r.Map()) }

// usageValue is the canonical form of one summarizer call's usage.
func usageValue(u *Usage) map[string]any {
	m := map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens}
	if u.CachedTokens != 0 {
		m["cached_tokens"] = u.CachedTokens
	}
	if u.Attempts != 0 {
		m["attempts"] = int64(u.Attempts)
	}
	if u.Model != "" {
		m["model"] = u.Model
	}
	return m
}
