package engine

import (
	"context"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/semantic"
)

// PayloadSchemaVersion names the shape of Payload.
const PayloadSchemaVersion = "compaction_input_v1"

// Summarizer turns one chunk of a lane into a Semantic. It is the engine's only
// model boundary.
//
// Implementations enforce their own deadlines and honour ctx. An error that is
// an *errcode.Error is passed through unchanged (its Retryable flag decides
// whether the service retries); any other error becomes a retryable
// compaction_provider_error, and a panic a permanent one. Output may be a *semantic.Semantic,
// a decoded JSON object (map[string]any), or a JSON document as string or
// []byte; the engine validates it against the chunk's sources either way.
// The payload shares memory with the request (events, previous semantic):
// implementations must treat it as read-only.
type Summarizer interface {
	Summarize(ctx context.Context, p Payload) (Summary, error)
}

// Summary is what a Summarizer returns for one call.
type Summary struct {
	Output any
	Usage  *events.Usage // nil when the provider reported none
}

// Payload is the summarizer input. Its JSON form is the
// contract's payload, byte for byte in key names.
type Payload struct {
	SchemaVersion       string             `json:"schema_version"`
	CheckpointID        string             `json:"checkpoint_id"`
	CoveredRange        semantic.Coverage  `json:"covered_range"`
	PreviousSemantic    *semantic.Semantic `json:"previous_semantic"`
	Events              []EventView        `json:"events"`
	Focus               *string            `json:"focus"`
	MaximumOutputTokens int                `json:"maximum_output_tokens"`
	// Repair is set on the one schema-repair call of a chunk.
	Repair *Repair `json:"repair,omitempty"`
}

// Repair tells the summarizer why its previous output was rejected.
type Repair struct {
	InvalidOutput any         `json:"invalid_output"`
	Error         RepairError `json:"error"`
}

// RepairError is the validator's typed error as the summarizer sees it.
type RepairError struct {
	Type    string         `json:"type"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// EventView is an event as a summarizer sees it, and as it is sized and
// rendered (canonical_v1): the 13 members its json tags name; a nil tool
// is null and nil artifact_ids are [] (its canonical form, CanonicalValue,
// is built from these tags). The view is its own shape, not the wire
// event's: a member added to InputEvent is not in it, so adding one
// changes no token count and no summary.
type EventView struct {
	EventID             string         `json:"event_id"`
	RunAgentID          string         `json:"run_agent_id"`
	ChatSeq             int64          `json:"chat_seq"`
	LaneEventOrdinal    int64          `json:"lane_event_ordinal"`
	CheckpointNamespace string         `json:"checkpoint_namespace"`
	Role                string         `json:"role"`
	Provenance          any            `json:"provenance"`
	ProvenanceSHA256    string         `json:"provenance_sha256"`
	ContentHash         string         `json:"content_hash"`
	Content             *string        `json:"content"`
	Tool                map[string]any `json:"tool" nil:"null"`
	ArtifactIDs         []string       `json:"artifact_ids"`
	Truncated           bool           `json:"truncated"`
}
