package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
)

// The report tells activated, skipped and failed apart and says why the
// others were not activated.
func TestBenchReportCountsOutcomes(t *testing.T) {
	var r benchReport
	r.count(events.Event{Activated: &events.Activated{}})
	r.count(events.Event{Skipped: &events.Skipped{Reason: "below_threshold"}})
	for range 2 {
		r.count(events.Event{Failed: &events.Failed{Error: events.Error{Code: "ineffective_compaction"}}})
	}
	if r.Activated != 1 || r.Skipped != 1 || r.Failed != 2 {
		t.Fatalf("counts %+v", r)
	}
	want := "failed:ineffective_compaction 2, skipped:below_threshold 1"
	if got := formatOutcomes(r.Outcomes); got != want {
		t.Fatalf("outcomes %q, want %q", got, want)
	}
}

// A spread latency keeps its mean and stays within latency ± spread/2.
func TestDelayedSpreadKeepsTheMean(t *testing.T) {
	d := &delayed{latency: 200 * time.Millisecond, spread: 100 * time.Millisecond}
	var sum time.Duration
	lo, hi := time.Hour, time.Duration(0)
	for n := int64(1); n <= 100; n++ {
		w := d.wait(n)
		sum += w
		lo, hi = min(lo, w), max(hi, w)
	}
	if mean := sum / 100; (mean-200*time.Millisecond).Abs() > time.Microsecond || lo != 150*time.Millisecond || hi != 250*time.Millisecond {
		t.Fatalf("mean %s, range %s..%s; want 200ms, 150ms..250ms", sum/100, lo, hi)
	}
	if fixed := (&delayed{latency: time.Second}).wait(7); fixed != time.Second {
		t.Fatalf("without spread: %s", fixed)
	}
}

// The steady rate leaves out the first and last tenth of completions.
func TestSteadyRateLeavesOutRampAndTail(t *testing.T) {
	t0 := time.Unix(0, 0)
	ended := make([]time.Time, 100)
	for i := range ended {
		ended[i] = t0.Add(time.Duration(i) * 10 * time.Millisecond) // 100/s
	}
	for i := 91; i < 100; i++ { // a slow tail
		ended[i] = ended[i].Add(time.Duration(i-90) * time.Second)
	}
	if got := steadyRate(ended, 1); got < 99.9 || got > 100.1 {
		t.Fatalf("steady rate %.2f/s, want 100/s", got)
	}
	if got := steadyRate(ended[:5], 7); got != 7 {
		t.Fatalf("too few completions: %.2f, want the whole-run rate", got)
	}
}

// --timeout ends a run whose outcomes keep arriving: following the events
// must not wait for the last request.
func TestBenchTimeoutEndsAFlowingRun(t *testing.T) {
	// 1200 requests at 50 ms each on one worker: at least 60 s of
	// outcomes, one every 50 ms, long after the 2 s timeout. (The bound
	// below leaves room for a loaded machine's setup and shutdown.)
	var out, errOut bytes.Buffer
	args := []string{"--requests", "1200", "--events", "8", "--workers", "1", "--model-latency", "50ms", "--timeout", "2s"}
	start := time.Now()
	code := runBench(context.Background(), args, stdio{out: &out, err: &errOut})
	elapsed := time.Since(start)
	if code == 0 {
		t.Fatalf("exit 0 after %s: %s", elapsed, out.String())
	}
	if !strings.Contains(errOut.String(), "deadline exceeded") {
		t.Errorf("stderr %q, want the timeout", errOut.String())
	}
	// The report of the outcomes that did arrive comes first.
	if !strings.Contains(out.String(), "without an outcome at the timeout") {
		t.Errorf("stdout %q: no report of the outcomes that arrived", out.String())
	}
	if elapsed > 30*time.Second {
		t.Fatalf("the run ended %s after it began, long after its 2s timeout", elapsed)
	}
}

// Each heap figure is the runtime class it names: compared with MemStats,
// which reports the same classes under other names.
func TestReadHeapNamesEachClass(t *testing.T) {
	keep := make([][]byte, 64)
	for i := range keep {
		keep[i] = make([]byte, 1<<20) // 64 MiB live, so the figures differ
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := readHeap()
	runtime.KeepAlive(keep)
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"objects", h.Objects, mib(ms.HeapAlloc)},
		{"free", h.Free, mib(ms.HeapIdle - ms.HeapReleased)},
		{"released", h.Released, mib(ms.HeapReleased)},
		{"unused", h.Unused, mib(ms.HeapInuse - ms.HeapAlloc)},
		{"stacks", h.Stacks, mib(ms.StackInuse)},
		{"total", h.Total, mib(ms.Sys)},
		{"goal", h.Goal, mib(ms.NextGC)},
	} {
		if diff := c.got - c.want; diff < -1 || diff > 1 {
			t.Errorf("%s: %.1f MiB, MemStats says %.1f", c.name, c.got, c.want)
		}
	}
	if h.Live < 64 || h.Live > h.Goal {
		t.Errorf("live %.1f MiB with 64 MiB kept, goal %.1f", h.Live, h.Goal)
	}
}
