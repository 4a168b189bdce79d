package engine

import (
	"time"

	"github.com/cairnhq/cairn/events"
)

// Result statuses.
const (
	StatusSkipped = "skipped"
)

// formatCreatedAt is the checkpoint timestamp: UTC, whole seconds, Z.
func formatCreatedAt(now time.Time) string {
	return now.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05Z")
}

// Result is the outcome of Compact.
type Result struct {
	Status string
	// Checkpoint is nil for skipped.
	Checkpoint         *events.Checkpoint
	TokensBefore       int64
	TokensAfter        int64
	TokensReclaimed    int64
	SourceEventCount   int
	RetainedEventCount int
	// RetainedEvents are the events the next provider request carries after
	// the checkpoint (projected for pruned, verbatim tail for compacted).
	RetainedEvents []events.InputEvent
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
	State events.AntiThrash
}

// Map returns the Result as `processor compact` prints it:
// status, checkpoint, token counts, event counts, retained_event_ids,
// artifact_ids, provider_usage ({"suppression": reason} when skipped).
func (r *Result) Map() map[string]any {
	var checkpoint any
	if r.Checkpoint != nil {
		checkpoint = r.Checkpoint.Map()
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

// usageValue is the canonical form of one summarizer call's usage.
func usageValue(u *events.Usage) map[string]any {
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
