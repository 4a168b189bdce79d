package consumer

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/telemetry"
	"github.com/cairnhq/cairn/testenv"
)

var _ Metrics = (*telemetry.Metrics)(nil)

type recordingMetrics struct {
	mu       sync.Mutex
	requests map[string]int
	stages   map[string]int
	inFlight int
}

func (m *recordingMetrics) Request(status, code string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[status+"/"+code]++
}

func (m *recordingMetrics) Stage(stage string, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stages[stage]++
}

func (m *recordingMetrics) Tokens(int64, int64)      {}
func (m *recordingMetrics) Delivered(string, uint64) {}
func (m *recordingMetrics) CASConflict(string)       {}
func (m *recordingMetrics) InFlight(_ string, delta int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight += delta
}

func TestMetricsCountOutcomes(t *testing.T) {
	e := singleEnv(t)
	m := &recordingMetrics{requests: map[string]int{}, stages: map[string]int{}}
	p, err := New(testConfig(), Deps{JS: e.js, Stores: e.stores, Compactor: testCompactor{}, Summarizer: &testSummarizer{}, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	r := e.run(t, p)
	spec := reqSpec{id: "met-1", lane: "met"}
	e.publish(t, e.body(spec), spec.id)
	onlyEvent(t, e.awaitOutcome(t, spec.id))
	e.publish(t, e.body(spec), "") // a resend: duplicate
	e.publish(t, []byte("{"), "met-bad")
	onlyEvent(t, e.awaitOutcome(t, "met-bad"))
	testenv.Eventually(t, waitLong, func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.requests["activated/"] != 1 || m.requests["duplicate/"] != 1 || m.requests["failed/invalid_compaction_request"] != 1 {
			return fmt.Errorf("requests %v", m.requests)
		}
		if m.stages["engine"] != 1 || m.stages["activate"] != 1 || m.inFlight != 0 {
			return fmt.Errorf("stages %v in flight %d", m.stages, m.inFlight)
		}
		return nil
	})
	r.stop()
	_ = r.wait(t)
}
