package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
)

// fixedNow stamps every checkpoint built in tests.
var fixedNow = time.Date(2026, 9, 2, 10, 11, 12, 500_000_000, time.UTC)

// uuid7 returns a lowercase UUIDv7-shaped id numbered n.
func uuid7(n int) string { return fmt.Sprintf("01900000-0000-7000-8000-%012x", n) }

func artifactID(n int) string { return fmt.Sprintf("01900000-0000-7000-9000-%012x", n) }

// seal recomputes an event's provenance and content hashes.
func seal(t testing.TB, e events.InputEvent) events.InputEvent {
	t.Helper()
	ph, err := canonical.Hash(e.Provenance)
	if err != nil {
		t.Fatalf("provenance hash: %v", err)
	}
	ch, err := events.ContentHash(e.Content, e.Tool, e.ArtifactIDs, e.Truncated)
	if err != nil {
		t.Fatalf("content hash: %v", err)
	}
	e.ProvenanceSHA256, e.ContentHash = ph, ch
	return e
}

// event builds a sealed event of the fixture lane; token_count is the
// content's byte length, as in the contract's fixture.
func event(t testing.TB, n int, role, content string, edit ...func(*events.InputEvent)) events.InputEvent {
	t.Helper()
	origin := "derived"
	if role == events.RoleUser {
		origin = "direct_user"
	}
	e := events.InputEvent{
		EventID: uuid7(n), RunAgentID: "agent-1", ChatSeq: int64(n), LaneEventOrdinal: int64(n),
		CheckpointNamespace: "root", Role: role, Provenance: map[string]any{"origin": origin},
		Content: ptr(content), ArtifactIDs: []string{}, TokenCount: ptr(int64(len(content))),
	}
	for _, f := range edit {
		f(&e)
	}
	return seal(t, e)
}

func withTool(tool map[string]any) func(*events.InputEvent) {
	return func(e *events.InputEvent) { e.Tool = tool }
}

func withArtifacts(ids ...string) func(*events.InputEvent) {
	return func(e *events.InputEvent) { e.ArtifactIDs = append([]string{}, ids...) }
}

func protected(e *events.InputEvent) { e.Protected = true }

// fixtureEvents is the six-event lane of the worked example.
func fixtureEvents(t testing.TB) []events.InputEvent {
	t.Helper()
	return []events.InputEvent{
		event(t, 1, events.RoleUser, "implement the requested behavior"),
		event(t, 2, events.RoleTool, strings.Repeat("t", 6000),
			withTool(map[string]any{"call_id": "call-1", "name": "test", "status": "success"}),
			withArtifacts(artifactID(1))),
		event(t, 3, events.RoleUser, "continue with tests"),
		event(t, 4, events.RoleAssistant, "working"),
		event(t, 5, events.RoleUser, "keep it", protected),
		event(t, 6, events.RoleAssistant, "current input"),
	}
}

// fixturePolicy is the policy of the worked example.
func fixturePolicy() events.Policy {
	p := events.DefaultPolicy()
	p.RecentTailMinTokens, p.RecentTailMaxTokens = 100, 100
	p.SummaryOutputMinTokens, p.SummaryOutputMaxTokens = 10, 100
	p.MinimumPruneReclaimTokens = 100_000
	p.MinimumTotalReclaimTokens, p.MinimumTotalReclaimRatio = 1, 0.01
	return p
}

// fixtureRequest is the contract's shared request: manual, 18 000 rendered
// bytes, a 20 000-token separate input window.
func fixtureRequest(t testing.TB) *Request {
	t.Helper()
	laneEvents := fixtureEvents(t)
	rehydration, err := events.NewRehydrationState(map[string]any{"todo": map[string]any{"revision": int64(1)}})
	if err != nil {
		t.Fatal(err)
	}
	return &Request{
		V: 1, RequestID: uuid7(100), Trigger: events.TriggerManual,
		ThreadID: "thread-1", RunID: "run-1", RootTurnID: "turn-1", RunAgentID: "agent-1",
		ProviderConnectionID: "conn-1", CheckpointNamespace: "root",
		DestinationIdentityHash: strings.Repeat("a", 64),
		ModelProfile:            events.ModelProfile{MaxInputTokens: ptr(int64(20_000)), MaxOutputTokens: ptr(int64(2_000))},
		RenderedRequestBytes:    ptr(int64(18_000)),
		Events:                  laneEvents,
		ActiveInputEventIDs:     []string{laneEvents[len(laneEvents)-1].EventID},
		RehydrationState:        rehydration,
		Policy:                  fixturePolicy(),
	}
}

// fixtureSemantic is the contract's semantic helper: one objective and one
// active user request citing event 1, coverage from the payload.
func fixtureSemantic(p Payload) map[string]any {
	return map[string]any{
		"version":   int64(1),
		"objective": []any{map[string]any{"text": "implement the requested behavior", "source_event_ids": []any{uuid7(1)}}},
		"user_requests": []any{map[string]any{
			"source_event_id": uuid7(1), "exact_excerpt": "implement the requested behavior",
			"secret_omission": nil, "status": "active",
		}},
		"constraints": []any{}, "decisions": []any{},
		"progress":         map[string]any{"completed": []any{}, "active": []any{}, "blocked": []any{}, "pending": []any{}},
		"critical_context": []any{}, "errors": []any{}, "artifact_refs": []any{},
		"coverage": map[string]any{"first_chat_seq": p.CoveredRange.FirstChatSeq, "last_chat_seq": p.CoveredRange.LastChatSeq},
	}
}

