package main

import (
	"context"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/internal/lanegen"
)

// BenchmarkHarvestVsCompaction measures, on the generated 100-event lane
// `processor bench --events 100` sends, the CPU of one compaction (decode,
// plan, offline summary, validation) and of the default harvest of its cut
// (extraction, sanitizing, redaction, dedupe), in the same run. It reports
// harvest/compaction: the harvest is to cost at most half of the
// compaction it follows.
func BenchmarkHarvestVsCompaction(b *testing.B) {
	ctx := context.Background()
	body := lanegen.RequestJSON(lanegen.RequestOptions{Lane: lanegen.Options{Events: 100, Seed: 1}})
	req, err := engine.DecodeRequest(body)
	if err != nil {
		b.Fatal(err)
	}
	_, cut, err := cutOf(ctx, req, false)
	if err != nil || len(cut) == 0 {
		b.Fatalf("the lane cuts %d events: %v", len(cut), err)
	}
	job := facts.Job{V: facts.PointerJobVersion, ConversationID: req.ThreadID, HeadEntryID: req.RequestID,
		Scope: facts.Scope{Kind: "thread", ID: req.ThreadID}, Entries: cut, RequestSeq: 1}
	s, err := summarizerFor("offline", modelFlags{})
	if err != nil {
		b.Fatal(err)
	}
	var compact, harvest time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, err := engine.DecodeRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := engine.Compact(ctx, r, s, time.Now()); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		facts.PreviewHeuristic(ctx, job, facts.DefaultConfig().MaxFacts)
		compact, harvest = compact+t1.Sub(t0), harvest+time.Since(t1)
	}
	b.ReportMetric(float64(compact.Microseconds())/float64(b.N), "compact-µs/op")
	b.ReportMetric(float64(harvest.Microseconds())/float64(b.N), "harvest-µs/op")
	b.ReportMetric(float64(harvest)/float64(compact), "harvest/compact")
	b.ReportMetric(float64(len(cut)), "cut-events")
}
