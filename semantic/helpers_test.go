package semantic

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
)

// Event ids of the test lane; ids need not be UUIDv7 (any 1..IDMaxBytes
// bytes is a citation), so one of each kind is used.
const (
	evUser1     = "01890a5d-ac96-774b-bcce-b302099a8057"
	evAssistant = "evt-assistant-2"
	evTool      = "01890a5d-ac96-774b-bcce-b302099a8059"
	evUser2     = "evt-user-4"
	artifactA   = "artifact-tool-output-1"
)

// baseJSON is a valid semantic for the lane of testSources, covering 1..4.
const baseJSON = `{
  "version": 1,
  "objective": [{"text": "implement the requested behavior", "source_event_ids": ["` + evUser1 + `"]}],
  "user_requests": [{"source_event_id": "` + evUser1 + `", "exact_excerpt": "implement the requested behavior", "secret_omission": null, "status": "active"}],
  "constraints": [{"text": "keep the public API", "source_event_ids": ["` + evUser2 + `"]}],
  "decisions": [{"text": "use a table", "rationale": null, "source_event_ids": ["` + evAssistant + `"]}],
  "progress": {
    "completed": [{"text": "ran the tests", "source_event_ids": ["` + evTool + `"], "verification_event_ids": ["` + evTool + `"]}],
    "active": [],
    "blocked": [],
    "pending": [{"text": "write docs", "source_event_ids": ["` + evUser2 + `"], "verification_event_ids": []}]
  },
  "critical_context": [],
  "errors": [{"message": "test failed once", "status": "resolved", "source_event_ids": ["` + evTool + `"]}],
  "artifact_refs": [{"artifact_id": "` + artifactA + `", "purpose": "full test output", "source_event_ids": ["` + evTool + `"]}],
  "coverage": {"first_chat_seq": 1, "last_chat_seq": 4}
}`

func strPtr(s string) *string { return &s }

// testSources is the processed lane baseJSON is checked against.
func testSources() Sources {
	return Sources{
		Events: []SourceEvent{
			{EventID: evUser1, Role: "user", Content: strPtr("Please implement the requested behavior, thanks."), ChatSeq: 1},
			{EventID: evAssistant, Role: "assistant", Content: strPtr("I will use a table."), ChatSeq: 2},
			{EventID: evTool, Role: "tool", Content: nil, ChatSeq: 3, ArtifactIDs: []string{artifactA}},
			{EventID: evUser2, Role: "user", Content: strPtr("Keep the public API. Docs later."), ChatSeq: 4},
		},
		Coverage: Coverage{FirstChatSeq: 1, LastChatSeq: 4},
	}
}

// baseMap returns a fresh decoded copy of baseJSON.
func baseMap(t testing.TB) map[string]any {
	t.Helper()
	v, err := canonical.Decode([]byte(baseJSON))
	if err != nil {
		t.Fatalf("decode baseJSON: %v", err)
	}
	return v.(map[string]any)
}

// base returns baseJSON parsed.
func base(t testing.TB) *Semantic {
	t.Helper()
	s, err := ParseJSON([]byte(baseJSON))
	if err != nil {
		t.Fatalf("ParseJSON(baseJSON): %v", err)
	}
	return s
}

// wantInvalid asserts err is invalid_compaction_semantic with message msg.
func wantInvalid(t testing.TB, err error, msg string) *errcode.Error {
	t.Helper()
	var e *errcode.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want *errcode.Error %q", err, msg)
	}
	if e.Code != errcode.InvalidSemantic || e.Message != msg {
		t.Fatalf("error = %s / %q, want %s / %q", e.Code, e.Message, errcode.InvalidSemantic, msg)
	}
	return e
}

// path walks a decoded map by keys and list indexes written as "a.0.b".
func path(t testing.TB, m map[string]any, p string) any {
	t.Helper()
	var cur any = m
	for _, part := range strings.Split(p, ".") {
		switch x := cur.(type) {
		case map[string]any:
			cur = x[part]
		case []any:
			i := 0
			for _, c := range part {
				i = i*10 + int(c-'0')
			}
			cur = x[i]
		default:
			t.Fatalf("path %s: %T at %s", p, cur, part)
		}
	}
	return cur
}

// entry returns the object at p.
func entry(t testing.TB, m map[string]any, p string) map[string]any {
	t.Helper()
	e, ok := path(t, m, p).(map[string]any)
	if !ok {
		t.Fatalf("path %s is not an object", p)
	}
	return e
}

// repeat returns n entries produced by gen.
func repeat(n int, gen func(i int) any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = gen(i)
	}
	return out
}
