package telemetry

import (
	"context"
	"runtime/pprof"
)

// The stages a CPU profile of Cairn is split by: the pprof label
// StageLabel has one of these values on every sample taken while a stage
// runs (go tool pprof -tags, or -tagfocus=cairn_stage=harvest).
const (
	StageLabel   = "cairn_stage"
	StageCompact = "compact" // a compaction request's delivery, decode to settle
	StageHarvest = "harvest" // a harvest job's delivery, read of the cut to memory.flushed
	StageRelay   = "relay"   // the outbox relay publishing committed events
)

// Stage runs fn with the stage's label; goroutines fn starts carry it too.
func Stage(ctx context.Context, stage string, fn func(context.Context)) {
	pprof.Do(ctx, pprof.Labels(StageLabel, stage), fn)
}
