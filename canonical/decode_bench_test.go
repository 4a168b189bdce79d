package canonical

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// requestBody builds a compaction request shaped like the ones the processor
// decodes: a few dozen header fields and n chat events whose content strings
// are most of the bytes (about 37 KB for 24 events). It is marshalled by
// encoding/json, as producers do, so keys arrive sorted and strings plain.
func requestBody(tb testing.TB, n int) []byte {
	tb.Helper()
	events := make([]map[string]any, n)
	for i := range events {
		content := fmt.Sprintf("req-0 turn %d: we decided the deploy must use blue-green releases; ", i+1) +
			strings.Repeat(fmt.Sprintf("detail %d of the investigation into the flaky integration test. ", i), 16)
		provenance := map[string]any{"origin": "direct_user"}
		events[i] = map[string]any{
			"event_id": fmt.Sprintf("req-0-e%03d", i+1), "run_agent_id": "agent-lane", "chat_seq": i + 1,
			"lane_event_ordinal": i + 1, "checkpoint_namespace": "main", "role": []string{"user", "assistant"}[i%2],
			"provenance": provenance, "provenance_sha256": requestHash(tb, provenance),
			"content_hash": requestHash(tb, map[string]any{"content": content}), "content": content,
			"tool": nil, "artifact_ids": []any{}, "truncated": false, "protected": false,
		}
	}
	body, err := json.Marshal(map[string]any{
		"v": 1, "request_id": "req-0", "trigger": "manual", "thread_id": "thread-lane", "run_id": "run-1",
		"root_turn_id": "turn-1", "run_agent_id": "agent-lane", "provider_connection_id": "conn-1",
		"checkpoint_namespace": "main", "destination_identity_hash": strings.Repeat("a", 64),
		"model_profile": map[string]any{
			"context_limit_kind": "separate_input", "max_input_tokens": 40000, "max_output_tokens": 8192,
			"provider_reserved_tokens": 0,
		},
		"policy": map[string]any{
			"recent_tail_min_tokens": 1000, "recent_tail_max_tokens": 2000,
			"summary_output_min_tokens": 1024, "summary_output_max_tokens": 4096,
			"minimum_total_reclaim_tokens": 1000, "minimum_prune_reclaim_tokens": 1000,
		},
		"rehydration_state": map[string]any{}, "events": events, "parent_checkpoint_id": nil,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

func requestHash(tb testing.TB, v any) string {
	tb.Helper()
	h, err := Hash(v)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func TestRequestBodySize(t *testing.T) {
	if n := len(requestBody(t, 24)); n < 33_000 || n > 41_000 {
		t.Fatalf("benchmark request is %d bytes; want about 37 KB", n)
	}
}

// BenchmarkDecodeRequest decodes one realistic compaction request, the
// processor's per-message use of Decode.
func BenchmarkDecodeRequest(b *testing.B) {
	body := requestBody(b, 24)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}
