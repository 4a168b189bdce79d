package consumer

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
)

// Compactor runs the compaction engine for one request. The processor owns
// everything around it: lane state comes from the lane head, and the result
// only becomes active through the processor's commit.
type Compactor interface {
	// Compact decodes and validates in.Body (Request v1, subjects.md) with the
	// lane state of in applied, compacts it with s, and returns the result.
	// Errors are *errcode.Error for anything the request caused. Calls to
	// s must not overlap (the engine makes them one after another): each
	// hands the request's commit slot back for its duration.
	Compact(ctx context.Context, in Input, s engine.Summarizer, now time.Time) (*Result, error)
}

// Validator is implemented by a Compactor that can check a request fully
// before the processor reads the lane: bad input then fails with its own
// error, never as stale_head because the lane moved meanwhile. Validate may
// keep what it decoded in in for Compact.
type Validator interface {
	Validate(in *Input) error
}

// Input is one request with the lane state Cairn holds for it in the
// lane's head (docs/architecture.md).
type Input struct {
	// Body is the request exactly as received.
	Body []byte
	// Decoded, when set, is Body as canonical.Decode returned it; a
	// Compactor may use it instead of decoding Body again. It belongs to
	// the Compactor.
	Decoded map[string]any
	// Events is the events array loaded from the claim-check object named
	// by events_object; nil for inline events, which are in Body.
	Events json.RawMessage
	// State is the lane's anti-thrash state from its head (nil: a new lane).
	State json.RawMessage
	// StateRootTurnID is the root turn State was last recorded in.
	StateRootTurnID string
	// PreviousSemantic is the active checkpoint's semantic (nil: none).
	PreviousSemantic json.RawMessage

	// decodedRequest is the request as EngineCompactor.Validate decoded it.
	decodedRequest *engine.Request
}

// Result is what the processor needs from a compaction.
type Result struct {
	// Status is "skipped", "pruned" or "compacted".
	Status string
	// SkipReason is set when Status is "skipped".
	SkipReason string
	// Checkpoint is the checkpoint as stored and as activated events carry
	// it (docs/events.md, activated).
	Checkpoint json.RawMessage
	// CheckpointHash is the canonical hash of Checkpoint without created_at.
	CheckpointHash string
	// SemanticHash is the checkpoint's semantic_hash ("" when none).
	SemanticHash     string
	TokensBefore     int64
	TokensAfter      int64
	TokensReclaimed  int64
	RetainedEventIDs []string
	ArtifactIDs      []string
	// ProviderUsage is the engine's provider_usage (JSON).
	ProviderUsage json.RawMessage
	// NextState is the lane's anti-thrash state after record_success; the
	// processor stores it only if the checkpoint becomes active.
	NextState json.RawMessage
	// CutEventIDs are the events the summary replaced (the summarized prefix),
	// in order; the harvest job names them, and the harvester reads their
	// original form from the request.
	CutEventIDs []string
}

// Result statuses.
const (
	StatusSkipped   = "skipped"
	StatusPruned    = "pruned"
	StatusCompacted = "compacted"
)
