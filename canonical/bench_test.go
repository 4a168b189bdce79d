package canonical

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"
)

// prose and code are typical event content: English with a newline per
// paragraph, and indented Go with quotes and a newline per line.
const (
	prose = "Step %d: I looked at the failing test in internal/engine/cut_test.go. The cut point moves back when the retained tool result's call_id matches an assistant call, so the tail keeps the pair together and the summary never splits them.\n"
	code  = "func cut(events []Event) int {\n    for i := len(events) - 1; i >= 0; i-- {\n        if events[i].Role == \"tool\" {\n            continue\n        }\n        return i\n    }\n    return 0\n}\n"
)

// eventLike builds a ~100 KB value shaped like a lane of compaction events.
func eventLike() map[string]any {
	events := make([]any, 0, 48)
	for i := range 48 {
		content := strings.Repeat(fmt.Sprintf(prose+code, i), 4)
		events = append(events, map[string]any{
			"event_id":             fmt.Sprintf("0190f1e2-7c3a-7b4d-8e5f-%012d", i),
			"chat_seq":             int64(i + 1),
			"run_agent_id":         "agent-root",
			"checkpoint_namespace": "root",
			"lane_event_ordinal":   int64(i),
			"role":                 []string{"user", "assistant", "tool"}[i%3],
			"provenance":           map[string]any{"origin": "direct_user"},
			"provenance_sha256":    strings.Repeat("ab", 32),
			"content":              content,
			"tool":                 map[string]any{"call_id": fmt.Sprintf("call-%d", i), "name": "shell", "status": "success"},
			"artifact_ids":         []string{fmt.Sprintf("artifact-%d", i)},
			"truncated":            false,
			"content_hash":         strings.Repeat("cd", 32),
		})
	}
	return map[string]any{"events": events, "semantic": nil}
}

func BenchmarkHash(b *testing.B) {
	v := eventLike()
	n, err := EncodedSize(v)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Hash(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSHA256Raw(b *testing.B) {
	enc, err := Encode(eventLike())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		sha256.Sum256(enc)
	}
}

// BenchmarkHashRatio alternates canonical Hash and crypto/sha256 over the
// same value in one loop, so load from other processes affects both alike,
// and reports hash_vs_sha256: Hash throughput as a fraction of raw SHA-256
// throughput over the encoded bytes (the goal is >= 0.5).
func BenchmarkHashRatio(b *testing.B) {
	v := eventLike()
	enc, err := Encode(v)
	if err != nil {
		b.Fatal(err)
	}
	var hashTime, shaTime time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := Hash(v); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		sha256.Sum256(enc)
		hashTime += mid.Sub(start)
		shaTime += time.Since(mid)
	}
	b.ReportMetric(float64(shaTime)/float64(hashTime), "hash_vs_sha256")
}

func BenchmarkDecode(b *testing.B) {
	enc, err := Encode(eventLike())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func TestEventLikeSize(t *testing.T) {
	n, err := EncodedSize(eventLike())
	if err != nil || n < 90_000 || n > 130_000 {
		t.Fatalf("benchmark value is %d bytes (%v); want about 100 KB", n, err)
	}
}

// BenchmarkEncode measures the encoding alone, without hashing.
func BenchmarkEncode(b *testing.B) {
	v := eventLike()
	n, err := EncodedSize(v)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodedSize(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeString measures the string escaper alone on event content.
func BenchmarkEncodeString(b *testing.B) {
	s := strings.Repeat(fmt.Sprintf(prose+code, 7), 4)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodedSize(s); err != nil {
			b.Fatal(err)
		}
	}
}
