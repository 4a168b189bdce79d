package engine

import (
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/jsonwire"

	"github.com/cairnhq/cairn/errcode"
)

// projectPrefix replaces every large tool output of the prefix by an
// excerpt that points at its artifacts. A large output
// without an artifact fails the whole compaction (missing_compaction_artifact).
func projectPrefix(prefix []events.InputEvent) ([]events.InputEvent, []events.ManifestEntry, error) {
	out := make([]events.InputEvent, len(prefix))
	var manifest []events.ManifestEntry
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
func projectEvent(e events.InputEvent) (events.InputEvent, *events.ManifestEntry, error) {
	if e.Role != events.RoleTool || e.Content == nil || len(*e.Content) <= projectionThreshold {
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
	tool["artifact_ids"] = jsonwire.StringsToAny(e.ArtifactIDs)
	hash, err := events.ContentHash(nil, tool, e.ArtifactIDs, true)
	if err != nil {
		return e, nil, errcode.Field(errcode.InvalidProjection, "projected event is not canonical JSON",
			"tool", "canonical").With("event_id", e.EventID)
	}
	p := e
	p.Content, p.Tool, p.Truncated, p.TokenCount, p.ContentHash = nil, tool, true, nil, hash
	entry := &events.ManifestEntry{
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

// projectionError is an invalid_compaction_projection naming the manifest
// field (projection_manifest[i].name) and the rule it broke.
func projectionError(message, field, rule string) *errcode.Error {
	return errcode.Field(errcode.InvalidProjection, message, field, rule)
}

// manifestPath is the path of entry i of a projection manifest, or of its
// field name when name is not "".
func manifestPath(i int, name string) string {
	p := "projection_manifest[" + strconv.Itoa(i) + "]"
	if name != "" {
		p += "." + name
	}
	return p
}

// checkEntry checks one manifest entry's own fields.
func checkEntry(i int, m events.ManifestEntry) error {
	const message = "projection manifest is invalid"
	switch {
	case m.ProjectionVersion != projectionVersion:
		return projectionError(message, manifestPath(i, "projection_version"), "enum").
			With("value", m.ProjectionVersion).With("expected", []any{int64(projectionVersion)})
	case !jsonwire.IsHash64(m.OriginalContentHash):
		return projectionError(message, manifestPath(i, "original_content_hash"), "pattern").With("expected", hashRule)
	case !jsonwire.IsHash64(m.ProjectedContentHash):
		return projectionError(message, manifestPath(i, "projected_content_hash"), "pattern").With("expected", hashRule)
	case m.OriginalBytes < 0:
		return projectionError(message, manifestPath(i, "original_bytes"), "range").With("value", m.OriginalBytes)
	}
	return nil
}

// Replay re-verifies a persisted projection manifest against the original
// events and returns the projected lane. Errors are
// invalid_compaction_projection (or missing_compaction_artifact).
func Replay(laneEvents []events.InputEvent, manifest []events.ManifestEntry) ([]events.InputEvent, error) {
	byEvent := make(map[string]int, len(manifest))
	for i, m := range manifest {
		if err := checkEntry(i, m); err != nil {
			return nil, err
		}
		if _, dup := byEvent[m.EventID]; dup {
			return nil, projectionError("projection manifest is invalid", manifestPath(i, "event_id"), "unique").
				With("event_id", m.EventID)
		}
		byEvent[m.EventID] = i
	}
	present := make(map[string]bool, len(laneEvents))
	for _, e := range laneEvents {
		present[e.EventID] = true
	}
	for i, m := range manifest {
		if !present[m.EventID] {
			return nil, projectionError("projection manifest references an unavailable event",
				manifestPath(i, "event_id"), "reference").With("event_id", m.EventID)
		}
	}
	out := make([]events.InputEvent, len(laneEvents))
	for i, e := range laneEvents {
		at, ok := byEvent[e.EventID]
		if !ok {
			out[i] = e
			continue
		}
		p, err := replayOne(e, manifest[at], at)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// replayOne replays entry i of the manifest, m, on its event e.
func replayOne(e events.InputEvent, m events.ManifestEntry, i int) (events.InputEvent, error) {
	fail := func(message, name string) (events.InputEvent, error) {
		return e, projectionError(message, manifestPath(i, name), "match").With("event_id", e.EventID)
	}
	switch {
	case e.Role != events.RoleTool || e.Content == nil:
		return fail("only complete tool results may be projected", "event_id")
	case int64(len(*e.Content)) != m.OriginalBytes:
		return fail("projection source byte length does not match", "original_bytes")
	case e.ContentHash != m.OriginalContentHash:
		return fail("projection source hash does not match", "original_content_hash")
	case !slices.Equal(e.ArtifactIDs, m.ArtifactIDs):
		return fail("projection artifact identity does not match", "artifact_ids")
	}
	p, entry, err := projectEvent(e)
	if err != nil {
		return e, err
	}
	if entry == nil || p.ContentHash != m.ProjectedContentHash {
		return fail("projected event hash does not match", "projected_content_hash")
	}
	return p, nil
}

// DecodeManifest reads a persisted manifest (a JSON array of entry objects;
// projection_version defaults to 1 and artifact_ids to []). Errors are
// invalid_compaction_projection.
func DecodeManifest(v any) ([]events.ManifestEntry, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, projectionError("projection replay input is invalid", "projection_manifest", "type").
			With("expected", "array")
	}
	out := make([]events.ManifestEntry, 0, len(list))
	for i, raw := range list {
		invalid := func(rule string) error {
			return projectionError("projection manifest is invalid", manifestPath(i, ""), rule)
		}
		m, isMap := raw.(map[string]any)
		if !isMap {
			return nil, invalid("type")
		}
		entry := events.ManifestEntry{ProjectionVersion: projectionVersion, ArtifactIDs: []string{}}
		if err := jsonwire.Read(reflect.ValueOf(&entry).Elem(), manifestFields, m, func(jsonwire.Field, string) error {
			return invalid("type")
		}); err != nil {
			return nil, err
		}
		if len(jsonwire.Missing(manifestRequired, m)) > 0 {
			return nil, invalid("required")
		}
		out = append(out, entry)
	}
	return out, nil
}

// manifestFields are a manifest entry's members; all but projection_version
// and artifact_ids are required of a persisted one.
var (
	manifestFields   = jsonwire.Fields(reflect.TypeFor[events.ManifestEntry]())
	manifestRequired = jsonwire.Select(manifestFields, "event_id", "original_content_hash", "projected_content_hash", "original_bytes")
)
