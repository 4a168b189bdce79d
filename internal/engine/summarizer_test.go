package engine

import (
	"context"
	"unicode/utf8"

	"github.com/cairnhq/cairn/events"
)

// extractive is a deterministic test Summarizer that builds a minimal valid
// semantic from a payload: it carries the previous semantic's objective and
// user requests forward, quotes each user event of the chunk as an active
// request (first 120 bytes, whole runes), cites the first user event as the
// objective, and references every artifact of the chunk. It stands in for a
// model in golden scenarios, examples and benchmarks.
type extractive struct{}

var _ Summarizer = extractive{}

const (
	excerptBytes       = 120
	maxObjective       = 8
	maxUserRequests    = 64
	maxArtifactRefs    = 128
	maxSourceEventRefs = 32
)

func (extractive) Summarize(_ context.Context, p Payload) (Summary, error) {
	objective, requests := []any{}, []any{}
	if prev := p.PreviousSemantic; prev != nil {
		m := prev.Map()
		objective, _ = m["objective"].([]any)
		requests, _ = m["user_requests"].([]any)
	}
	artifacts := []any{}
	for _, e := range p.Events {
		if e.Role == events.RoleUser && e.Content != nil && *e.Content != "" {
			if len(objective) == 0 {
				objective = append(objective, map[string]any{"text": "Carry out the user's requests in this session", "source_event_ids": []any{e.EventID}})
			}
			if len(requests) < maxUserRequests {
				requests = append(requests, map[string]any{"source_event_id": e.EventID, "exact_excerpt": runePrefix(*e.Content, excerptBytes),
					"secret_omission": nil, "status": "active"})
			}
		}
		for _, id := range e.ArtifactIDs {
			if len(artifacts) < maxArtifactRefs {
				artifacts = append(artifacts, map[string]any{"artifact_id": id, "purpose": "original tool output", "source_event_ids": []any{e.EventID}})
			}
		}
	}
	out := map[string]any{
		"version": int64(1), "objective": objective[:min(len(objective), maxObjective)], "user_requests": requests,
		"constraints": []any{}, "decisions": []any{},
		"progress":         map[string]any{"completed": []any{}, "active": []any{}, "blocked": []any{}, "pending": []any{}},
		"critical_context": []any{}, "errors": []any{}, "artifact_refs": artifacts,
		"coverage": map[string]any{"first_chat_seq": p.CoveredRange.FirstChatSeq, "last_chat_seq": p.CoveredRange.LastChatSeq},
	}
	usage := &events.Usage{InputTokens: int64(len(p.Events)) * 100, OutputTokens: 50, Model: "extractive-test"}
	return Summary{Output: out, Usage: usage}, nil
}

// runePrefix is at most n bytes of s, cut at a rune boundary.
func runePrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
