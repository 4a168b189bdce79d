package lanegen

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/engine"
)

var uuid7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestLaneEventsAreValidWireEvents(t *testing.T) {
	for _, o := range []Options{{Events: 1}, {Events: 57, Seed: 3}, {Events: 400, Seed: 99, FirstChatSeq: 40, FirstOrdinal: 12}} {
		lane := Lane(o)
		if len(lane) != o.Events {
			t.Fatalf("Events=%d: got %d events", o.Events, len(lane))
		}
		checkLane(t, lane)
	}
}

func checkLane(t *testing.T, lane []events.InputEvent) {
	t.Helper()
	seen := map[string]bool{}
	var prevSeq, prevOrd int64
	for i, e := range lane {
		if !uuid7.MatchString(e.EventID) || seen[e.EventID] {
			t.Fatalf("event %d: id %q not a fresh UUIDv7", i, e.EventID)
		}
		seen[e.EventID] = true
		if i > 0 && (e.ChatSeq <= prevSeq || e.LaneEventOrdinal <= prevOrd) {
			t.Fatalf("event %d: chat_seq %d / ordinal %d not increasing", i, e.ChatSeq, e.LaneEventOrdinal)
		}
		prevSeq, prevOrd = e.ChatSeq, e.LaneEventOrdinal
		if err := e.Validate(); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if h, _ := canonical.Hash(e.Provenance); h != e.ProvenanceSHA256 {
			t.Fatalf("event %d: provenance hash mismatch", i)
		}
		payload := map[string]any{"content": *e.Content, "tool": mapOrNil(e.Tool), "artifact_ids": stringsOrEmpty(e.ArtifactIDs), "truncated": e.Truncated}
		if h, _ := canonical.Hash(payload); h != e.ContentHash {
			t.Fatalf("event %d: content hash mismatch", i)
		}
		if e.Role == events.RoleTool && len(*e.Content) > projectionThreshold && len(e.ArtifactIDs) == 0 {
			t.Fatalf("event %d: %d-byte tool output without artifact", i, len(*e.Content))
		}
		for _, a := range e.ArtifactIDs {
			if !uuid7.MatchString(a) || seen[a] {
				t.Fatalf("event %d: artifact id %v not a fresh UUIDv7", i, a)
			}
			seen[a] = true
		}
	}
}

func mapOrNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

func stringsOrEmpty(list []string) []any {
	out := []any{}
	for _, s := range list {
		out = append(out, s)
	}
	return out
}

func TestToolResultsAnswerEarlierCalls(t *testing.T) {
	lane := Lane(Options{Events: 300, Seed: 5})
	issued := map[string]string{}
	for i, e := range lane {
		switch e.Role {
		case events.RoleAssistant:
			calls, _ := e.Tool["calls"].([]any)
			for _, c := range calls {
				c := c.(map[string]any)
				issued[c["call_id"].(string)] = c["name"].(string)
			}
		case events.RoleTool:
			id, _ := e.Tool["call_id"].(string)
			if name, ok := issued[id]; !ok || name != e.Tool["name"] {
				t.Fatalf("event %d: result for unknown call %q", i, id)
			}
			if s := e.Tool["status"]; s != "success" && s != "error" {
				t.Fatalf("event %d: status %v", i, s)
			}
		}
	}
}

func TestLaneIsDeterministicPerSeed(t *testing.T) {
	a := RequestJSON(RequestOptions{Lane: Options{Events: 120, Seed: 7}})
	b := RequestJSON(RequestOptions{Lane: Options{Events: 120, Seed: 7}})
	c := RequestJSON(RequestOptions{Lane: Options{Events: 120, Seed: 8}})
	if !bytes.Equal(a, b) {
		t.Fatal("same options gave different requests")
	}
	if bytes.Equal(a, c) {
		t.Fatal("different seeds gave the same request")
	}
}

func TestLaneContentIsRealistic(t *testing.T) {
	lane := Lane(Options{Events: 1000, Seed: 11})
	var all strings.Builder
	large, errs := 0, 0
	for _, e := range lane {
		s := *e.Content
		all.WriteString(s)
		all.WriteByte('\n')
		if len(s) > projectionThreshold {
			large++
		}
		if e.Tool["status"] == "error" {
			errs++
		}
	}
	text := all.String()
	for _, want := range []string{"must", "Never", "Always", "必须", "不要", "I'll use", "Decided", "go test ./", "git diff", "https://", ".go", "sk-proj-", "--- FAIL", "ok  \t", "Actually"} {
		if !strings.Contains(text, want) {
			t.Errorf("lane text lacks %q", want)
		}
	}
	if large < 10 || errs < 10 {
		t.Errorf("got %d large tool outputs and %d failed tool results, want at least 10 each", large, errs)
	}
}

