package offline

import (
	"context"
	"testing"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/lanegen"
)

// benchLane is the lane the engine benchmarks compact: lanegen with seed 1.
func benchLane(b *testing.B, events int) []engine.EventView {
	b.Helper()
	return laneViews(b, lanegen.Options{Events: events, Seed: 1})
}

// benchmarkSummarize times one summary call over a whole projected lane, the
// largest single chunk the engine can hand over.
func benchmarkSummarize(b *testing.B, events int) {
	lane := benchLane(b, events)
	p := payload(lane, lane[0].ChatSeq, nil)
	s := New(DefaultOptions())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Summarize(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOfflineSummarize24(b *testing.B)    { benchmarkSummarize(b, 24) }
func BenchmarkOfflineSummarize1000(b *testing.B)  { benchmarkSummarize(b, 1000) }
func BenchmarkOfflineSummarize10000(b *testing.B) { benchmarkSummarize(b, 10000) }

// BenchmarkOfflineSummarizeProse24 is the lane of the processor benchmark:
// 24 long user and assistant turns of prose.
func BenchmarkOfflineSummarizeProse24(b *testing.B) {
	lane := proseLane(24)[0]
	p := payload(lane, lane[0].ChatSeq, nil)
	s := New(DefaultOptions())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Summarize(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// benchmarkCompact times engine.Compact with this summarizer on the same
// lane, so the share of the summary in a compaction can be read off.
func benchmarkCompact(b *testing.B, events int) {
	data := lanegen.RequestJSON(lanegen.RequestOptions{Lane: lanegen.Options{Events: events, Seed: 1}})
	req, err := engine.DecodeRequest(data)
	if err != nil {
		b.Fatal(err)
	}
	s := New(DefaultOptions())
	b.ReportAllocs()
	for b.Loop() {
		res, err := engine.Compact(context.Background(), req, s, now)
		if err != nil || res.Status != "compacted" {
			b.Fatalf("compact: %v", err)
		}
	}
}

func BenchmarkCompactWithOffline1000(b *testing.B)  { benchmarkCompact(b, 1000) }
func BenchmarkCompactWithOffline10000(b *testing.B) { benchmarkCompact(b, 10000) }

// emptySummarizer returns the smallest valid semantic: it measures what a
// compaction costs without any summarizing work.
type emptySummarizer struct{}

func (emptySummarizer) Summarize(_ context.Context, p engine.Payload) (engine.Summary, error) {
	return engine.Summary{Output: emptySemantic(p.CoveredRange)}, nil
}

func benchmarkCompactEmpty(b *testing.B, events int) {
	data := lanegen.RequestJSON(lanegen.RequestOptions{Lane: lanegen.Options{Events: events, Seed: 1}})
	req, err := engine.DecodeRequest(data)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := engine.Compact(context.Background(), req, emptySummarizer{}, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompactEmptySummary1000(b *testing.B)  { benchmarkCompactEmpty(b, 1000) }
func BenchmarkCompactEmptySummary10000(b *testing.B) { benchmarkCompactEmpty(b, 10000) }
