package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/jsonwire"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/semantic"
)

func compactErr(t *testing.T, req *Request, s Summarizer) error {
	t.Helper()
	res, err := Compact(context.Background(), req, s, fixedNow)
	if err == nil {
		t.Fatalf("want an error, got %s", res.Status)
	}
	return err
}

// twoChunkRequest has a prefix of three events that needs two summary
// calls: the input budget is 15 804 tokens and events 2 and 3 cost 9 000.
func twoChunkRequest(t *testing.T) *Request {
	req := fixtureRequest(t)
	heavy := func(e *events.InputEvent) { e.TokenCount = ptr(int64(9_000)) }
	req.Events = []events.InputEvent{
		event(t, 1, events.RoleUser, "implement the requested behavior"),
		event(t, 2, events.RoleAssistant, "plan", heavy),
		event(t, 3, events.RoleAssistant, "more plan", heavy),
		event(t, 4, events.RoleUser, "continue with tests"),
		event(t, 5, events.RoleAssistant, "working"),
		event(t, 6, events.RoleUser, "current input"),
	}
	req.ActiveInputEventIDs = []string{uuid7(6)}
	return req
}

func TestChunkingSplitsGreedilyAndCoverageStartsAtThePrefix(t *testing.T) {
	s := validSummarizer()
	res := mustCompact(t, twoChunkRequest(t), s)
	if res.Status != events.StatusCompacted || s.calls() != 2 {
		t.Fatalf("status %s calls %d", res.Status, s.calls())
	}
	first, second := s.payloads[0], s.payloads[1]
	if len(first.Events) != 2 || len(second.Events) != 1 {
		t.Fatalf("chunk sizes %d, %d", len(first.Events), len(second.Events))
	}
	if second.CoveredRange != (semantic.Coverage{FirstChatSeq: 1, LastChatSeq: 3}) || second.PreviousSemantic == nil {
		t.Fatalf("second chunk coverage %+v previous %v", second.CoveredRange, second.PreviousSemantic)
	}
	if first.MaximumOutputTokens != 100 || first.SchemaVersion != PayloadSchemaVersion || first.CheckpointID != uuid7(100) {
		t.Fatalf("payload header %+v", first)
	}
	usage, _ := canonical.Encode(res.ProviderUsage)
	if string(usage) != `[{"input_tokens":100,"output_tokens":20},{"input_tokens":100,"output_tokens":20}]` {
		t.Fatalf("usage %s", usage)
	}
}

func TestChunkingLimits(t *testing.T) {
	req := twoChunkRequest(t)
	req.Policy.MaximumHierarchicalSummaryCalls = 1
	e := wantCode(t, compactErr(t, req, validSummarizer()), errcode.InputTooLarge)
	if e.Message != "source history needs too many summary calls" {
		t.Fatalf("message %q", e.Message)
	}
	req = twoChunkRequest(t)
	req.Events[1] = event(t, 2, events.RoleAssistant, "plan", func(e *events.InputEvent) { e.TokenCount = ptr(int64(15_805)) })
	e = wantCode(t, compactErr(t, req, validSummarizer()), errcode.InputTooLarge)
	if e.Message != "one source event exceeds the compactor input limit" {
		t.Fatalf("message %q", e.Message)
	}
	req = fixtureRequest(t)
	req.ModelProfile.MaxInputTokens = ptr(int64(4_100))
	req.RenderedRequestBytes = ptr(int64(4_000))
	e = wantCode(t, compactErr(t, req, validSummarizer()), errcode.InputTooLarge)
	if e.Message != "compactor prompt and output allowance do not fit" {
		t.Fatalf("message %q", e.Message)
	}
}

// invalidFirst answers the first call of each chunk with an invalid output.
func invalidFirst() *scripted {
	return &scripted{reply: func(_ int, p Payload) (Summary, error) {
		if p.Repair == nil {
			return Summary{Output: `{"unexpected": true}`}, nil
		}
		return Summary{Output: fixtureSemantic(p)}, nil
	}}
}

