package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
)

// laneEvent is a small event numbered n costing tokens.
func laneEvent(t testing.TB, n int, role string, tokens int64, edit ...func(*events.InputEvent)) events.InputEvent {
	t.Helper()
	return event(t, n, role, fmt.Sprintf("event %d", n), append([]func(*events.InputEvent){
		func(e *events.InputEvent) { e.TokenCount = ptr(tokens) }}, edit...)...)
}

func callTool(callID string) func(*events.InputEvent) {
	return withTool(map[string]any{"call_id": callID, "name": "shell"})
}

func issuesCalls(callIDs ...string) func(*events.InputEvent) {
	calls := make([]any, len(callIDs))
	for i, id := range callIDs {
		calls[i] = map[string]any{"call_id": id, "name": "shell"}
	}
	return withTool(map[string]any{"calls": calls})
}

func ids(laneEvents []events.InputEvent) string {
	parts := make([]string, len(laneEvents))
	for i, e := range laneEvents {
		parts[i] = fmt.Sprint(e.LaneEventOrdinal)
	}
	return strings.Join(parts, ",")
}

// Cut-point cases.
func TestSplitTailCases(t *testing.T) {
	a, u, tool := events.RoleAssistant, events.RoleUser, events.RoleTool
	cases := []struct {
		name       string
		laneEvents []events.InputEvent
		budget     int64
		active     []string
		wantTail   string
		wantPrefix string
	}{
		{"newest event larger than the budget is retained",
			[]events.InputEvent{laneEvent(t, 1, a, 5), laneEvent(t, 2, a, 5), laneEvent(t, 3, a, 1000)}, 10, nil, "3", "1,2"},
		{"scan closes at the first event that does not fit",
			[]events.InputEvent{laneEvent(t, 1, a, 1), laneEvent(t, 2, a, 50), laneEvent(t, 3, a, 5), laneEvent(t, 4, a, 5)}, 12, nil, "3,4", "1,2"},
		{"protected event far back pulls the cut",
			[]events.InputEvent{laneEvent(t, 1, a, 5), laneEvent(t, 2, a, 5, protected), laneEvent(t, 3, a, 5), laneEvent(t, 4, a, 5), laneEvent(t, 5, a, 5)}, 10, nil, "2,3,4,5", "1"},
		{"active input pulls the cut",
			[]events.InputEvent{laneEvent(t, 1, a, 5), laneEvent(t, 2, a, 5), laneEvent(t, 3, a, 5), laneEvent(t, 4, a, 5)}, 5, []string{uuid7(2)}, "2,3,4", "1"},
		{"the last two user events are protected",
			[]events.InputEvent{laneEvent(t, 1, u, 5), laneEvent(t, 2, u, 5), laneEvent(t, 3, a, 5), laneEvent(t, 4, u, 5), laneEvent(t, 5, a, 5)}, 5, nil, "2,3,4,5", "1"},
		{"an issued call whose result is retained pulls the cut back",
			[]events.InputEvent{laneEvent(t, 1, a, 5), laneEvent(t, 2, a, 5, issuesCalls("c1")), laneEvent(t, 3, a, 5), laneEvent(t, 4, a, 5), laneEvent(t, 5, tool, 5, callTool("c1"))}, 10, nil, "2,3,4,5", "1"},
		{"a cut on a tool event moves to the preceding non-tool event",
			[]events.InputEvent{laneEvent(t, 1, a, 5), laneEvent(t, 2, a, 5), laneEvent(t, 3, tool, 5), laneEvent(t, 4, tool, 5)}, 10, nil, "2,3,4", "1"},
		{"an all-tool prefix keeps the cut",
			[]events.InputEvent{laneEvent(t, 1, tool, 5), laneEvent(t, 2, tool, 5), laneEvent(t, 3, tool, 5)}, 5, nil, "3", "1,2"},
		{"expansion is one pass",
			// 4's call c2 pulls the cut to 2, whose own call id c1 (shared with 1) is not followed.
			[]events.InputEvent{laneEvent(t, 1, tool, 5, callTool("c1")), laneEvent(t, 2, a, 5, withTool(map[string]any{"call_id": "c1", "calls": map[string]any{"call_id": "c2"}})),
				laneEvent(t, 3, a, 5), laneEvent(t, 4, tool, 5, callTool("c2"))}, 5, nil, "2,3,4", "1"},
		{"a single event is all tail", []events.InputEvent{laneEvent(t, 1, a, 99)}, 1, nil, "1", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix, tail := SplitTail(tc.laneEvents, tc.budget, tc.active)
			if ids(tail) != tc.wantTail || ids(prefix) != tc.wantPrefix {
				t.Fatalf("prefix %q tail %q, want %q / %q", ids(prefix), ids(tail), tc.wantPrefix, tc.wantTail)
			}
		})
	}
}