// scripted is a deterministic test Summarizer: reply(n, payload) answers
// call n (0-based). It records every payload. Safe for concurrent use.
type scripted struct {
	mu       sync.Mutex
	reply    func(n int, p Payload) (Summary, error)
	payloads []Payload
}

var _ Summarizer = (*scripted)(nil)

func (s *scripted) Summarize(_ context.Context, p Payload) (Summary, error) {
	s.mu.Lock()
	n := len(s.payloads)
	s.payloads = append(s.payloads, p)
	s.mu.Unlock()
	return s.reply(n, p)
}

func (s *scripted) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.payloads)
}

// validSummarizer answers every call with the fixture semantic.
func validSummarizer() *scripted {
	return &scripted{reply: func(_ int, p Payload) (Summary, error) {
		return Summary{Output: fixtureSemantic(p), Usage: &events.Usage{InputTokens: 100, OutputTokens: 20}}, nil
	}}
}

// wantCode fails unless err is an *errcode.Error with code.
func wantCode(t testing.TB, err error, code string) *errcode.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %s, got nil", code)
	}
	e, ok := err.(*errcode.Error)
	if !ok {
		t.Fatalf("want *errcode.Error %s, got %T %v", code, err, err)
	}
	if e.Code != code {
		t.Fatalf("want code %s, got %s (%s, %v)", code, e.Code, e.Message, e.Details)
	}
	return e
}

func mustCompact(t testing.TB, req *Request, s Summarizer) *Result {
	t.Helper()
	res, err := Compact(context.Background(), req, s, fixedNow)
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	return res
}

// fixtureJSON encodes req in its wire form after applying edit to the map.
func fixtureJSON(t testing.TB, req *Request, edit func(map[string]any)) []byte {
	t.Helper()
	m := wireMap(req)
	if edit != nil {
		edit(m)
	}
	b, err := canonical.Encode(m)
	if err != nil {
		t.Fatalf("encode request: %v", err)
	}
	return b
}

// wireMap is r's wire form, a Request v1 JSON object, for tests that edit
// a request before decoding it and for the golden files. The nested
// values are written by their json tags (plainValue), as a producer's
// encoder would write them.
func wireMap(r *Request) map[string]any {
	m := map[string]any{
		"v": int64(RequestVersion), "request_id": r.RequestID, "trigger": r.Trigger,
		"thread_id": r.ThreadID, "run_id": r.RunID, "root_turn_id": r.RootTurnID,
		"run_agent_id": r.RunAgentID, "provider_connection_id": r.ProviderConnectionID,
		"checkpoint_namespace": r.CheckpointNamespace, "destination_identity_hash": r.DestinationIdentityHash,
		"parent_checkpoint_id": stringOrNil(r.ParentCheckpointID), "model_profile": mustPlain(r.ModelProfile),
		"requested_max_output_tokens": r.RequestedMaxOutputTokens,
		"active_input_event_ids":      stringsOrEmpty(r.ActiveInputEventIDs),
		"previous_semantic":           semanticValue(r.PreviousSemantic),
		"rehydration_state":           r.RehydrationState.Data,
		"policy":                      mustPlain(r.Policy),
		"focus":                       stringOrNil(r.Focus),
		"structural_pressure":         r.StructuralPressure,
		"anti_thrash":                 mustPlain(r.AntiThrash),
	}
	if r.Render != "" {
		m["render"] = r.Render
	}
	if r.EventsObject != "" && r.Events == nil {
		m["events_object"] = r.EventsObject
	} else {
		m["events"] = eventList(r.Events)
	}
	if a := mustPlain(r.Accounting).(map[string]any); len(a) > 0 {
		m["accounting"] = a
	}
	if r.RenderedRequestBytes != nil {
		m["rendered_request_bytes"] = *r.RenderedRequestBytes
	}
	if r.NewTokensSinceCompaction != nil {
		m["new_tokens_since_compaction"] = *r.NewTokensSinceCompaction
	}
	if r.DeadlineAt != nil {
		m["deadline_at"] = r.DeadlineAt.UTC().Format(time.RFC3339Nano)
	}
	if r.Scope != nil {
		m["scope"] = mustPlain(r.Scope)
	}
	if r.Harvest != nil {
		m["harvest"] = *r.Harvest
	}
	return m
}

func eventList(laneEvents []events.InputEvent) []any {
	out := make([]any, len(laneEvents))
	for i, e := range laneEvents {
		out[i] = e.Map()
	}
	return out
}

// mustPlain is plainValue(v) for a value a test built.
func mustPlain(v any) any {
	p, err := plainValue(v)
	if err != nil {
		panic(fmt.Sprintf("plainValue(%T): %v", v, err))
	}
	return p
}

// plainValue is v as encoding/json writes it (its json tags name the
// members), decoded back into a canonical value.
func plainValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canonical.Decode(b)
}