func TestRepairBudgetIsSharedAcrossChunks(t *testing.T) {
	s := invalidFirst()
	wantCode(t, compactErr(t, twoChunkRequest(t), s), errcode.InvalidSemantic)
	if s.calls() != 3 {
		t.Fatalf("calls %d, want 3 (chunk 1 repaired, chunk 2 out of repairs)", s.calls())
	}
	req := twoChunkRequest(t)
	req.Policy.MaximumSchemaRepairs = 2
	s = invalidFirst()
	res := mustCompact(t, req, s)
	usage, _ := canonical.Encode(res.ProviderUsage)
	if s.calls() != 4 || string(usage) != `[[],[]]` {
		t.Fatalf("calls %d usage %s", s.calls(), usage)
	}
	if s.payloads[1].Repair.InvalidOutput != `{"unexpected": true}` {
		t.Fatalf("repair shows %v", s.payloads[1].Repair.InvalidOutput)
	}
}

func TestASecondInvalidOutputIsNotRepairedAgain(t *testing.T) {
	s := &scripted{reply: func(int, Payload) (Summary, error) { return Summary{Output: 42}, nil }}
	e := wantCode(t, compactErr(t, fixtureRequest(t), s), errcode.InvalidSemantic)
	if e.Message != "compaction output must be JSON data" || s.calls() != 2 {
		t.Fatalf("message %q calls %d", e.Message, s.calls())
	}
	s = &scripted{reply: func(int, Payload) (Summary, error) { return Summary{Output: "{not json"}, nil }}
	e = wantCode(t, compactErr(t, fixtureRequest(t), s), errcode.InvalidSemantic)
	if e.Message != "compaction output is not JSON" {
		t.Fatalf("message %q", e.Message)
	}
}

func autoRequest(t *testing.T, state events.AntiThrash) *Request {
	req := fixtureRequest(t)
	req.Trigger = events.TriggerAuto
	state.AccountingMethod, state.AccountingVersion = ptr(events.MethodConservativeUTF8), ptr(int64(1))
	req.AntiThrash = state
	return req
}

func TestEligibilityOrder(t *testing.T) {
	cases := []struct {
		name  string
		state events.AntiThrash
		want  string
	}{
		{"cancellation first", events.AntiThrash{CancellationPending: true, SuccessfulAutoCompactions: 9}, events.SkipCancellationPending},
		{"automatic limit", events.AntiThrash{SuccessfulAutoCompactions: 3, LastCompactionLaneEventOrdinal: ptr(int64(1))}, events.SkipAutomaticLimit},
		{"insufficient new tokens", events.AntiThrash{LastCompactionLaneEventOrdinal: ptr(int64(1)), NewTokensSinceCompaction: 10, ConsecutiveIneffectiveCompactions: 1}, events.SkipInsufficientNewTokens},
		{"rapid refill", events.AntiThrash{ConsecutiveIneffectiveCompactions: 1}, events.SkipRapidRefill},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validSummarizer()
			res := mustCompact(t, autoRequest(t, tc.state), s)
			if res.Status != StatusSkipped || res.Suppression != tc.want || s.calls() != 0 {
				t.Fatalf("status %s suppression %q calls %d", res.Status, res.Suppression, s.calls())
			}
		})
	}
	// Observed new tokens lift insufficient_new_tokens.
	req := autoRequest(t, events.AntiThrash{LastCompactionLaneEventOrdinal: ptr(int64(1))})
	req.NewTokensSinceCompaction = ptr(int64(9_000))
	if res := mustCompact(t, req, validSummarizer()); res.Status != events.StatusCompacted {
		t.Fatalf("status %s suppression %s", res.Status, res.Suppression)
	}
	// A state in other units is rebased first, which clears recompaction
	// evidence; the result carries the rebased state.
	req = autoRequest(t, events.AntiThrash{LastCompactionLaneEventOrdinal: ptr(int64(1)), SuccessfulAutoCompactions: 1})
	req.AntiThrash.AccountingMethod = ptr(events.MethodLocalTokenizer)
	res := mustCompact(t, req, validSummarizer())
	if res.Status != events.StatusCompacted || *res.State.AccountingMethod != events.MethodConservativeUTF8 ||
		res.State.LastCompactionLaneEventOrdinal != nil || res.State.SuccessfulAutoCompactions != 1 {
		t.Fatalf("rebased: status %s suppression %s state %+v", res.Status, res.Suppression, res.State)
	}
}

