package engine

import (
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/errcode"
)

// ManifestEntry records one projected tool output, enough to
// re-verify the projection from the original event.
type ManifestEntry struct {
	ProjectionVersion    int64    `json:"projection_version" doc:"the projection rules' version, 1"`
	EventID              string   `json:"event_id" doc:"the projected event"`
	OriginalContentHash  string   `json:"original_content_hash" doc:"content_hash of the event before projection" pattern:"^[0-9a-f]{64}$"`
	ProjectedContentHash string   `json:"projected_content_hash" doc:"content_hash of the projected event" pattern:"^[0-9a-f]{64}$"`
	OriginalBytes        int64    `json:"original_bytes" doc:"byte length of the original content" minimum:"0"`
	ArtifactIDs          []string `json:"artifact_ids" doc:"the artifacts that hold the original output"`
}

// projectPrefix replaces every large tool output of the prefix by an
// excerpt that points at its artifacts. A large output
// without an artifact fails the whole compaction (missing_compaction_artifact).
func projectPrefix(prefix []InputEvent) ([]InputEvent, []ManifestEntry, error) {
	out := make([]InputEvent, len(prefix))
	var manifest []ManifestEntry
	for i, e := range prefix {
		projected, entry, err := projectEvent(e)
		if err != nil {
			if failure := errcode.As(err); failure != nil {
				// The prefix is the lane's first events: i is the event's index.
				failure.Details["field"] = eventPath(i, failure.Details["field"].(string))
			}
			return nil, nil, err
		}
		out[i] = projected
		if entry != nil {
			manifest = append(manifest, *entry)
		}
	}
	return out, manifest, nil
}

// projectEvent projects e if it is a tool result longer than 2 048 bytes;
// otherwise it returns e unchanged and a nil entry.
func projectEvent(e InputEvent) (InputEvent, *ManifestEntry, error) {
	if e.Role != RoleTool || e.Content == nil || len(*e.Content) <= projectionThreshold {
		return e, nil, nil
	}
	if len(e.ArtifactIDs) == 0 {
		return e, nil, errcode.Field(errcode.MissingArtifact, "large tool output has no durable artifact",
			"artifact_ids", "required").With("event_id", e.EventID).
			With("content_bytes", int64(len(*e.Content))).With("threshold_bytes", int64(projectionThreshold))
	}
	content := *e.Content
	tool := make(map[string]any, len(e.Tool)+2)
	for k, v := range e.Tool {
		tool[k] = v
	}
	tool["result_excerpt"] = excerpt(content)
	tool["artifact_ids"] = stringsToAny(e.ArtifactIDs)
	hash, err := ContentHashOf(nil, tool, e.ArtifactIDs, true)
	if err != nil {
		return e, nil, errcode.Field(errcode.InvalidProjection, "projected event is not canonical JSON",
			"tool", "canonical").With("event_id", e.EventID)
	}
	p := e
	p.Content, p.Tool, p.Truncated, p.TokenCount, p.ContentHash = nil, tool, true, nil, hash
	entry := &ManifestEntry{
		ProjectionVersion:    projectionVersion,
		EventID:              e.EventID,
		OriginalContentHash:  e.ContentHash,
		ProjectedContentHash: hash,
		OriginalBytes:        int64(len(content)),
		ArtifactIDs:          append([]string(nil), e.ArtifactIDs...),
	}
	return p, entry, nil
}

// excerpt keeps the first and last KiB of content, each trimmed to whole
// UTF-8 sequences, around a projection marker.
func excerpt(content string) string {
	head := content[:projectionHalfBytes]
	for len(head) > 0 && !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	tail := content[len(content)-projectionHalfBytes:]
	for len(tail) > 0 && !utf8.ValidString(tail) {
		tail = tail[1:]
	}
	return head + projectionSeparator + tail
}
