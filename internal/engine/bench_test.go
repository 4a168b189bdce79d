package engine

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/jsonwire"
)

// benchmarkCompact compacts a realistic coding-agent lane of n events
// (tool calls, failing and passing tests, a large artifact-backed log every
// 25 steps) whose prefix needs two summary calls, with the extractive test
// summarizer standing in for the model.
func benchmarkCompact(b *testing.B, n int, maxInput int64) {
	req := laneRequest(b, "0192b6e4-0000-7000-8000-00000000b000", codingLane(b, n, 25), maxInput)
	if res, err := Compact(context.Background(), req, extractive{}, fixedNow); err != nil || res.Status != events.StatusCompacted {
		b.Fatalf("setup: %v %v", res, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPUTime()
	for i := 0; i < b.N; i++ {
		if _, err := Compact(context.Background(), req, extractive{}, fixedNow); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPUTime()-cpu)/float64(b.N), "cpu-ns/op")
}

func BenchmarkCompact1000(b *testing.B)  { benchmarkCompact(b, 1_000, 400_000) }
func BenchmarkCompact10000(b *testing.B) { benchmarkCompact(b, 10_000, 4_000_000) }

func TestBenchmarkLanesNeedTwoSummaryCalls(t *testing.T) {
	for _, tc := range []struct {
		n        int
		maxInput int64
	}{{1_000, 400_000}, {10_000, 4_000_000}} {
		s := &scripted{reply: func(_ int, p Payload) (Summary, error) { return extractive{}.Summarize(context.Background(), p) }}
		req := laneRequest(t, "0192b6e4-0000-7000-8000-00000000b000", codingLane(t, tc.n, 25), tc.maxInput)
		res := mustCompact(t, req, s)
		if res.Status != events.StatusCompacted || s.calls() != 2 || len(res.Checkpoint.ProjectionManifest) == 0 {
			t.Fatalf("%d events: status %s calls %d manifest %d", tc.n, res.Status, s.calls(), len(res.Checkpoint.ProjectionManifest))
		}
		t.Logf("%d events: before %d after %d, %d projected", len(req.Events), res.TokensBefore, res.TokensAfter, len(res.Checkpoint.ProjectionManifest))
	}
}

// BenchmarkContentHashRatio is the canonical-hash throughput of the path
// the engine hashes most: the content hash of every event of a request
// (events.ContentHash over a 1 000-event coding lane). Like canonical's
// BenchmarkHashRatio it alternates the canonical hash and crypto/sha256
// over the same encoded bytes in one loop and reports hash_vs_sha256 (goal
// >= 0.5).
func BenchmarkContentHashRatio(b *testing.B) {
	laneEvents := codingLane(b, 1_000, 25)
	encoded := make([][]byte, len(laneEvents))
	for i, e := range laneEvents {
		var err error
		payload := map[string]any{"artifact_ids": jsonwire.StringsToAny(stringsOrEmpty(e.ArtifactIDs)), "content": stringOrNil(e.Content),
			"tool": mapOrNil(e.Tool), "truncated": e.Truncated}
		if encoded[i], err = canonical.Encode(payload); err != nil {
			b.Fatal(err)
		}
	}
	var hashTime, shaTime time.Duration
	for b.Loop() {
		start := time.Now()
		for _, e := range laneEvents {
			if _, err := events.ContentHash(e.Content, e.Tool, e.ArtifactIDs, e.Truncated); err != nil {
				b.Fatal(err)
			}
		}
		mid := time.Now()
		for _, enc := range encoded {
			sha256.Sum256(enc)
		}
		hashTime += mid.Sub(start)
		shaTime += time.Since(mid)
	}
	b.ReportMetric(float64(shaTime)/float64(hashTime), "hash_vs_sha256")
}

// BenchmarkDecodeRequest decodes and validates a request's JSON, as every
// delivery does: a one-event lane (mostly the request's own members) and a
// 100-event coding lane.
func BenchmarkDecodeRequest(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			req := laneRequest(b, "0192b6e4-0000-7000-8000-00000000b000", codingLane(b, n, 25), 400_000)
			req.Focus, req.Scope, req.Harvest = ptr("tests"), &events.Scope{Kind: "project", ID: "cairn"}, ptr(true)
			data := fixtureJSON(b, req, nil)
			if _, err := DecodeRequest(data); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := DecodeRequest(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
