// Package events is Cairn's public wire contract: the subjects, the request and event types, the error codes, and helpers to publish requests and follow outcomes.
//
// Services that ask Cairn for compactions, and services that react to its
// events, import this package instead of copying JSON shapes. Every type
// here encodes to the JSON documented in subjects.md and described by the
// schemas under schemas/.
package events

import (
	"encoding/json"
	"time"
)

// Version is the wire version of every message.
const Version = 1

// Subjects.
const (
	SubjectRequested    = "conversation.compact.requested"
	SubjectActivated    = "conversation.compact.activated"
	SubjectSkipped      = "conversation.compact.skipped"
	SubjectFailed       = "conversation.compact.failed"
	SubjectHarvest      = "conversation.memory.harvest"
	SubjectFlushed      = "conversation.memory.flushed"
	SubjectMemoryFailed = "conversation.memory.failed"
)

// Streams that hold the subjects above.
const (
	StreamRequests = "COMPACT_REQUESTS"
	StreamEvents   = "COMPACT_EVENTS"
	StreamHarvest  = "MEMORY_HARVEST"
	StreamMemory   = "MEMORY_EVENTS"
)

// Object Store bucket for claim-checked lanes (Request.EventsObject).
const LanesBucket = "cairn_lanes"

// Event kinds, the `kind` field of each event.
const (
	KindActivated    = "activated"
	KindSkipped      = "skipped"
	KindFailed       = "failed"
	KindMemoryFlush  = "memory_flush"
	KindMemoryFailed = "memory_failed"
)

// Scope says where harvested facts are stored.
type Scope struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// ModelProfile describes the context window of the model a lane is sent to.
type ModelProfile struct {
	ContextLimitKind       string  `json:"context_limit_kind,omitempty"`
	MaxInputTokens         *int64  `json:"max_input_tokens,omitempty"`
	MaxContextTokens       *int64  `json:"max_context_tokens,omitempty"`
	MaxOutputTokens        *int64  `json:"max_output_tokens,omitempty"`
	ProviderReservedTokens *int64  `json:"provider_reserved_tokens,omitempty"`
	Tokenizer              *string `json:"tokenizer,omitempty"`
}

// InputEvent is one event of a lane. Build it with NewInputEvent, which fills
// in the two hashes.
type InputEvent struct {
	EventID             string         `json:"event_id"`
	RunAgentID          string         `json:"run_agent_id"`
	ChatSeq             int64          `json:"chat_seq"`
	LaneEventOrdinal    int64          `json:"lane_event_ordinal"`
	CheckpointNamespace string         `json:"checkpoint_namespace"`
	Role                string         `json:"role"`
	Provenance          any            `json:"provenance"`
	ProvenanceSHA256    string         `json:"provenance_sha256,omitempty"`
	Content             *string        `json:"content"`
	Tool                map[string]any `json:"tool,omitempty"`
	ArtifactIDs         []string       `json:"artifact_ids,omitempty"`
	Truncated           bool           `json:"truncated,omitempty"`
	Protected           bool           `json:"protected,omitempty"`
	TokenCount          *int64         `json:"token_count,omitempty"`
	ContentHash         string         `json:"content_hash,omitempty"`
}

// Request is the body of conversation.compact.requested (Request v1).
// Optional fields are pointers or omitted when empty; Policy, Accounting,
// RehydrationState and PreviousSemantic are passed through as JSON.
type Request struct {
	V                        int             `json:"v"`
	RequestID                string          `json:"request_id"`
	Trigger                  string          `json:"trigger"`
	ThreadID                 string          `json:"thread_id"`
	RunID                    string          `json:"run_id"`
	RootTurnID               string          `json:"root_turn_id"`
	RunAgentID               string          `json:"run_agent_id"`
	ProviderConnectionID     string          `json:"provider_connection_id"`
	CheckpointNamespace      string          `json:"checkpoint_namespace"`
	DestinationIdentityHash  string          `json:"destination_identity_hash"`
	ParentCheckpointID       *string         `json:"parent_checkpoint_id"`
	ModelProfile             ModelProfile    `json:"model_profile"`
	RequestedMaxOutputTokens int64           `json:"requested_max_output_tokens,omitempty"`
	RenderedRequestBytes     *int64          `json:"rendered_request_bytes,omitempty"`
	Render                   string          `json:"render,omitempty"`
	Events                   []InputEvent    `json:"events,omitempty"`
	EventsObject             string          `json:"events_object,omitempty"`
	ActiveInputEventIDs      []string        `json:"active_input_event_ids,omitempty"`
	PreviousSemantic         json.RawMessage `json:"previous_semantic,omitempty"`
	RehydrationState         json.RawMessage `json:"rehydration_state"`
	Policy                   json.RawMessage `json:"policy,omitempty"`
	Focus                    *string         `json:"focus,omitempty"`
	StructuralPressure       bool            `json:"structural_pressure,omitempty"`
	Accounting               json.RawMessage `json:"accounting,omitempty"`
	// AntiThrash is the lane's automatic-compaction state. The service keeps
	// it in the lane head and ignores this field; `processor compact` reads it.
	AntiThrash               json.RawMessage `json:"anti_thrash,omitempty"`
	NewTokensSinceCompaction *int64          `json:"new_tokens_since_compaction,omitempty"`
	DeadlineAt               *time.Time      `json:"deadline_at,omitempty"`
	Scope                    *Scope          `json:"scope,omitempty"`
	Harvest                  *bool           `json:"harvest,omitempty"`
}