func TestEligibilityPrecedesNothingThatFailsClosed(t *testing.T) {
	req := autoRequest(t, events.AntiThrash{})
	req.Policy.Enabled = false
	wantCode(t, compactErr(t, req, nil), errcode.InvalidRequest)

	req = autoRequest(t, events.AntiThrash{CancellationPending: true})
	req.Policy.Mode = events.ModeNative
	wantCode(t, compactErr(t, req, nil), errcode.NativeUnsupported)

	req = autoRequest(t, events.AntiThrash{CancellationPending: true})
	req.ModelProfile = events.ModelProfile{ContextLimitKind: "mystery"}
	wantCode(t, compactErr(t, req, nil), errcode.UnknownContextLimit)

	req = autoRequest(t, events.AntiThrash{CancellationPending: true})
	req.Accounting.ProfileHash = ptr("not a hash")
	wantCode(t, compactErr(t, req, nil), errcode.InvalidState)
}

func TestPrunedWhenProjectionIsEnough(t *testing.T) {
	req := fixtureRequest(t)
	req.Policy.MinimumPruneReclaimTokens = 100
	s := validSummarizer()
	res := mustCompact(t, req, s)
	cp := res.Checkpoint
	if res.Status != events.StatusPruned || s.calls() != 0 || cp.Representation != events.RepresentationPruned {
		t.Fatalf("status %s calls %d", res.Status, s.calls())
	}
	if len(res.RetainedEvents) != 6 || res.RetainedEvents[1].Content != nil || len(cp.ProjectionManifest) != 1 {
		t.Fatalf("retained %d manifest %d", len(res.RetainedEvents), len(cp.ProjectionManifest))
	}
	if cp.Semantic != nil || cp.SemanticHash != nil || cp.SummaryCoverageLastChatSeq != nil || cp.ProviderUsage != nil {
		t.Fatalf("pruned checkpoint without lineage %+v", cp)
	}
	if res.Map()["provider_usage"] != nil {
		t.Fatalf("provider_usage %v", res.Map()["provider_usage"])
	}
	// With a previous semantic the pruned checkpoint carries it forward.
	first := mustCompact(t, fixtureRequest(t), validSummarizer())
	req = fixtureRequest(t)
	req.RequestID = uuid7(101)
	req.Policy.MinimumPruneReclaimTokens = 100
	req.PreviousSemantic = first.Checkpoint.Semantic
	res = mustCompact(t, req, s)
	cp = res.Checkpoint
	if res.Status != events.StatusPruned || cp.Semantic == nil || *cp.SemanticHash != *first.Checkpoint.SemanticHash ||
		*cp.SummaryCoverageLastChatSeq != 2 || cp.SummaryCoverageLastLaneEventOrdinal != nil {
		t.Fatalf("pruned with lineage: %s %+v", res.Status, cp)
	}
}

func TestEachEffectivenessConditionAloneFails(t *testing.T) {
	bigTail := fixtureRequest(t)
	bigTail.RenderedRequestBytes = ptr(int64(19_900))
	bigTail.Events[5] = event(t, 6, events.RoleAssistant, strings.Repeat("w", 15_000), func(e *events.InputEvent) { e.TokenCount = ptr(int64(13)) })
	tokens := fixtureRequest(t)
	tokens.Policy.MinimumTotalReclaimTokens = 1_000_000
	ratio := fixtureRequest(t)
	ratio.Policy.MinimumTotalReclaimRatio = 0.99
	for name, req := range map[string]*Request{"above target": bigTail, "too few tokens": tokens, "too small a ratio": ratio} {
		t.Run(name, func(t *testing.T) {
			e := wantCode(t, compactErr(t, req, validSummarizer()), errcode.Ineffective)
			if _, ok := e.Details["target_tokens"]; !ok {
				t.Fatalf("details %v", e.Details)
			}
		})
	}
}

