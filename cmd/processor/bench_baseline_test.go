package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/baseline"
)

// Requests that fail make the run fail, after the report: here every
// request's deadline has passed before the processor takes it, so each
// one is a typed deadline_exceeded. None is activated, so the rate is 0.
func TestBenchExitsNonZeroWhenRequestsFail(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"--requests", "3", "--events", "40", "--workers", "2", "--deadline", "1ms", "--progress-every", "0", "--timeout", "2m", "--json"}
	code := runBench(context.Background(), args, stdio{out: &out, err: &errOut})
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s%s", code, out.String(), errOut.String())
	}
	var r struct {
		Activated, Failed int
		PerSecond         float64 `json:"requests_per_second"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("the report is not printed as JSON: %v: %s", err, out.String())
	}
	if r.Activated != 0 || r.Failed != 3 || r.PerSecond != 0 {
		t.Fatalf("report %+v: want 3 failed, none activated, a rate of 0", r)
	}
	if want := "3 of 3 requests failed (failed:deadline_exceeded 3)"; !strings.Contains(errOut.String(), want) {
		t.Fatalf("stderr %q lacks %q", errOut.String(), want)
	}
}

// Skipped requests are Cairn's answer, not failures; failed ones and those
// with no outcome at the timeout are, in every Cairn run of the report.
func TestBenchFailureLineCountsFailedAndMissing(t *testing.T) {
	r := benchReport{Requests: 4, Skipped: 2, Outcomes: map[string]int{"skipped:below_threshold": 2}}
	if line := failureLine(r); line != "" {
		t.Fatalf("skipped only: %q", line)
	}
	r.Failed, r.Missing, r.Outcomes["failed:stale_head"] = 1, 1, 1
	r.Baseline = &baselineReport{Pairs: []benchPair{{}, {Failed: 2, Outcomes: map[string]int{"failed:stale_head": 2}}}}
	want := "4 of 8 requests failed (failed:stale_head 3, missing at the timeout 1)"
	if line := failureLine(r); line != want {
		t.Fatalf("%q, want %q", line, want)
	}
}

// --baseline prints the baseline beside Cairn: each pair with the sizes
// Cairn wrote, the median of the pairs' ratios as the headline, all in
// --json; progress goes to stderr, never into the JSON.
func TestBenchBesideTheBaseline(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"--requests", "20", "--events", "100", "--workers", "2", "--baseline", "--baseline-pairs", "2", "--baseline-workers", "4", "--progress-every", "1ms", "--timeout", "2m", "--json"}
	if code := runBench(context.Background(), args, stdio{out: &out, err: &errOut}); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
	}
	var r struct {
		Activated int
		Baseline  *baselineReport `json:"baseline"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if r.Activated != 20 || r.Baseline == nil || len(r.Baseline.Pairs) != 2 {
		t.Fatalf("report %+v: want 20 activated and 2 pairs", r)
	}
	for i, p := range r.Baseline.Pairs {
		if p.Baseline.PerSecond <= 0 || p.Cairn.PerSecond <= 0 || p.Ratio <= 0 || p.Sizes.Head <= 0 || p.Sizes.Checkpoint <= p.Sizes.Head || p.Sizes.Activated <= 0 {
			t.Errorf("pair %d: %+v", i+1, p)
		}
	}
	if b := r.Baseline; b.Ratio != baseline.Median([]float64{b.Pairs[0].Ratio, b.Pairs[1].Ratio}) || b.Workers != 4 {
		t.Errorf("headline %+v is not the median of the pairs' ratios", b)
	}
	for _, loop := range []string{"Cairn: ", "baseline: "} {
		if !strings.Contains(errOut.String(), loop) || !strings.Contains(errOut.String(), " of 20 outcomes after ") {
			t.Errorf("stderr shows no progress of the %s loop: %s", loop, errOut.String())
		}
	}
}

// Ineffective compactions of short generated lanes come with a hint to use
// longer ones; other failures, and long lanes, do not.
func TestBenchHintsAtLongerLanes(t *testing.T) {
	r := benchReport{Outcomes: map[string]int{"failed:ineffective_compaction": 3}}
	if hint := smallLaneHint(benchConfig{events: 24}, r); !strings.Contains(hint, "--events 48") {
		t.Fatalf("24 events: %q", hint)
	}
	if hint := smallLaneHint(benchConfig{events: 48}, r); hint != "" {
		t.Fatalf("48 events: %q", hint)
	}
	if hint := smallLaneHint(benchConfig{events: 24}, benchReport{Outcomes: map[string]int{"failed:stale_head": 1}}); hint != "" {
		t.Fatalf("another failure: %q", hint)
	}
}
