package offline

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/lanegen"
)

// cpuTime is the CPU time this process has used so far. It is a steadier
// yardstick than wall time on a shared machine.
func cpuTime(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSummaryShare1000 and BenchmarkSummaryShare10000 report the share
// of a compaction's CPU time that its offline summaries take (summary_share;
// goal: under half, so the summarizer does not dominate compaction), on the
// lanes of the engine benchmarks. A compaction here is what a request
// costs the engine: decoding and validating the request, then Compact.
//
//	go test -run '^$' -bench SummaryShare ./internal/summarize/offline
func BenchmarkSummaryShare1000(b *testing.B)  { benchmarkSummaryShare(b, 1000) }
func BenchmarkSummaryShare10000(b *testing.B) { benchmarkSummaryShare(b, 10000) }

// benchmarkSummaryShare clocks the summarizer's calls inside the same
// compactions, so both numbers come from the same runs under the same load.
func benchmarkSummaryShare(b *testing.B, events int) {
	data := lanegen.RequestJSON(lanegen.RequestOptions{Lane: lanegen.Options{Events: events, Seed: 1}})
	s := New(DefaultOptions())
	var summaryCPU, compactCPU time.Duration
	timed := summarizerFunc(func(ctx context.Context, p engine.Payload) (engine.Summary, error) {
		start := cpuTime(b)
		defer func() { summaryCPU += cpuTime(b) - start }()
		return s.Summarize(ctx, p)
	})
	for b.Loop() {
		b.StopTimer()
		runtime.GC() // start each round without the previous round's garbage
		b.StartTimer()
		start := cpuTime(b)
		req, err := engine.DecodeRequest(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := engine.Compact(context.Background(), req, timed, now); err != nil {
			b.Fatal(err)
		}
		compactCPU += cpuTime(b) - start
	}
	b.ReportMetric(float64(summaryCPU)/float64(compactCPU), "summary_share")
}

type summarizerFunc func(context.Context, engine.Payload) (engine.Summary, error)

func (f summarizerFunc) Summarize(ctx context.Context, p engine.Payload) (engine.Summary, error) {
	return f(ctx, p)
}
