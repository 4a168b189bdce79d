package engine

import (
	"context"
	"testing"
)

// benchmarkCompact compacts a realistic coding-agent lane of n events
// (tool calls, failing and passing tests, a large artifact-backed log every
// 25 steps) whose prefix needs two summary calls, with the extractive test
// summarizer standing in for the model.
func benchmarkCompact(b *testing.B, n int, maxInput int64) {
	req := laneRequest(b, "0192b6e4-0000-7000-8000-00000000b000", codingLane(b, n, 25), maxInput)
	if res, err := Compact(context.Background(), req, extractive{}, fixedNow); err != nil || res.Status != StatusCompacted {
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
		if res.Status != StatusCompacted || s.calls() != 2 || len(res.Checkpoint.ProjectionManifest) == 0 {
			t.Fatalf("%d events: status %s calls %d manifest %d", tc.n, res.Status, s.calls(), len(res.Checkpoint.ProjectionManifest))
		}
		t.Logf("%d events: before %d after %d, %d projected", len(req.Events), res.TokensBefore, res.TokensAfter, len(res.Checkpoint.ProjectionManifest))
	}
}