// Header holds the fields every event carries.
type Header struct {
	V                   int       `json:"v"`
	EventID             string    `json:"event_id"`
	Kind                string    `json:"kind"`
	RequestID           string    `json:"request_id"`
	ThreadID            string    `json:"thread_id"`
	RunAgentID          string    `json:"run_agent_id"`
	CheckpointNamespace string    `json:"checkpoint_namespace"`
	OccurredAt          time.Time `json:"occurred_at"`
}

// Activated is published when a checkpoint becomes a lane's active head.
type Activated struct {
	Header
	Status               string          `json:"status"` // pruned | compacted
	CheckpointID         string          `json:"checkpoint_id"`
	ParentCheckpointID   *string         `json:"parent_checkpoint_id"`
	Generation           int64           `json:"generation"`
	CheckpointHash       string          `json:"checkpoint_hash"`
	ParentCheckpointHash *string         `json:"parent_checkpoint_hash"`
	TokensBefore         int64           `json:"tokens_before"`
	TokensAfter          int64           `json:"tokens_after"`
	TokensReclaimed      int64           `json:"tokens_reclaimed"`
	RetainedEventIDs     []string        `json:"retained_event_ids"`
	ArtifactIDs          []string        `json:"artifact_ids"`
	ProviderUsage        json.RawMessage `json:"provider_usage"`
	Checkpoint           json.RawMessage `json:"checkpoint"`
}

// Skipped is published when a request changed nothing.
type Skipped struct {
	Header
	Reason       string `json:"reason"`
	TokensBefore int64  `json:"tokens_before"`
}

// Error is a typed failure as it appears in failed events.
type Error struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Details   map[string]any `json:"details"`
	Retryable bool           `json:"retryable"`
}

// Failed is published when a request cannot be carried out.
type Failed struct {
	Header
	Error          Error  `json:"error"`
	StreamSequence uint64 `json:"stream_sequence"`
}

// Fact is one harvested fact.
type Fact struct {
	Slug       string   `json:"slug"`
	Title      string   `json:"title"`
	Body       string   `json:"body"`
	Topics     []string `json:"topics"`
	Confidence float64  `json:"confidence"`
	Provenance string   `json:"provenance"`
	Source     string   `json:"source"`
}

// MemoryFlushed is published when facts of a compaction were saved.
type MemoryFlushed struct {
	V              int       `json:"v"`
	EventID        string    `json:"event_id"`
	Kind           string    `json:"kind"`
	ConversationID string    `json:"conversation_id"`
	HeadEntryID    string    `json:"head_entry_id"`
	Scope          Scope     `json:"scope"`
	Facts          []Fact    `json:"facts"`
	Count          int       `json:"count"`
	Duplicates     int       `json:"duplicates"`
	Redacted       int       `json:"redacted"`
	Extractor      string    `json:"extractor"`
	OccurredAt     time.Time `json:"occurred_at"`
}

// MemoryFailed is published when a harvest gave up. The compaction it came
// from stays active.
type MemoryFailed struct {
	V              int       `json:"v"`
	EventID        string    `json:"event_id"`
	Kind           string    `json:"kind"`
	ConversationID string    `json:"conversation_id"`
	HeadEntryID    string    `json:"head_entry_id"`
	Scope          Scope     `json:"scope"`
	Error          Error     `json:"error"`
	OccurredAt     time.Time `json:"occurred_at"`
}
