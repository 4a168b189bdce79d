package consumer

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/testenv"
)

// gateSummarizer holds every call until release is closed and counts the
// calls waiting at once.
type gateSummarizer struct {
	release chan struct{}
	waiting atomic.Int64
	inner   testSummarizer
}

func (g *gateSummarizer) Summarize(ctx context.Context, p engine.Payload) (engine.Summary, error) {
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-g.release:
	case <-ctx.Done():
		return engine.Summary{}, ctx.Err()
	}
	return g.inner.Summarize(ctx, p)
}

// Two replicas of 2 workers share the durable consumer with MaxAckPending
// 4: all four requests must be in their model calls at once. With the
// consumer's MaxAckPending at one replica's workers (2), the fleet would
// never get past two.
func TestReplicasShareMaxAckPending(t *testing.T) {
	e := singleEnv(t)
	gate := &gateSummarizer{release: make(chan struct{})}
	cfg := testConfig()
	cfg.Workers, cfg.MaxAckPending = 2, 4
	cfg.AckWait = 30 * time.Second // the gate holds calls longer than testConfig's 1s
	e.start(t, cfg, nil, gate)
	e.start(t, cfg, nil, gate)
	var ids []string
	for i := range 4 {
		spec := reqSpec{id: fmt.Sprintf("fleet-%d", i), lane: fmt.Sprintf("fleet-%d", i)}
		e.publish(t, e.body(spec), spec.id)
		ids = append(ids, spec.id)
	}
	testenv.Eventually(t, 20*time.Second, func() error {
		if n := gate.waiting.Load(); n != 4 {
			return fmt.Errorf("%d of 4 requests are in a model call", n)
		}
		return nil
	})
	close(gate.release)
	for _, id := range ids {
		if ev := onlyEvent(t, e.awaitOutcome(t, id)); ev.Kind != kindActivated {
			t.Fatalf("%s ended %s", id, ev.Kind)
		}
	}
	info, err := e.consumerInfo(t)
	if err != nil || info.Config.MaxAckPending != 4 {
		t.Fatalf("consumer MaxAckPending = %v (%v), want 4", info, err)
	}
}

func TestConfigRejectsMaxAckPendingBelowWorkers(t *testing.T) {
	cfg := testConfig()
	cfg.Workers, cfg.MaxAckPending = 4, 3
	if err := cfg.Validate(); err == nil {
		t.Fatal("MaxAckPending below Workers was accepted")
	}
	cfg.MaxAckPending = 0
	if err := cfg.Validate(); err != nil {
		t.Fatalf("MaxAckPending 0 (the default): %v", err)
	}
}
