package engine

import (
	"context"
	"testing"
)

// benchmarkAccounting compacts req over and over, as the processor does
// when a lane is resent with each request, and reports the process CPU
// per compaction. tokenizer "" budgets in bytes. warm hands every call the
// same CountCache (filled by the setup call), as a worker does; cold
// counts every view once per call.
func benchmarkAccounting(b *testing.B, req *Request, tokenizer string, warm bool) {
	req.ModelProfile.Tokenizer = nil
	if tokenizer != "" {
		req.ModelProfile.Tokenizer = ptr(tokenizer)
	}
	var cache *CountCache
	if warm {
		cache = NewCountCache(4 * len(req.Events))
	}
	res, err := CompactCounting(context.Background(), req, extractive{}, fixedNow, cache)
	if err != nil {
		b.Fatalf("setup: %v", err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPUTime()
	for i := 0; i < b.N; i++ {
		if _, err := CompactCounting(context.Background(), req, extractive{}, fixedNow, cache); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPUTime()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(res.TokensBefore), "tokens_before")
}

// BenchmarkAccounting runs the engine on the example lane, the engine's
// coding lanes of 1 000 and 10 000 events and lanegen lanes (the processor
// benchmark's) with bytes, with o200k_base counted cold and warm.
func BenchmarkAccounting(b *testing.B) {
	lanes := []struct {
		name string
		req  func() *Request
	}{
		{"example", func() *Request { return loadExample(b, "coding-agent-lane.json") }},
		{"coding1000", func() *Request {
			return laneRequest(b, "0192b6e4-0000-7000-8000-00000000b000", codingLane(b, 1_000, 25), 400_000)
		}},
		{"coding10000", func() *Request {
			return laneRequest(b, "0192b6e4-0000-7000-8000-00000000b000", codingLane(b, 10_000, 25), 4_000_000)
		}},
		{"lanegen100", func() *Request { return generatedLane(b, 100, 1) }},
		{"lanegen1000", func() *Request { return generatedLane(b, 1_000, 1) }},
	}
	for _, lane := range lanes {
		req := lane.req()
		b.Run(lane.name+"/bytes", func(b *testing.B) { benchmarkAccounting(b, req, "", false) })
		b.Run(lane.name+"/o200k_cold", func(b *testing.B) { benchmarkAccounting(b, req, "o200k_base", false) })
		b.Run(lane.name+"/o200k_warm", func(b *testing.B) { benchmarkAccounting(b, req, "o200k_base", true) })
	}
}
