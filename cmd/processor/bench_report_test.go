package main

import (
	"testing"

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