func TestEmptyPrefix(t *testing.T) {
	// The first event is one of the last two user events: nothing can be cut.
	req := fixtureRequest(t)
	req.Events = []events.InputEvent{event(t, 1, events.RoleUser, "hello"), event(t, 2, events.RoleAssistant, "hi"), event(t, 3, events.RoleUser, "again")}
	req.ActiveInputEventIDs = nil
	nothing := wantCode(t, compactErr(t, req, validSummarizer()), errcode.NothingToCompact)
	if nothing.Details["events"] != 3 || nothing.Details["cut_events"] != 0 || nothing.Details["recent_tail_min_tokens"] != req.Policy.RecentTailMinTokens {
		t.Fatalf("nothing_to_compact details %v", nothing.Details)
	}

	req.Events[1] = event(t, 2, events.RoleAssistant, strings.Repeat("h", 15_000))
	e := wantCode(t, compactErr(t, req, validSummarizer()), errcode.CurrentInputItemTooLarge)
	if e.Details["target_tokens"] != int64(14_000) {
		t.Fatalf("details %v", e.Details)
	}
}

func TestValidatorRejectionsReachTheCaller(t *testing.T) {
	first := mustCompact(t, fixtureRequest(t), validSummarizer())
	cases := []struct {
		name    string
		edit    func(m map[string]any)
		message string
	}{
		{"unknown source id", func(m map[string]any) {
			m["objective"] = []any{map[string]any{"text": "x", "source_event_ids": []any{uuid7(99)}}}
		}, "semantic cites unknown source events"},
		{"excerpt not a substring", func(m map[string]any) {
			m["user_requests"].([]any)[0].(map[string]any)["exact_excerpt"] = "implement something else"
		}, "user request excerpt is not source-backed"},
		{"excerpt and omission", func(m map[string]any) {
			m["user_requests"].([]any)[0].(map[string]any)["secret_omission"] = map[string]any{"class": "api_key", "source_span_hash": hashA}
		}, "request excerpt and omission are mutually exclusive"},
		{"duplicate entries", func(m map[string]any) {
			m["objective"] = append(m["objective"].([]any), m["objective"].([]any)[0])
		}, "semantic output contains duplicate entries"},
		{"coverage", func(m map[string]any) {
			m["coverage"] = map[string]any{"first_chat_seq": int64(1), "last_chat_seq": int64(3)}
		}, "semantic coverage does not match the source range"},
		{"wrong version", func(m map[string]any) { m["version"] = int64(2) }, "semantic version is invalid"},
		{"lineage id in a new user request", func(m map[string]any) {
			m["user_requests"] = []any{map[string]any{"source_event_id": uuid7(1), "exact_excerpt": "implement",
				"secret_omission": nil, "status": "active"}}
		}, "user request excerpt is not source-backed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := fixtureRequest(t)
			if tc.name == "lineage id in a new user request" {
				req = secondGenerationWithPrefix(t, first)
			}
			s := &scripted{reply: func(_ int, p Payload) (Summary, error) {
				m := fixtureSemantic(p)
				if req.PreviousSemantic != nil {
					m["user_requests"] = []any{}
				}
				tc.edit(m)
				return Summary{Output: m}, nil
			}}
			e := wantCode(t, compactErr(t, req, s), errcode.InvalidSemantic)
			if e.Message != tc.message {
				t.Fatalf("message %q, want %q", e.Message, tc.message)
			}
		})
	}
	t.Run("byte cap", func(t *testing.T) {
		req := fixtureRequest(t)
		req.Policy.SemanticMaxBytes = 100
		e := wantCode(t, compactErr(t, req, validSummarizer()), errcode.InvalidSemantic)
		if e.Message != "semantic output exceeds the byte limit" {
			t.Fatalf("message %q", e.Message)
		}
	})
}

