package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/semantic"
)

// Conformance cases CT-01..CT-19.

func TestCT01PortableCompactionKeepsSafeTail(t *testing.T) {
	req := fixtureRequest(t)
	res := mustCompact(t, req, validSummarizer())
	cp := res.Checkpoint
	if res.Status != events.StatusCompacted || cp.CheckpointID != req.RequestID {
		t.Fatalf("status %s checkpoint %s", res.Status, cp.CheckpointID)
	}
	if res.TokensAfter >= res.TokensBefore {
		t.Fatalf("tokens_after %d not below tokens_before %d", res.TokensAfter, res.TokensBefore)
	}
	if cp.Representation != events.RepresentationPortable || cp.Map()["accounting_method"] != events.MethodConservativeUTF8 {
		t.Fatalf("representation %s method %v", cp.Representation, cp.Map()["accounting_method"])
	}
	if cp.Semantic == nil || res.RetainedEvents[0].Role == events.RoleTool {
		t.Fatalf("semantic %v first retained role %s", cp.Semantic, res.RetainedEvents[0].Role)
	}
	if cp.SummaryCoverageLastChatSeq == nil || *cp.SummaryCoverageLastChatSeq != 2 {
		t.Fatalf("summary coverage %v, want 2", cp.SummaryCoverageLastChatSeq)
	}
	if got := cp.RetainedEventIDs; len(got) != 4 || got[0] != uuid7(3) {
		t.Fatalf("retained %v", got)
	}
	if cp.CreatedAt != "2026-09-02T10:11:12Z" {
		t.Fatalf("created_at %s", cp.CreatedAt)
	}
	usage, _ := canonical.Encode(res.ProviderUsage)
	if string(usage) != `[{"input_tokens":100,"output_tokens":20}]` {
		t.Fatalf("usage %s", usage)
	}
}

func TestCT02ProviderUsageFloorsOnlyTheMeasuredRequest(t *testing.T) {
	req := fixtureRequest(t)
	req.Accounting.ReportedInputTokens = 19_500
	res := mustCompact(t, req, validSummarizer())
	if res.Status != events.StatusCompacted || res.TokensBefore != 19_500 || res.TokensAfter >= res.TokensBefore {
		t.Fatalf("status %s before %d after %d", res.Status, res.TokensBefore, res.TokensAfter)
	}
}

func TestCT03InvalidOutputIsRepairedOnceWithoutMutatingEvents(t *testing.T) {
	req := fixtureRequest(t)
	original, _ := canonical.Encode(eventMaps(req.Events))
	s := &scripted{reply: func(n int, p Payload) (Summary, error) {
		if n == 0 {
			return Summary{Output: map[string]any{"unexpected": true}}, nil
		}
		return Summary{Output: fixtureSemantic(p)}, nil
	}}
	res := mustCompact(t, req, s)
	if res.Status != events.StatusCompacted || s.calls() != 2 {
		t.Fatalf("status %s calls %d", res.Status, s.calls())
	}
	if s.payloads[1].Repair == nil || s.payloads[0].Repair != nil {
		t.Fatalf("repair payloads %+v / %+v", s.payloads[0].Repair, s.payloads[1].Repair)
	}
	if s.payloads[1].Repair.Error.Type != errcode.InvalidSemantic {
		t.Fatalf("repair error %+v", s.payloads[1].Repair.Error)
	}
	after, _ := canonical.Encode(eventMaps(req.Events))
	if string(after) != string(original) {
		t.Fatal("source events were mutated")
	}
	usage, _ := canonical.Encode(res.ProviderUsage)
	if string(usage) != `[[]]` {
		t.Fatalf("usage of a repaired chunk without usage = %s, want [[]]", usage)
	}
}

func eventMaps(laneEvents []events.InputEvent) []any {
	out := make([]any, len(laneEvents))
	for i, e := range laneEvents {
		out[i] = e.Map()
	}
	return out
}

