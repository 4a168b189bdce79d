package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/errcode"
)

// laneEvent is a small event numbered n costing tokens.
func laneEvent(t testing.TB, n int, role string, tokens int64, edit ...func(*InputEvent)) InputEvent {
	t.Helper()
	return event(t, n, role, fmt.Sprintf("event %d", n), append([]func(*InputEvent){
		func(e *InputEvent) { e.TokenCount = ptr(tokens) }}, edit...)...)
}

func callTool(callID string) func(*InputEvent) {
	return withTool(map[string]any{"call_id": callID, "name": "shell"})
}

func issuesCalls(callIDs ...string) func(*InputEvent) {
	calls := make([]any, len(callIDs))
	for i, id := range callIDs {
		calls[i] = map[string]any{"call_id": id, "name": "shell"}
	}
	return withTool(map[string]any{"calls": calls})
}

func ids(events []InputEvent) string {
	parts := make([]string, len(events))
	for i, e := range events {
		parts[i] = fmt.Sprint(e.LaneEventOrdinal)
	}
	return strings.Join(parts, ",")
}

// Cut-point cases.
func TestSplitTailCases(t *testing.T) {
	a, u, tool := RoleAssistant, RoleUser, RoleTool
	cases := []struct {
		name       string
		events     []InputEvent
		budget     int64
		active     []string
		wantTail   string
		wantPrefix string
	}{
		{"newest event larger than the budget is retained",
			[]InputEvent{laneEvent(t, 1, a, 5), laneEvent(t, 2, a, 5), laneEvent(t, 3, a, 1000)}, 10, nil, "3", "1,2"},
		{"scan closes at the first event that does not fit",
			[]InputEvent{laneEvent(t, 1, a, 1), laneEvent(t, 2, a, 50), laneEvent(t, 3, a, 5), laneEvent(t, 4, a, 5)}, 12, nil, "3,4", "1,2"},
		{"protected event far back pulls the cut",
			[]InputEvent{laneEvent(t, 1, a, 5), laneEvent(t, 2, a, 5, protected), laneEvent(t, 3, a, 5), laneEvent(t, 4, a, 5), laneEvent(t, 5, a, 5)}, 10, nil, "2,3,4,5", "1"},
		{"active input pulls the cut",
			[]InputEvent{laneEvent(t, 1, a, 5), laneEvent(t, 2, a, 5), laneEvent(t, 3, a, 5), laneEvent(t, 4, a, 5)}, 5, []string{uuid7(2)}, "2,3,4", "1"},
		{"the last two user events are protected",
			[]InputEvent{laneEvent(t, 1, u, 5), laneEvent(t, 2, u, 5), laneEvent(t, 3, a, 5), laneEvent(t, 4, u, 5), laneEvent(t, 5, a, 5)}, 5, nil, "2,3,4,5", "1"},
		{"an issued call whose result is retained pulls the cut back",
			[]InputEvent{laneEvent(t, 1, a, 5), laneEvent(t, 2, a, 5, issuesCalls("c1")), laneEvent(t, 3, a, 5), laneEvent(t, 4, a, 5), laneEvent(t, 5, tool, 5, callTool("c1"))}, 10, nil, "2,3,4,5", "1"},
		{"a cut on a tool event moves to the preceding non-tool event",
			[]InputEvent{laneEvent(t, 1, a, 5), laneEvent(t, 2, a, 5), laneEvent(t, 3, tool, 5), laneEvent(t, 4, tool, 5)}, 10, nil, "2,3,4", "1"},
		{"an all-tool prefix keeps the cut",
			[]InputEvent{laneEvent(t, 1, tool, 5), laneEvent(t, 2, tool, 5), laneEvent(t, 3, tool, 5)}, 5, nil, "3", "1,2"},
		{"expansion is one pass",
			// 4's call c2 pulls the cut to 2, whose own call id c1 (shared with 1) is not followed.
			[]InputEvent{laneEvent(t, 1, tool, 5, callTool("c1")), laneEvent(t, 2, a, 5, withTool(map[string]any{"call_id": "c1", "calls": map[string]any{"call_id": "c2"}})),
				laneEvent(t, 3, a, 5), laneEvent(t, 4, tool, 5, callTool("c2"))}, 5, nil, "2,3,4", "1"},
		{"a single event is all tail", []InputEvent{laneEvent(t, 1, a, 99)}, 1, nil, "1", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix, tail := SplitTail(tc.events, tc.budget, tc.active)
			if ids(tail) != tc.wantTail || ids(prefix) != tc.wantPrefix {
				t.Fatalf("prefix %q tail %q, want %q / %q", ids(prefix), ids(tail), tc.wantPrefix, tc.wantTail)
			}
		})
	}
}

