// Package semantic defines the closed continuation schema (version 1) that a
// checkpoint carries, and checks a candidate against the events it cites.
package semantic

// Version is the only schema version Cairn accepts.
const Version = 1

// Coverage is the chat_seq range a semantic summarizes, both ends inclusive.
type Coverage struct {
	FirstChatSeq int64 `json:"first_chat_seq"`
	LastChatSeq  int64 `json:"last_chat_seq"`
}

// Sourced is an entry of objective, constraints or critical_context.
type Sourced struct {
	Text           string   `json:"text"`
	SourceEventIDs []string `json:"source_event_ids"`
}

// SecretOmission stands in for a user request whose text held a secret.
type SecretOmission struct {
	Class          string `json:"class"`
	SourceSpanHash string `json:"source_span_hash"`
}

// UserRequest is one thing the user asked for. Exactly one of ExactExcerpt
// and SecretOmission is non-nil.
type UserRequest struct {
	SourceEventID  string          `json:"source_event_id"`
	ExactExcerpt   *string         `json:"exact_excerpt"`
	SecretOmission *SecretOmission `json:"secret_omission"`
	Status         string          `json:"status"` // active | completed | superseded
}

// Decision is a choice made during the conversation.
type Decision struct {
	Text           string   `json:"text"`
	Rationale      *string  `json:"rationale"`
	SourceEventIDs []string `json:"source_event_ids"`
}

// ProgressItem is one unit of work in one of the four progress lists.
type ProgressItem struct {
	Text                 string   `json:"text"`
	SourceEventIDs       []string `json:"source_event_ids"`
	VerificationEventIDs []string `json:"verification_event_ids"`
}

// Progress groups work items by state.
type Progress struct {
	Completed []ProgressItem `json:"completed"`
	Active    []ProgressItem `json:"active"`
	Blocked   []ProgressItem `json:"blocked"`
	Pending   []ProgressItem `json:"pending"`
}

// ErrorEntry is an error seen during the conversation.
type ErrorEntry struct {
	Message        string   `json:"message"`
	Status         string   `json:"status"` // open | resolved
	SourceEventIDs []string `json:"source_event_ids"`
}

// ArtifactRef points at a durable artifact (for example a projected tool output).
type ArtifactRef struct {
	ArtifactID     string   `json:"artifact_id"`
	Purpose        string   `json:"purpose"`
	SourceEventIDs []string `json:"source_event_ids"`
}

// Semantic is the closed continuation schema, version 1. Field order is the
// canonical order of the contract.
type Semantic struct {
	Version         int           `json:"version"`
	Objective       []Sourced     `json:"objective"`
	UserRequests    []UserRequest `json:"user_requests"`
	Constraints     []Sourced     `json:"constraints"`
	Decisions       []Decision    `json:"decisions"`
	Progress        Progress      `json:"progress"`
	CriticalContext []Sourced     `json:"critical_context"`
	Errors          []ErrorEntry  `json:"errors"`
	ArtifactRefs    []ArtifactRef `json:"artifact_refs"`
	Coverage        Coverage      `json:"coverage"`
}