// secondGeneration builds CT-04's follow-up request on top of first.
func secondGeneration(t *testing.T, first *Result) *Request {
	req := fixtureRequest(t)
	req.RequestID = uuid7(101)
	req.ParentCheckpointID = ptr(first.Checkpoint.CheckpointID)
	req.PreviousSemantic = first.Checkpoint.Semantic
	req.Events = []events.InputEvent{
		event(t, 7, events.RoleUser, "now add the retry"),
		event(t, 8, events.RoleTool, strings.Repeat("y", 9000),
			withTool(map[string]any{"call_id": "call-2", "name": "test", "status": "success"}),
			withArtifacts(artifactID(2))),
		event(t, 9, events.RoleUser, "and document it"),
		event(t, 10, events.RoleAssistant, "done"),
	}
	req.ActiveInputEventIDs = []string{uuid7(10)}
	return req
}

func TestCT04LaterCompactionKeepsParentAndLineage(t *testing.T) {
	first := mustCompact(t, fixtureRequest(t), validSummarizer())
	firstMap, _ := canonical.Encode(first.Checkpoint.Map())
	s := validSummarizer()
	second := mustCompact(t, secondGeneration(t, first), s)
	if second.Status != events.StatusCompacted {
		t.Fatalf("status %s", second.Status)
	}
	if p := second.Checkpoint.ParentCheckpointID; p == nil || *p != first.Checkpoint.CheckpointID {
		t.Fatalf("parent %v", p)
	}
	// The prefix is empty (event 7 is one of the last two user events), so
	// the previous semantic is reused without a model call.
	if s.calls() != 0 || second.Checkpoint.Semantic.Coverage != first.Checkpoint.Semantic.Coverage {
		t.Fatalf("calls %d coverage %+v", s.calls(), second.Checkpoint.Semantic.Coverage)
	}
	if again, _ := canonical.Encode(first.Checkpoint.Map()); string(again) != string(firstMap) {
		t.Fatal("first checkpoint changed")
	}
}

func TestCT05AutoBelowTriggerIsSkipped(t *testing.T) {
	req := fixtureRequest(t)
	req.Trigger = events.TriggerAuto
	req.RenderedRequestBytes = ptr(int64(len("small")))
	s := validSummarizer()
	res := mustCompact(t, req, s)
	if res.Status != StatusSkipped || res.Suppression != events.SkipBelowTrigger || s.calls() != 0 {
		t.Fatalf("status %s suppression %s calls %d", res.Status, res.Suppression, s.calls())
	}
	if res.Map()["provider_usage"].(map[string]any)["suppression"] != events.SkipBelowTrigger {
		t.Fatalf("provider_usage %v", res.Map()["provider_usage"])
	}
	if res.TokensAfter != res.TokensBefore || res.TokensReclaimed != 0 || res.RetainedEventCount != 6 {
		t.Fatalf("skipped result %+v", res)
	}
}

func TestCT06StructuralPressureIgnoresTheTrigger(t *testing.T) {
	req := fixtureRequest(t)
	req.Trigger = events.TriggerAuto
	req.StructuralPressure = true
	req.RenderedRequestBytes = ptr(int64(10_000))
	s := validSummarizer()
	res := mustCompact(t, req, s)
	if res.Status != events.StatusCompacted || s.calls() < 1 {
		t.Fatalf("status %s calls %d", res.Status, s.calls())
	}
}

func TestCT07ArtifactCitationsNeedHostProvenance(t *testing.T) {
	s := &scripted{reply: func(_ int, p Payload) (Summary, error) {
		out := fixtureSemantic(p)
		out["artifact_refs"] = []any{map[string]any{
			"artifact_id": artifactID(1), "purpose": "test output", "source_event_ids": []any{uuid7(1)},
		}}
		return Summary{Output: out}, nil
	}}
	_, err := Compact(context.Background(), fixtureRequest(t), s, fixedNow)
	e := wantCode(t, err, errcode.InvalidSemantic)
	if !strings.Contains(e.Message, "host source provenance") {
		t.Fatalf("message %q", e.Message)
	}
}

