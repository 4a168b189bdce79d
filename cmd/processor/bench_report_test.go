package main

import (
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