// Projection boundary cases.
func TestProjectionBoundaries(t *testing.T) {
	at2048 := event(t, 1, events.RoleTool, strings.Repeat("a", 2048), withArtifacts(artifactID(1)))
	if _, entry, err := projectEvent(at2048); err != nil || entry != nil {
		t.Fatalf("2 048 bytes projected: %v %v", entry, err)
	}
	at2049 := event(t, 1, events.RoleTool, strings.Repeat("a", 2049), withArtifacts(artifactID(1)))
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
	p, _, err = projectEvent(event(t, 1, events.RoleTool, content, withArtifacts(artifactID(1))))
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
	clash := event(t, 1, events.RoleTool, strings.Repeat("z", 3000), withArtifacts(artifactID(1)),
		withTool(map[string]any{"result_excerpt": "old", "artifact_ids": []any{"old"}}))
	if p, _, err := projectEvent(clash); err != nil || p.Tool["result_excerpt"] == "old" {
		t.Fatalf("clashing tool keys: %v", err)
	}
	// Large non-tool events and protected flags are not projected.
	if _, entry, _ := projectEvent(event(t, 1, events.RoleAssistant, strings.Repeat("a", 5000))); entry != nil {
		t.Fatal("assistant content was projected")
	}
}

func TestReplayRejectsEveryMismatch(t *testing.T) {
	big := func(n int, edit ...func(*events.InputEvent)) events.InputEvent {
		return event(t, n, events.RoleTool, strings.Repeat("r", 3000), append([]func(*events.InputEvent){withArtifacts(artifactID(n))}, edit...)...)
	}
	raw := []events.InputEvent{big(1), laneEvent(t, 2, events.RoleAssistant, 1)}
	_, manifest, err := projectPrefix(raw)
	if err != nil || len(manifest) != 1 {
		t.Fatal(err)
	}
	entry := manifest[0]
	edited := func(f func(*events.ManifestEntry)) []events.ManifestEntry {
		m := entry
		m.ArtifactIDs = append([]string(nil), entry.ArtifactIDs...)
		f(&m)
		return []events.ManifestEntry{m}
	}
	cases := []struct {
		name       string
		laneEvents []events.InputEvent
		manifest   []events.ManifestEntry
		code       string
		message    string
	}{
		{"bad version", raw, edited(func(m *events.ManifestEntry) { m.ProjectionVersion = 2 }), errcode.InvalidProjection, "projection manifest is invalid"},
		{"duplicate entry", raw, append(edited(func(*events.ManifestEntry) {}), entry), errcode.InvalidProjection, "projection manifest is invalid"},
		{"unavailable event", raw[1:], manifest, errcode.InvalidProjection, "projection manifest references an unavailable event"},
		{"not a tool result", []events.InputEvent{event(t, 1, events.RoleAssistant, strings.Repeat("r", 3000), withArtifacts(artifactID(1)))}, manifest, errcode.InvalidProjection, "only complete tool results may be projected"},
		{"byte length", raw, edited(func(m *events.ManifestEntry) { m.OriginalBytes = 10 }), errcode.InvalidProjection, "projection source byte length does not match"},
		{"source hash", raw, edited(func(m *events.ManifestEntry) { m.OriginalContentHash = hashA }), errcode.InvalidProjection, "projection source hash does not match"},
		{"artifact identity", raw, edited(func(m *events.ManifestEntry) { m.ArtifactIDs = []string{"other"} }), errcode.InvalidProjection, "projection artifact identity does not match"},
		{"projected hash", raw, edited(func(m *events.ManifestEntry) { m.ProjectedContentHash = hashA }), errcode.InvalidProjection, "projected event hash does not match"},
		{"no artifact", []events.InputEvent{event(t, 1, events.RoleTool, strings.Repeat("r", 3000))}, edited(func(m *events.ManifestEntry) {
			m.ArtifactIDs = nil
			m.OriginalContentHash = event(t, 1, events.RoleTool, strings.Repeat("r", 3000)).ContentHash
		}), errcode.MissingArtifact, "large tool output has no durable artifact"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Replay(tc.laneEvents, tc.manifest)
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