func TestCT08LargeProjectionNeedsDurableArtifact(t *testing.T) {
	req := fixtureRequest(t)
	req.Events[1] = event(t, 2, events.RoleTool, strings.Repeat("t", 6000),
		withTool(map[string]any{"call_id": "call-1", "name": "test", "status": "success"}))
	s := validSummarizer()
	_, err := Compact(context.Background(), req, s, fixedNow)
	e := wantCode(t, err, errcode.MissingArtifact)
	if e.Details["event_id"] != uuid7(2) || s.calls() != 0 {
		t.Fatalf("details %v calls %d", e.Details, s.calls())
	}
}

func TestCT09StateAcceptsPersistedJSON(t *testing.T) {
	var s events.AntiThrash
	err := s.UnmarshalJSON([]byte(`{"successful_auto_compactions":1,"last_compaction_lane_event_ordinal":null,
		"last_compaction_tokens_after":null,"new_tokens_since_compaction":0,"overflow_retry_used":true,
		"consecutive_ineffective_compactions":0,"cancellation_pending":false,"accounting_method":null,
		"accounting_version":null,"accounting_profile_hash":null}`))
	if err != nil || s.SuccessfulAutoCompactions != 1 || !s.OverflowRetryUsed || s.AccountingMethod != nil {
		t.Fatalf("state %+v err %v", s, err)
	}
	round, _ := s.MarshalJSON()
	var again events.AntiThrash
	if err := again.UnmarshalJSON(round); err != nil || again.SuccessfulAutoCompactions != 1 || !again.OverflowRetryUsed {
		t.Fatalf("round trip %s: %+v %v", round, again, err)
	}
}

func TestCT10PolicyAcceptsPersistedJSON(t *testing.T) {
	persisted, _ := canonical.Encode(mustPlain(events.DefaultPolicy()))
	var p events.Policy
	if err := p.UnmarshalJSON(persisted); err != nil || p.Mode != events.ModePortable || p.Model != "current_task_model" {
		t.Fatalf("policy %+v err %v", p, err)
	}
	for _, bad := range []string{`{"mode":"detached"}`, `{"model":null}`, `{"model":[]}`} {
		var q events.Policy
		wantCode(t, q.UnmarshalJSON([]byte(bad)), errcode.InvalidPolicy)
	}
	bad := events.DefaultPolicy()
	bad.Model = ""
	wantCode(t, bad.Validate(), errcode.InvalidPolicy)
}

func TestCT11ClosedValuesRejectDuplicateFields(t *testing.T) {
	var p events.Policy
	wantCode(t, p.UnmarshalJSON([]byte(`{"version":1,"version":1}`)), errcode.InvalidPolicy)
	var s events.AntiThrash
	wantCode(t, s.UnmarshalJSON([]byte(`{"overflow_retry_used":true,"overflow_retry_used":true}`)), errcode.InvalidState)
	var e events.InputEvent
	wantCode(t, e.UnmarshalJSON([]byte(`{"event_id":"a","event_id":"a"}`)), errcode.InvalidEvent)
	_, err := decodeOutput(`{"version":1,"version":1}`)
	wantCode(t, err, errcode.InvalidSemantic)
}

func TestCT12RequestsRejectBadFocusAndDuplicateOrdinals(t *testing.T) {
	data := fixtureJSON(t, fixtureRequest(t), func(m map[string]any) { m["focus"] = int64(7) })
	_, err := DecodeRequest(data)
	wantCode(t, err, errcode.InvalidRequest)

	req := fixtureRequest(t)
	req.Events[1] = event(t, 2, events.RoleTool, strings.Repeat("t", 6000), withArtifacts(artifactID(1)),
		func(e *events.InputEvent) { e.LaneEventOrdinal = 1 })
	wantCode(t, req.Validate(), errcode.InvalidRequest)
}