// secondGenerationWithPrefix is a follow-up request whose prefix is not
// empty, so the summarizer is called with a previous semantic.
func secondGenerationWithPrefix(t *testing.T, first *Result) *Request {
	req := fixtureRequest(t)
	req.RequestID = uuid7(101)
	req.ParentCheckpointID = ptr(first.Checkpoint.CheckpointID)
	req.PreviousSemantic = first.Checkpoint.Semantic
	req.Events = []events.InputEvent{
		event(t, 7, events.RoleAssistant, "earlier work"),
		event(t, 8, events.RoleAssistant, "more work", func(e *events.InputEvent) { e.TokenCount = ptr(int64(500)) }),
		event(t, 9, events.RoleUser, "next"),
		event(t, 10, events.RoleUser, "now"),
	}
	req.ActiveInputEventIDs = nil
	return req
}

func TestLineageUserRequestsSurviveASecondGeneration(t *testing.T) {
	first := mustCompact(t, fixtureRequest(t), validSummarizer())
	req := secondGenerationWithPrefix(t, first)
	s := &scripted{reply: func(_ int, p Payload) (Summary, error) {
		m := p.PreviousSemantic.Map() // carried forward unchanged, new coverage
		m["coverage"] = map[string]any{"first_chat_seq": p.CoveredRange.FirstChatSeq, "last_chat_seq": p.CoveredRange.LastChatSeq}
		return Summary{Output: m}, nil
	}}
	res := mustCompact(t, req, s)
	if len(res.Checkpoint.Semantic.UserRequests) != 1 || s.payloads[0].CoveredRange.FirstChatSeq != 7 {
		t.Fatalf("user requests %v coverage %+v", res.Checkpoint.Semantic.UserRequests, s.payloads[0].CoveredRange)
	}
}

type failingSummarizer struct{ err error }

func (f failingSummarizer) Summarize(context.Context, Payload) (Summary, error) {
	return Summary{}, f.err
}

type panickingSummarizer struct{}

func (panickingSummarizer) Summarize(context.Context, Payload) (Summary, error) { panic("boom") }

func TestSummarizerFailuresAreTyped(t *testing.T) {
	typed := errcode.New(errcode.DeadlineExceeded, "model deadline")
	if err := compactErr(t, fixtureRequest(t), failingSummarizer{typed}); err != typed {
		t.Fatalf("typed error not passed through unchanged: %v", err)
	}
	e := wantCode(t, compactErr(t, fixtureRequest(t), failingSummarizer{errors.New("socket closed")}), errcode.ProviderError)
	if e.Message != "compaction model failed" || e.Unwrap() == nil {
		t.Fatalf("%+v", e)
	}
	e = wantCode(t, compactErr(t, fixtureRequest(t), panickingSummarizer{}), errcode.ProviderError)
	if e.Message != "compaction model raised" {
		t.Fatalf("%+v", e)
	}
	wantCode(t, compactErr(t, fixtureRequest(t), nil), errcode.ProviderError)
}

type panickingRenderer struct{}

func (panickingRenderer) Render(*semantic.Semantic, []events.InputEvent) (Rendered, error) {
	panic("render boom")
}

type failingRenderer struct{}

func (failingRenderer) Render(*semantic.Semantic, []events.InputEvent) (Rendered, error) {
	return Rendered{}, errors.New("template missing")
}

