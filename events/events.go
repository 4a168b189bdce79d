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

	"github.com/cairnhq/cairn/errcode"
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

// Header holds the fields every event carries.
type Header struct {
	V         int    `json:"v" doc:"wire version, always 1"`
	EventID   string `json:"event_id" doc:"deterministic id derived from request_id and kind, also sent as Nats-Msg-Id: key idempotent handling on it"`
	Kind      string `json:"kind" doc:"the event's kind"`
	RequestID string `json:"request_id" doc:"the request this event answers"`
	Correlation
	OccurredAt time.Time `json:"occurred_at" doc:"when Cairn published the event"`
}

// Activated is published when a checkpoint becomes a lane's active head.
type Activated struct {
	Header
	Status               string          `json:"status" doc:"pruned: only tool output was projected; compacted: older history was summarized" enum:"pruned|compacted"` // pruned | compacted
	CheckpointID         string          `json:"checkpoint_id" doc:"the new active checkpoint (the request_id)"`
	ParentCheckpointID   *string         `json:"parent_checkpoint_id" doc:"the checkpoint this one replaced; null for a lane's first"`
	Generation           int64           `json:"generation" doc:"1 for a lane's first checkpoint, +1 per activation"`
	CheckpointHash       string          `json:"checkpoint_hash" doc:"canonical hash of the checkpoint without created_at" pattern:"^[0-9a-f]{64}$"`
	ParentCheckpointHash *string         `json:"parent_checkpoint_hash" doc:"the replaced checkpoint's hash; chains the lane's history" pattern:"^[0-9a-f]{64}$"`
	TokensBefore         int64           `json:"tokens_before" doc:"the lane's estimated tokens before"`
	TokensAfter          int64           `json:"tokens_after" doc:"the lane's estimated tokens after"`
	TokensReclaimed      int64           `json:"tokens_reclaimed" doc:"tokens_before - tokens_after"`
	RetainedEventIDs     []string        `json:"retained_event_ids" doc:"the events kept verbatim in the tail"`
	ArtifactIDs          []string        `json:"artifact_ids"`
	ProviderUsage        json.RawMessage `json:"provider_usage" doc:"model usage of the summary calls"`
	Checkpoint           json.RawMessage `json:"checkpoint" doc:"the checkpoint as stored"`
}

// Skipped is published when a request changed nothing.
type Skipped struct {
	Header
	Reason       string `json:"reason" doc:"why nothing changed" enum:"below_trigger|cancellation_pending|automatic_limit|insufficient_new_tokens|rapid_refill"`
	TokensBefore int64  `json:"tokens_before" doc:"the lane's estimated tokens before"`
}

// Error is a typed failure as it appears in failed events: Cairn's one
// error type, so that errors.As finds the same value in a Go error chain
// and in a decoded event.
type Error = errcode.Error

// Failed is published when a request cannot be carried out.
type Failed struct {
	Header
	Error          Error  `json:"error"`
	StreamSequence uint64 `json:"stream_sequence" doc:"the request's sequence in COMPACT_REQUESTS"`
}

// The kinds of a harvested fact (Fact.Kind).
const (
	FactPreference  = "preference"  // a convention or preference: "we use pnpm, not npm"
	FactDecision    = "decision"    // a decision taken: "we decided to keep v1 frozen until March"
	FactConstraint  = "constraint"  // a rule not to break: "never log request bodies"
	FactEnvironment = "environment" // where things are: hosts, URLs, paths, versions, channels
	FactIdentity    = "identity"    // who is who and who owns what
	FactNote        = "note"        // a note meant for later: "for future reference, ..."
)

// FactKinds lists every fact kind, in the order MEMORY.md groups them.
var FactKinds = []string{FactPreference, FactDecision, FactConstraint, FactEnvironment, FactIdentity, FactNote}

// Fact is one harvested fact.
type Fact struct {
	Slug       string   `json:"slug" doc:"the fact's key within its scope; a later harvest of the same slug updates it"`
	Kind       string   `json:"kind" doc:"what sort of fact it is" enum:"preference|decision|constraint|environment|identity|note"`
	Title      string   `json:"title" doc:"what the fact is, in a few words"`
	Body       string   `json:"body" doc:"the fact as it was stated, redacted of secrets"`
	Topics     []string `json:"topics" doc:"the fact's own terms (tools, languages, paths, services, people), lower-case, for retrieval"`
	Confidence float64  `json:"confidence" doc:"0..1; facts harvested from a compaction are low-trust (0.3)"`
	Provenance string   `json:"provenance" doc:"how the fact was obtained: compaction for harvested facts"`
	Source     string   `json:"source" doc:"the conversation and checkpoint the fact was cut from"`
}

// MemoryFlushed is published when facts of a compaction were saved.
type MemoryFlushed struct {
	V              int       `json:"v" doc:"wire version, always 1"`
	EventID        string    `json:"event_id" doc:"deterministic id derived from request_id and kind, also sent as Nats-Msg-Id: key idempotent handling on it"`
	Kind           string    `json:"kind" doc:"the event's kind"`
	ConversationID string    `json:"conversation_id"`
	HeadEntryID    string    `json:"head_entry_id"`
	Scope          Scope     `json:"scope"`
	Facts          []Fact    `json:"facts"`
	Count          int       `json:"count"`
	Duplicates     int       `json:"duplicates"`
	Redacted       int       `json:"redacted"`
	LeftOut        int       `json:"left_out" doc:"facts not stored because the harvest reached its facts bound (--harvest-max-facts); the weakest are left out"`
	Extractor      string    `json:"extractor"`
	Coverage       Coverage  `json:"coverage" doc:"how much of the cut the extractor read"`
	OccurredAt     time.Time `json:"occurred_at" doc:"when Cairn published the event"`
}

// Coverage says how much of a compaction's cut a harvest read. The offline
// extractor reads every entry; a model extractor reads the cut in windows,
// oldest first, and stops at its call bound.
type Coverage struct {
	EntriesCut  int  `json:"entries_cut" doc:"the entries the compaction cut"`
	EntriesRead int  `json:"entries_read" doc:"the cut entries the extractor read, oldest first"`
	Complete    bool `json:"complete" doc:"true when every cut entry was read"`
	ModelCalls  int  `json:"model_calls" doc:"the model calls the harvest made (0 for the offline extractor)"`
}

// MemoryFailed is published when a harvest gave up. The compaction it came
// from stays active.
type MemoryFailed struct {
	V              int       `json:"v" doc:"wire version, always 1"`
	EventID        string    `json:"event_id" doc:"deterministic id derived from request_id and kind, also sent as Nats-Msg-Id: key idempotent handling on it"`
	Kind           string    `json:"kind" doc:"the event's kind"`
	ConversationID string    `json:"conversation_id"`
	HeadEntryID    string    `json:"head_entry_id"`
	Scope          Scope     `json:"scope"`
	Error          Error     `json:"error"`
	OccurredAt     time.Time `json:"occurred_at" doc:"when Cairn published the event"`
}