func TestCT13StateAdvancesAutomaticAndOverflowEvidence(t *testing.T) {
	s, err := events.AntiThrash{}.ObserveNewTokens(12_000)
	if err != nil || s.NewTokensSinceCompaction != 12_000 {
		t.Fatalf("observe: %+v %v", s, err)
	}
	s, err = s.RecordSuccess(events.TriggerAuto, 9, 20_000)
	if err != nil || s.SuccessfulAutoCompactions != 1 || s.NewTokensSinceCompaction != 0 || *s.LastCompactionLaneEventOrdinal != 9 {
		t.Fatalf("auto success: %+v %v", s, err)
	}
	s, err = s.RecordSuccess(events.TriggerOverflow, 12, 18_000)
	if err != nil || !s.OverflowRetryUsed || s.SuccessfulAutoCompactions != 1 || *s.LastCompactionTokensAfter != 18_000 {
		t.Fatalf("overflow success: %+v %v", s, err)
	}
	_, err = s.RecordSuccess("sometimes", 1, 1)
	wantCode(t, err, errcode.InvalidState)
	_, err = s.ObserveNewTokens(-1)
	wantCode(t, err, errcode.InvalidState)
}

func TestCT14IdentityChangeResetsOnlyUnitDependentState(t *testing.T) {
	s := events.AntiThrash{
		SuccessfulAutoCompactions: 2, LastCompactionLaneEventOrdinal: ptr(int64(9)), LastCompactionTokensAfter: ptr(int64(100)),
		NewTokensSinceCompaction: 50, OverflowRetryUsed: true, ConsecutiveIneffectiveCompactions: 3, CancellationPending: true,
		AccountingMethod: ptr(events.MethodConservativeUTF8), AccountingVersion: ptr(int64(1)), AccountingProfileHash: ptr(strings.Repeat("a", 64)),
	}
	same, err := s.RebaseAccounting(events.AccountingIdentity{Method: events.MethodConservativeUTF8, Version: 1, ProfileHash: ptr(strings.Repeat("a", 64))})
	if err != nil || same.NewTokensSinceCompaction != 50 {
		t.Fatalf("same identity changed the state: %+v %v", same, err)
	}
	r, err := s.RebaseAccounting(events.AccountingIdentity{Method: events.MethodLocalTokenizer, Version: 1, ProfileHash: ptr(strings.Repeat("b", 64))})
	if err != nil {
		t.Fatal(err)
	}
	if r.LastCompactionTokensAfter != nil || r.LastCompactionLaneEventOrdinal != nil || r.NewTokensSinceCompaction != 0 || r.ConsecutiveIneffectiveCompactions != 0 {
		t.Fatalf("unit-dependent fields kept: %+v", r)
	}
	if r.SuccessfulAutoCompactions != 2 || !r.OverflowRetryUsed || !r.CancellationPending {
		t.Fatalf("unit-independent fields lost: %+v", r)
	}
	_, err = s.RebaseAccounting(events.AccountingIdentity{Method: "untrusted_counter", Version: 1})
	wantCode(t, err, errcode.InvalidState)
}

