package semantic

import "github.com/cairnhq/cairn/internal/canonical"

// Map returns the plain map form of s with every key present:
// nil lists become empty lists and nullable fields become nil. It is the form
// that is hashed, size-checked and persisted. A nil s maps to nil.
func (s *Semantic) Map() map[string]any {
	if s == nil {
		return nil
	}
	return map[string]any{
		"version":          s.Version,
		"objective":        mapList(s.Objective),
		"user_requests":    mapList(s.UserRequests),
		"constraints":      mapList(s.Constraints),
		"decisions":        mapList(s.Decisions),
		"progress":         s.Progress.Map(),
		"critical_context": mapList(s.CriticalContext),
		"errors":           mapList(s.Errors),
		"artifact_refs":    mapList(s.ArtifactRefs),
		"coverage":         s.Coverage.Map(),
	}
}

// CanonicalValue implements canonical.Valuer: a *Semantic hashes as its Map.
// A nil *Semantic encodes as null.
func (s *Semantic) CanonicalValue() any {
	if s == nil {
		return nil
	}
	return s.Map()
}

var _ canonical.Valuer = (*Semantic)(nil)

// Hash returns the semantic_hash of s: the lowercase hex SHA-256 of the
// canonical encoding of its Map. It fails only when s holds invalid UTF-8.
func (s *Semantic) Hash() (string, error) {
	if s == nil {
		// A nil s maps to a nil map, which encodes as {}, not as null.
		return canonical.Hash(s.Map())
	}
	bp, b, err := s.encodeScratch()
	defer releaseScratch(bp, b)
	if err != nil {
		return "", err
	}
	return canonical.HashBytes(b), nil
}

// Map returns the closed coverage object.
func (c Coverage) Map() map[string]any {
	return map[string]any{"first_chat_seq": c.FirstChatSeq, "last_chat_seq": c.LastChatSeq}
}

// Map returns the closed progress object with all four lists present.
func (p Progress) Map() map[string]any {
	return map[string]any{
		"completed": mapList(p.Completed),
		"active":    mapList(p.Active),
		"blocked":   mapList(p.Blocked),
		"pending":   mapList(p.Pending),
	}
}

// Map returns the entry's closed object.
func (e Sourced) Map() map[string]any {
	return map[string]any{"text": e.Text, "source_event_ids": ids(e.SourceEventIDs)}
}

// Map returns the entry's closed object.
func (r UserRequest) Map() map[string]any {
	var omission any
	if r.SecretOmission != nil {
		omission = map[string]any{"class": r.SecretOmission.Class, "source_span_hash": r.SecretOmission.SourceSpanHash}
	}
	return map[string]any{
		"source_event_id": r.SourceEventID,
		"exact_excerpt":   nullable(r.ExactExcerpt),
		"secret_omission": omission,
		"status":          r.Status,
	}
}

// Map returns the entry's closed object.
func (d Decision) Map() map[string]any {
	return map[string]any{"text": d.Text, "rationale": nullable(d.Rationale), "source_event_ids": ids(d.SourceEventIDs)}
}

// Map returns the entry's closed object.
func (p ProgressItem) Map() map[string]any {
	return map[string]any{
		"text":                   p.Text,
		"source_event_ids":       ids(p.SourceEventIDs),
		"verification_event_ids": ids(p.VerificationEventIDs),
	}
}

// Map returns the entry's closed object.
func (e ErrorEntry) Map() map[string]any {
	return map[string]any{"message": e.Message, "status": e.Status, "source_event_ids": ids(e.SourceEventIDs)}
}

// Map returns the entry's closed object.
func (a ArtifactRef) Map() map[string]any {
	return map[string]any{"artifact_id": a.ArtifactID, "purpose": a.Purpose, "source_event_ids": ids(a.SourceEventIDs)}
}

func nullable(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// ids returns list as []any so the map is the same plain form Parse reads.
func ids(list []string) []any {
	out := make([]any, len(list))
	for i, id := range list {
		out[i] = id
	}
	return out
}

func mapList[T interface{ Map() map[string]any }](list []T) []any {
	out := make([]any, len(list))
	for i, e := range list {
		out[i] = e.Map()
	}
	return out
}