func TestLaneSizes(t *testing.T) {
	for _, n := range []int{100, 1000, 10000} {
		lane := Lane(Options{Events: n, Seed: 1})
		bytes := RenderedBytes(lane, nil)
		t.Logf("%5d events: %8d rendered bytes (%.0f per event)", n, bytes, float64(bytes)/float64(n))
		if per := bytes / int64(n); per < 200 || per > 3000 {
			t.Errorf("%d events: %d bytes per event, want a realistic 200..3000", n, per)
		}
	}
	if n := len(Lane(Options{Events: MaxEvents + 5})); n != MaxEvents {
		t.Errorf("Events above the maximum gave %d events, want %d", n, MaxEvents)
	}
}

func TestRequestIsSizedForEffectiveManualCompaction(t *testing.T) {
	req := Request(RequestOptions{Lane: Options{Events: 500, Seed: 2}})
	var wire map[string]any
	if err := json.Unmarshal(Encode(req), &wire); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"v", "request_id", "trigger", "thread_id", "run_id", "root_turn_id", "run_agent_id", "provider_connection_id", "checkpoint_namespace", "destination_identity_hash", "model_profile", "events", "rehydration_state", "policy"} {
		if _, ok := wire[k]; !ok {
			t.Errorf("request lacks %q", k)
		}
	}
	rendered := RenderedBytes(req.Events, nil)
	limit := *req.ModelProfile.MaxInputTokens
	if fill := float64(rendered) / float64(limit); fill < 0.85 || fill > 0.95 {
		t.Errorf("lane fills %.2f of the window, want about 0.9", fill)
	}
	var p thresholds
	if err := json.Unmarshal(req.Policy, &p); err != nil {
		t.Fatal(err)
	}
	if p.MinimumPruneReclaimTokens <= rendered {
		t.Errorf("prune threshold %d would allow pruning a %d-byte lane", p.MinimumPruneReclaimTokens, rendered)
	}
	if len(req.ActiveInputEventIDs) != 1 {
		t.Fatalf("active input %v, want the newest user event", req.ActiveInputEventIDs)
	}
}

// RenderedBytes measures what the engine renders: the canonical encoding
// of every event's 13-member view, members at their zero value included.
func TestRenderedBytesIsTheEngineRendering(t *testing.T) {
	lane := Lane(Options{Events: 80, Seed: 6})
	req, err := engine.DecodeRequest(RequestJSON(RequestOptions{Events: lane}))
	if err != nil {
		t.Fatal(err)
	}
	views := make([]any, len(req.Events))
	for i, e := range req.Events {
		views[i] = engine.View(e)
	}
	want, err := canonical.EncodedSize(map[string]any{"events": views, "semantic": nil})
	if err != nil {
		t.Fatal(err)
	}
	if got := RenderedBytes(lane, nil); got != int64(want) {
		t.Fatalf("RenderedBytes = %d, the engine's rendering has %d bytes", got, want)
	}
}

func BenchmarkLane10000(b *testing.B) {
	for b.Loop() {
		Lane(Options{Events: 10000, Seed: 1})
	}
}

func TestEngineAcceptsGeneratedRequests(t *testing.T) {
	for _, o := range []RequestOptions{
		{Lane: Options{Events: 1}},
		{Lane: Options{Events: 60, Seed: 4, Namespace: "ns", RunAgentID: "agent-7"}},
		{Lane: Options{Events: 2000, Seed: 8}, Fill: 2, Focus: "the retry work"},
		{Lane: Options{Events: 300, Seed: 9, LargeToolEvery: 2, SecretEvery: 1, ChineseEvery: 1}, AllowPrune: true},
	} {
		req, err := engine.DecodeRequest(RequestJSON(o))
		if err != nil {
			t.Fatalf("%+v: engine rejects the request: %v", o.Lane, err)
		}
		if len(req.Events) != max(o.Lane.Events, 1) {
			t.Fatalf("decoded %d events, want %d", len(req.Events), o.Lane.Events)
		}
	}
}

func TestHostileOptionsStillGiveAValidLane(t *testing.T) {
	lane := Lane(Options{Events: 30, Seed: 1, ThreadID: "\xff", RunAgentID: "\xfe", Namespace: "\xfd", LargeToolEvery: -1, SecretEvery: -1, ChineseEvery: -1, FirstChatSeq: -5})
	checkLane(t, lane)
	if _, err := engine.DecodeRequest(RequestJSON(RequestOptions{Events: lane})); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a non-JSON policy value encoded")
		}
	}()
	Request(RequestOptions{Events: lane, Policy: map[string]any{"x": func() {}}})
}