func TestCT15RebaseAcceptsPersistedStringMethod(t *testing.T) {
	r, err := events.AntiThrash{}.RebaseAccounting(events.AccountingIdentity{Method: "local_tokenizer_v1", Version: 1, ProfileHash: ptr(strings.Repeat("c", 64))})
	if err != nil || *r.AccountingMethod != events.MethodLocalTokenizer || *r.AccountingVersion != 1 || *r.AccountingProfileHash != strings.Repeat("c", 64) {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestCT16StateRestoresAccountingIdentity(t *testing.T) {
	s, err := events.DecodeState(map[string]any{"accounting_method": "local_tokenizer_v1", "accounting_version": int64(1), "accounting_profile_hash": nil})
	if err != nil || *s.AccountingMethod != events.MethodLocalTokenizer {
		t.Fatalf("%+v %v", s, err)
	}
	_, err = events.DecodeState(map[string]any{"accounting_method": "untrusted_counter", "accounting_version": int64(1)})
	wantCode(t, err, errcode.InvalidState)
}

func TestCT17StateAcceptsDeltaV2Identity(t *testing.T) {
	s, err := events.DecodeState(map[string]any{"accounting_method": "reported_usage_delta_v2", "accounting_version": int64(2),
		"accounting_profile_hash": strings.Repeat("d", 64)})
	if err != nil || *s.AccountingVersion != 2 {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestCT18ProjectionsReplayAndRejectTampering(t *testing.T) {
	raw := fixtureEvents(t)
	projected, manifest, err := projectPrefix(raw)
	if err != nil || len(manifest) != 1 {
		t.Fatalf("manifest %v err %v", manifest, err)
	}
	tool := projected[1]
	if tool.Content != nil || !tool.Truncated || tool.TokenCount != nil {
		t.Fatalf("projected tool event %+v", tool)
	}
	replayed, err := Replay(raw, manifest)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := canonical.Encode(eventMaps(projected))
	got, _ := canonical.Encode(eventMaps(replayed))
	if string(want) != string(got) {
		t.Fatal("replay does not reproduce the projection")
	}
	tampered := append([]events.InputEvent(nil), raw...)
	tampered[1].ContentHash = strings.Repeat("f", 64)
	_, err = Replay(tampered, manifest)
	wantCode(t, err, errcode.InvalidProjection)
}

func TestCT19SemanticSchemaIsClosed(t *testing.T) {
	schema := semantic.JSONSchema(semantic.DefaultBounds)
	if schema["additionalProperties"] != false {
		t.Fatalf("additionalProperties %v", schema["additionalProperties"])
	}
	required, _ := canonical.Encode(schema["required"])
	if string(required) != `["version","objective","user_requests","constraints","decisions","progress","critical_context","errors","artifact_refs","coverage"]` {
		t.Fatalf("required %s", required)
	}
	cc := schema["properties"].(map[string]any)["critical_context"].(map[string]any)
	if n, _ := canonical.Int(cc["maxItems"]); n != 128 {
		t.Fatalf("critical_context.maxItems %v", cc["maxItems"])
	}
}

// EncodeAndHash is canonical.Encode of the persistence map and Hash, from
// one encoding.
func TestCheckpointEncodeAndHash(t *testing.T) {
	first := mustCompact(t, fixtureRequest(t), validSummarizer())
	for _, cp := range []*events.Checkpoint{first.Checkpoint, mustCompact(t, secondGeneration(t, first), validSummarizer()).Checkpoint} {
		body, h, err := cp.EncodeAndHash()
		if err != nil {
			t.Fatal(err)
		}
		wantBody, err := canonical.Encode(cp.Map())
		if err != nil {
			t.Fatal(err)
		}
		wantHash, err := cp.Hash()
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != string(wantBody) || h != wantHash {
			t.Fatalf("got %s %s\nwant %s %s", body, h, wantBody, wantHash)
		}
	}
}

// The persisted state is canonical JSON of every field, nulls included:
// lane heads store these bytes, so they must not change.
func TestStatePersistedBytes(t *testing.T) {
	full := events.AntiThrash{
		SuccessfulAutoCompactions: 2, LastCompactionLaneEventOrdinal: ptr(int64(40)), LastCompactionTokensAfter: ptr(int64(9000)),
		NewTokensSinceCompaction: 12, OverflowRetryUsed: true, ConsecutiveIneffectiveCompactions: 1, CancellationPending: true,
		AccountingMethod: ptr(events.MethodLocalTokenizer), AccountingVersion: ptr(int64(1)), AccountingProfileHash: ptr(strings.Repeat("c", 64)),
	}
	for _, c := range []struct {
		state events.AntiThrash
		want  string
	}{
		{events.AntiThrash{}, `{"accounting_method":null,"accounting_profile_hash":null,"accounting_version":null,"cancellation_pending":false,` +
			`"consecutive_ineffective_compactions":0,"last_compaction_lane_event_ordinal":null,"last_compaction_tokens_after":null,` +
			`"new_tokens_since_compaction":0,"overflow_retry_used":false,"successful_auto_compactions":0}`},
		{full, `{"accounting_method":"local_tokenizer_v1","accounting_profile_hash":"` + strings.Repeat("c", 64) + `",` +
			`"accounting_version":1,"cancellation_pending":true,"consecutive_ineffective_compactions":1,` +
			`"last_compaction_lane_event_ordinal":40,"last_compaction_tokens_after":9000,"new_tokens_since_compaction":12,` +
			`"overflow_retry_used":true,"successful_auto_compactions":2}`},
	} {
		got, err := json.Marshal(c.state)
		if err != nil || string(got) != c.want {
			t.Errorf("json.Marshal(state) = %s, %v\nwant %s", got, err, c.want)
		}
	}
}
