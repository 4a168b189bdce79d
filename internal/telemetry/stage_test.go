package telemetry

import (
	"context"
	"runtime/pprof"
	"testing"
)

// TestStageLabelsGoroutines holds that a stage's label reaches what runs in
// it and the goroutines it starts, where CPU profile samples are taken.
func TestStageLabelsGoroutines(t *testing.T) {
	got := make(chan string, 1)
	Stage(context.Background(), StageHarvest, func(ctx context.Context) {
		go func() {
			l, _ := pprof.Label(ctx, StageLabel)
			got <- l
		}()
	})
	if l := <-got; l != StageHarvest {
		t.Fatalf("label %q, want %q", l, StageHarvest)
	}
}