func TestRendererFailuresAreTyped(t *testing.T) {
	renderers["test_panic"], renderers["test_fail"] = panickingRenderer{}, failingRenderer{}
	defer delete(renderers, "test_panic")
	defer delete(renderers, "test_fail")
	for name, message := range map[string]string{"test_panic": "context renderer raised", "test_fail": "context rendering failed"} {
		req := fixtureRequest(t)
		req.Render = name
		e := wantCode(t, compactErr(t, req, validSummarizer()), errcode.RenderError)
		if e.Message != message {
			t.Fatalf("%s: message %q", name, e.Message)
		}
	}
	req := fixtureRequest(t)
	req.Render = "mustache"
	wantCode(t, compactErr(t, req, validSummarizer()), errcode.InvalidRequest)
}

func TestOpenAIChatRendererShapesMessages(t *testing.T) {
	req := fixtureRequest(t)
	req.Render = RenderOpenAIChatV1
	req.RenderedRequestBytes = nil // measure the lane through the renderer
	req.Events[3] = event(t, 4, events.RoleAssistant, "running tests", withTool(map[string]any{"calls": []any{
		map[string]any{"call_id": "call-9", "name": "shell", "arguments": map[string]any{"cmd": "go test"}}}}))
	req.Policy.MinimumTotalReclaimTokens = 1
	res, err := Compact(context.Background(), req, validSummarizer(), fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := openAIChatRenderer{}.Render(res.Checkpoint.Semantic, res.RetainedEvents)
	if err != nil {
		t.Fatal(err)
	}
	v, err := canonical.Decode(rendered.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	messages := v.([]any)
	system := messages[0].(map[string]any)
	if system["role"] != "system" || !strings.HasPrefix(system["content"].(string), checkpointPreamble) {
		t.Fatalf("system message %v", system)
	}
	call := messages[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if call["id"] != "call-9" || call["function"].(map[string]any)["arguments"] != `{"cmd":"go test"}` {
		t.Fatalf("tool call %v", call)
	}
	if rendered.Categories["checkpoint"]+rendered.Categories["history"] != int64(len(rendered.Bytes)) {
		t.Fatalf("categories %v for %d bytes", rendered.Categories, len(rendered.Bytes))
	}
	if res.Checkpoint.TokensBefore <= res.Checkpoint.TokensAfter {
		t.Fatalf("tokens %d -> %d", res.Checkpoint.TokensBefore, res.Checkpoint.TokensAfter)
	}
}

func TestCheckpointHashIgnoresCreatedAt(t *testing.T) {
	a := mustCompact(t, fixtureRequest(t), validSummarizer())
	b, err := Compact(context.Background(), fixtureRequest(t), validSummarizer(), fixedNow.Add(48*3600e9))
	if err != nil {
		t.Fatal(err)
	}
	ha, _ := a.Checkpoint.Hash()
	hb, _ := b.Checkpoint.Hash()
	if ha != hb || !jsonwire.IsHash64(ha) || a.Checkpoint.CreatedAt == b.Checkpoint.CreatedAt {
		t.Fatalf("hashes %s %s", ha, hb)
	}
	m := a.Checkpoint.Map()
	if m["id"] != m["checkpoint_id"] || m["rehydration_state_hash"] != a.Checkpoint.RehydrationState.Hash {
		t.Fatalf("persistence map %v", m)
	}
	if got := a.ArtifactIDs; len(got) != 1 || got[0] != artifactID(1) {
		t.Fatalf("artifact ids %v", got)
	}
}

func TestSecretsNeverEnterACheckpoint(t *testing.T) {
	secret := "sk-proj-" + strings.Repeat("Ab1", 16)
	req := fixtureRequest(t)
	s := &scripted{reply: func(_ int, p Payload) (Summary, error) {
		m := fixtureSemantic(p)
		m["critical_context"] = []any{map[string]any{"text": "the API key is " + secret, "source_event_ids": []any{uuid7(1)}}}
		return Summary{Output: m}, nil
	}}
	res := mustCompact(t, req, s)
	encoded, _ := canonical.Encode(res.Checkpoint.Map())
	if strings.Contains(string(encoded), secret) {
		t.Fatal("a secret reached the checkpoint")
	}
}
