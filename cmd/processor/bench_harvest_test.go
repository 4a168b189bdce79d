//go:build linux

package main

import (
	"context"
	"runtime"
	"syscall"
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
// compaction it follows. Both are timed in the CPU time of the benchmark's
// thread, which what else the machine runs does not change.
func BenchmarkHarvestVsCompaction(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
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
		t0 := threadCPU()
		r, err := engine.DecodeRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := engine.Compact(ctx, r, s, time.Now()); err != nil {
			b.Fatal(err)
		}
		t1 := threadCPU()
		facts.PreviewHeuristic(ctx, job, facts.DefaultConfig().MaxFacts)
		compact, harvest = compact+t1-t0, harvest+threadCPU()-t1
	}
	b.ReportMetric(float64(compact.Microseconds())/float64(b.N), "compact-µs/op")
	b.ReportMetric(float64(harvest.Microseconds())/float64(b.N), "harvest-µs/op")
	b.ReportMetric(float64(harvest)/float64(compact), "harvest/compact")
	b.ReportMetric(float64(len(cut)), "cut-events")
}

// threadCPU is the CPU time the calling OS thread has used.
func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
