package engine

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/semantic"

	"github.com/cairnhq/cairn/errcode"
)

// InputEvent checks, in the contract's order.
func TestInputEventValidation(t *testing.T) {
	valid := func() events.InputEvent {
		return event(t, 1, events.RoleTool, "out", withTool(map[string]any{"call_id": "c"}), withArtifacts("a1"))
	}
	cases := []struct {
		name    string
		edit    func(*events.InputEvent)
		reseal  bool
		message string
	}{
		{"empty id", func(e *events.InputEvent) { e.EventID = "" }, false, "event identities are invalid"},
		{"long agent", func(e *events.InputEvent) { e.RunAgentID = strings.Repeat("a", 201) }, false, "event identities are invalid"},
		{"chat seq", func(e *events.InputEvent) { e.ChatSeq = 0 }, false, "chat sequence is invalid"},
		{"ordinal", func(e *events.InputEvent) { e.LaneEventOrdinal = -1 }, false, "lane ordinal is invalid"},
		{"namespace utf-8", func(e *events.InputEvent) { e.CheckpointNamespace = "\xff" }, false, "checkpoint namespace is invalid"},
		{"role", func(e *events.InputEvent) { e.Role = "system" }, false, "event role is invalid"},
		{"provenance", func(e *events.InputEvent) { e.Provenance = struct{}{} }, false, "event provenance is invalid"},
		{"hash shape", func(e *events.InputEvent) { e.ContentHash = strings.ToUpper(e.ContentHash) }, false, "event hashes are invalid"},
		{"provenance hash", func(e *events.InputEvent) { e.Provenance = map[string]any{"origin": "other"} }, false, "provenance hash does not match"},
		{"content size", func(e *events.InputEvent) { e.Content = ptr(strings.Repeat("x", events.MaxContentBytes+1)) }, true, "event content is invalid"},
		{"content utf-8", func(e *events.InputEvent) { e.Content = ptr("\xff") }, false, "event content is invalid"},
		{"tool", func(e *events.InputEvent) { e.Tool = map[string]any{"x": struct{}{}} }, false, "event tool projection is invalid"},
		{"artifact count", func(e *events.InputEvent) { e.ArtifactIDs = make([]string, events.MaxEventArtifactIDs+1) }, false, "event artifact IDs are invalid"},
		{"artifact id", func(e *events.InputEvent) { e.ArtifactIDs = []string{""} }, true, "event artifact IDs are invalid"},
		{"content hash", func(e *events.InputEvent) { e.Truncated = true }, false, "content hash does not match"},
		{"token count", func(e *events.InputEvent) { e.TokenCount = ptr(int64(-1)) }, false, "event token count is invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := valid()
			tc.edit(&e)
			if tc.reseal {
				if h, err := events.ContentHash(e.Content, e.Tool, e.ArtifactIDs, e.Truncated); err == nil {
					e.ContentHash = h
				}
			}
			if got := wantCode(t, e.Validate(), errcode.InvalidEvent); got.Message != tc.message {
				t.Fatalf("message %q, want %q", got.Message, tc.message)
			}
		})
	}
	if err := valid().Validate(); err != nil {
		t.Fatal(err)
	}
	e, err := events.DecodeEvent(valid().Map())
	if err != nil || e.EventID != uuid7(1) || *e.TokenCount != 3 {
		t.Fatalf("DecodeEvent: %+v %v", e, err)
	}
	for _, bad := range []any{"x", map[string]any{"event_id": "x"}} {
		_, err := events.DecodeEvent(bad)
		wantCode(t, err, errcode.InvalidEvent)
	}
	var u events.InputEvent
	if err := u.UnmarshalJSON(fixtureJSON(t, fixtureRequest(t), nil)); err == nil {
		t.Fatal("a request decoded as an event")
	}
}

// Summarizer outputs in every accepted form decode to the same semantic.
func TestSummarizerOutputForms(t *testing.T) {
	p := Payload{}
	p.CoveredRange.FirstChatSeq, p.CoveredRange.LastChatSeq = 1, 2
	m := fixtureSemantic(p)
	text := string(indented(t, m))
	sem, err := decodeOutput(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []any{text, []byte(text), sem, *sem} {
		got, err := decodeOutput(out)
		if err != nil || got.Coverage != sem.Coverage || len(got.UserRequests) != 1 {
			t.Fatalf("%T: %+v %v", out, got, err)
		}
	}
	var nilSem *semantic.Semantic
	if _, err := decodeOutput(nilSem); err == nil {
		t.Fatal("nil semantic accepted")
	}
}