// Projection boundary cases.
func TestProjectionBoundaries(t *testing.T) {
	at2048 := event(t, 1, RoleTool, strings.Repeat("a", 2048), withArtifacts(artifactID(1)))
	if _, entry, err := projectEvent(at2048); err != nil || entry != nil {
		t.Fatalf("2 048 bytes projected: %v %v", entry, err)
	}
	at2049 := event(t, 1, RoleTool, strings.Repeat("a", 2049), withArtifacts(artifactID(1)))
	p, entry, err := projectEvent(at2049)
	if err != nil || entry == nil || entry.OriginalBytes != 2049 {
		t.Fatalf("2 049 bytes not projected: %v %v", entry, err)
	}
	if got := p.Tool["result_excerpt"].(string); len(got) != 2067 {
		t.Fatalf("ASCII excerpt is %d bytes, want 2 067", len(got))
	}
	// "é" is two bytes; placed across the 1 024-byte boundaries it is dropped
	// from both halves rather than split.
	content := strings.Repeat("a", 1023) + "é" + strings.Repeat("b", 2000) + "é" + strings.Repeat("c", 1023)
	p, _, err = projectEvent(event(t, 1, RoleTool, content, withArtifacts(artifactID(1))))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("a", 1023) + projectionSeparator + strings.Repeat("c", 1023)
	if got := p.Tool["result_excerpt"]; got != want {
		t.Fatalf("excerpt is not trimmed to whole runes (%d bytes)", len(got.(string)))
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("projected event does not validate: %v", err)
	}
	// A tool object that already has the two keys is overwritten, not a crash.
	clash := event(t, 1, RoleTool, strings.Repeat("z", 3000), withArtifacts(artifactID(1)),
		withTool(map[string]any{"result_excerpt": "old", "artifact_ids": []any{"old"}}))
	if p, _, err := projectEvent(clash); err != nil || p.Tool["result_excerpt"] == "old" {
		t.Fatalf("clashing tool keys: %v", err)
	}
	// Large non-tool events and protected flags are not projected.
	if _, entry, _ := projectEvent(event(t, 1, RoleAssistant, strings.Repeat("a", 5000))); entry != nil {
		t.Fatal("assistant content was projected")
	}
}

func TestReplayRejectsEveryMismatch(t *testing.T) {
	big := func(n int, edit ...func(*InputEvent)) InputEvent {
		return event(t, n, RoleTool, strings.Repeat("r", 3000), append([]func(*InputEvent){withArtifacts(artifactID(n))}, edit...)...)
	}
	raw := []InputEvent{big(1), laneEvent(t, 2, RoleAssistant, 1)}
	_, manifest, err := projectPrefix(raw)
	if err != nil || len(manifest) != 1 {
		t.Fatal(err)
	}
	entry := manifest[0]
	edited := func(f func(*ManifestEntry)) []ManifestEntry {
		m := entry
		m.ArtifactIDs = append([]string(nil), entry.ArtifactIDs...)
		f(&m)
		return []ManifestEntry{m}
	}
	cases := []struct {
		name     string
		events   []InputEvent
		manifest []ManifestEntry
		code     string
		message  string
	}{
		{"bad version", raw, edited(func(m *ManifestEntry) { m.ProjectionVersion = 2 }), errcode.InvalidProjection, "projection manifest is invalid"},
		{"duplicate entry", raw, append(edited(func(*ManifestEntry) {}), entry), errcode.InvalidProjection, "projection manifest is invalid"},
		{"unavailable event", raw[1:], manifest, errcode.InvalidProjection, "projection manifest references an unavailable event"},
		{"not a tool result", []InputEvent{event(t, 1, RoleAssistant, strings.Repeat("r", 3000), withArtifacts(artifactID(1)))}, manifest, errcode.InvalidProjection, "only complete tool results may be projected"},
		{"byte length", raw, edited(func(m *ManifestEntry) { m.OriginalBytes = 10 }), errcode.InvalidProjection, "projection source byte length does not match"},
		{"source hash", raw, edited(func(m *ManifestEntry) { m.OriginalContentHash = hashA }), errcode.InvalidProjection, "projection source hash does not match"},
		{"artifact identity", raw, edited(func(m *ManifestEntry) { m.ArtifactIDs = []string{"other"} }), errcode.InvalidProjection, "projection artifact identity does not match"},
		{"projected hash", raw, edited(func(m *ManifestEntry) { m.ProjectedContentHash = hashA }), errcode.InvalidProjection, "projected event hash does not match"},
		{"no artifact", []InputEvent{event(t, 1, RoleTool, strings.Repeat("r", 3000))}, edited(func(m *ManifestEntry) {
			m.ArtifactIDs = nil
			m.OriginalContentHash = event(t, 1, RoleTool, strings.Repeat("r", 3000)).ContentHash
		}), errcode.MissingArtifact, "large tool output has no durable artifact"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Replay(tc.events, tc.manifest)
			if e := wantCode(t, err, tc.code); e.Message != tc.message {
				t.Fatalf("message %q, want %q", e.Message, tc.message)
			}
		})
	}
	decoded, err := DecodeManifest([]any{mustPlain(entry)})
	if err != nil || len(decoded) != 1 || decoded[0].EventID != entry.EventID {
		t.Fatalf("manifest round trip: %v %v", decoded, err)
	}
	for _, bad := range []any{"x", []any{"x"}, []any{map[string]any{"event_id": "e"}}} {
		_, err := DecodeManifest(bad)
		wantCode(t, err, errcode.InvalidProjection)
	}
}
