// Package semantic defines the closed continuation schema (version 1) that a
// checkpoint carries, and checks a candidate against the events it cites.
//
// The Go types are the one description of the schema: their json tags name
// the fields for the decoder (ParseJSON, Parse) and for the canonical
// encoding that is hashed and stored (Map, AppendCanonical, Hash), and their
// doc, enum and pattern tags describe each field for published schemas.
// Sizes are bounded by DefaultBounds.
package semantic

// Version is the only schema version Cairn accepts.
const Version = 1

// Coverage is the chat_seq range a semantic summarizes, both ends inclusive.
type Coverage struct {
	FirstChatSeq int64 `json:"first_chat_seq" doc:"the first chat_seq the summary covers, > 0"`
	LastChatSeq  int64 `json:"last_chat_seq" doc:"the last chat_seq the summary covers, >= first_chat_seq"`
}

// Sourced is an entry of objective, constraints or critical_context.
type Sourced struct {
	Text           string   `json:"text" doc:"the entry (1..4000 bytes)"`
	SourceEventIDs []string `json:"source_event_ids" doc:"the events the entry is drawn from: 1..32 distinct ids of the lane's events or of the previous semantic's citations"`
}

// SecretOmission stands in for a user request whose text held a secret.
type SecretOmission struct {
	Class          string `json:"class" doc:"the kind of secret the excerpt held, e.g. a redaction class (1..64 bytes)"`
	SourceSpanHash string `json:"source_span_hash" doc:"SHA-256 of the omitted text, 64 lowercase hex digits" pattern:"^[0-9a-f]{64}$"`
}

// UserRequest is one thing the user asked for. Exactly one of ExactExcerpt
// and SecretOmission is non-nil.
type UserRequest struct {
	SourceEventID  string          `json:"source_event_id" doc:"the user event the request was made in (1..200 bytes)"`
	ExactExcerpt   *string         `json:"exact_excerpt" doc:"a byte-exact substring of that event's content (1..4000 bytes); null exactly when secret_omission is set"`
	SecretOmission *SecretOmission `json:"secret_omission" doc:"stands in for an excerpt that held a secret; null exactly when exact_excerpt is set"`
	Status         string          `json:"status" doc:"whether the request is still to be done" enum:"active|completed|superseded"`
}

// Decision is a choice made during the conversation.
type Decision struct {
	Text           string   `json:"text" doc:"what was decided (1..4000 bytes)"`
	Rationale      *string  `json:"rationale" doc:"why (1..4000 bytes), or null"`
	SourceEventIDs []string `json:"source_event_ids" doc:"the events the decision is drawn from (1..32 distinct ids)"`
}

// ProgressItem is one unit of work in one of the four progress lists.
type ProgressItem struct {
	Text                 string   `json:"text" doc:"the unit of work (1..4000 bytes)"`
	SourceEventIDs       []string `json:"source_event_ids" doc:"the events the item is drawn from (1..32 distinct ids)"`
	VerificationEventIDs []string `json:"verification_event_ids" doc:"events that show the work's state, such as a test run (0..32 distinct ids; not checked as citations)"`
}

// Progress groups work items by state.
type Progress struct {
	Completed []ProgressItem `json:"completed" doc:"work done (at most 128 items)"`
	Active    []ProgressItem `json:"active" doc:"work under way (at most 64 items)"`
	Blocked   []ProgressItem `json:"blocked" doc:"work that is stuck (at most 64 items)"`
	Pending   []ProgressItem `json:"pending" doc:"work not started yet (at most 64 items)"`
}

// ErrorEntry is an error seen during the conversation.
type ErrorEntry struct {
	Message        string   `json:"message" doc:"the error (1..4000 bytes)"`
	Status         string   `json:"status" doc:"whether the error still stands" enum:"open|resolved"`
	SourceEventIDs []string `json:"source_event_ids" doc:"the events the error was seen in (1..32 distinct ids)"`
}

// ArtifactRef points at a durable artifact (for example a projected tool output).
type ArtifactRef struct {
	ArtifactID     string   `json:"artifact_id" doc:"an id from the artifact_ids of the cited events, or of the previous semantic's artifact_refs (1..200 bytes)"`
	Purpose        string   `json:"purpose" doc:"what the artifact holds or why it matters (1..4000 bytes)"`
	SourceEventIDs []string `json:"source_event_ids" doc:"events that carry the artifact (1..32 distinct ids)"`
}

// Semantic is the closed continuation schema, version 1. Field order is the
// order fields are listed and checked in; the canonical encoding sorts the
// keys by their bytes.
type Semantic struct {
	Version         int           `json:"version" doc:"the schema version, 1"`
	Objective       []Sourced     `json:"objective" doc:"what the conversation is working towards (at most 8 entries)"`
	UserRequests    []UserRequest `json:"user_requests" doc:"what the user asked for, each quoted from or standing in for a user event (at most 64)"`
	Constraints     []Sourced     `json:"constraints" doc:"rules the work must keep to (at most 64 entries)"`
	Decisions       []Decision    `json:"decisions" doc:"choices made during the conversation (at most 64)"`
	Progress        Progress      `json:"progress" doc:"units of work by state"`
	CriticalContext []Sourced     `json:"critical_context" doc:"other facts a continuation needs verbatim, such as paths, commands and ids (at most 128 entries)"`
	Errors          []ErrorEntry  `json:"errors" doc:"errors seen during the conversation (at most 64)"`
	ArtifactRefs    []ArtifactRef `json:"artifact_refs" doc:"artifacts worth keeping, such as projected tool outputs (at most 128)"`
	Coverage        Coverage      `json:"coverage" doc:"the chat_seq range the summary covers, both ends inclusive"`
}
