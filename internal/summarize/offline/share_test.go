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
func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestSummaryDoesNotDominateCompact compares the CPU time of the offline
// summaries of a lane with that of the whole engine compaction that calls
// them, on the 1 000 and 10 000-event lanes of the benchmarks: the summary
// must stay under half of it.
func TestSummaryDoesNotDominateCompact(t *testing.T) {
	sizes := []int{1000, 10000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, events := range sizes {
		summaryShare(t, events, max(1, 6000/events))
	}
}

// summaryShare runs compactions whose summarizer clocks its own calls, so
// both numbers come from the same runs under the same load.
func summaryShare(t *testing.T, events, rounds int) {
	data := lanegen.RequestJSON(lanegen.RequestOptions{Lane: lanegen.Options{Events: events, Seed: 1}})
	req, err := engine.DecodeRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	s := New(DefaultOptions())
	var summaryCPU time.Duration
	calls := 0
	timed := summarizerFunc(func(ctx context.Context, p engine.Payload) (engine.Summary, error) {
		calls++
		start := cpuTime(t)
		defer func() { summaryCPU += cpuTime(t) - start }()
		return s.Summarize(ctx, p)
	})
	var compactCPU time.Duration
	for range rounds {
		runtime.GC() // start each round without the previous round's garbage
		start := cpuTime(t)
		if _, err := engine.Compact(context.Background(), req, timed, now); err != nil {
			t.Fatal(err)
		}
		compactCPU += cpuTime(t) - start
	}
	share := float64(summaryCPU) / float64(compactCPU)
	t.Logf("%d events, %d summary call(s) per compaction: compact %v CPU, of which the offline summary %v (%.0f%%)",
		events, calls/rounds, compactCPU/time.Duration(rounds), summaryCPU/time.Duration(rounds), 100*share)
	if share >= 0.5 {
		t.Errorf("%d events: the offline summary takes %.0f%% of compact's CPU time, want under half", events, 100*share)
	}
}

type summarizerFunc func(context.Context, engine.Payload) (engine.Summary, error)

func (f summarizerFunc) Summarize(ctx context.Context, p engine.Payload) (engine.Summary, error) {
	return f(ctx, p)
}
