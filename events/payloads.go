package events

import "github.com/cairnhq/cairn/semantic"

// The types below describe the JSON objects that Request and Activated carry
// as json.RawMessage: a client decodes them from, or encodes them into,
// those fields. All are Cairn's own types, so that what a client builds is
// what Cairn reads, and schemas/ is generated from their tags.
//
// Policy (policy.go) is the compaction policy (Request.Policy); Accounting
// (request.go) the producer's token accounting (Request.Accounting);
// AntiThrash (antithrash.go) a lane's automatic-compaction state
// (Request.AntiThrash); Checkpoint and Range (checkpoint.go) a checkpoint as
// stored (Activated.Checkpoint).

// Usage is what one summary call cost, as the provider reported it: an
// entry of Activated.ProviderUsage and Checkpoint.ProviderUsage.
type Usage struct {
	InputTokens  int64 `json:"input_tokens" doc:"input tokens the provider counted" minimum:"0"`
	OutputTokens int64 `json:"output_tokens" doc:"output tokens the provider counted" minimum:"0"`
	CachedTokens int64 `json:"cached_tokens,omitempty" doc:"input tokens served from the provider's cache" minimum:"0"`
	// Attempts counts provider calls behind this usage (retries included).
	Attempts int    `json:"attempts,omitempty" doc:"provider calls behind this usage, retries included" minimum:"1"`
	Model    string `json:"model,omitempty" doc:"the model that answered"`
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
