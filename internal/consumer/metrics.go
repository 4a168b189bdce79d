package consumer

import "time"

// Metrics receives the processor's measurements. *telemetry.Metrics
// implements it; a nil Deps.Metrics records nothing. Implementations must be
// safe for concurrent use.
type Metrics interface {
	// Request counts a settled request by outcome status (activated,
	// skipped, failed, duplicate) and, for failed, its code.
	Request(status, code string)
	// Stage records the duration of a stage (load, engine, commit_wait, activate).
	Stage(stage string, d time.Duration)
	// Tokens records an activated compaction's token counts.
	Tokens(before, after int64)
	// Delivered records a received message's delivery count.
	Delivered(consumer string, numDelivered uint64)
	// CASConflict counts a compare-and-swap conflict on a bucket.
	CASConflict(bucket string)
	// InFlight moves the in-flight gauge of a consumer.
	InFlight(consumer string, delta int)
}

// Outcome statuses of Metrics.Request.
const (
	statusActivated = "activated"
	statusSkipped   = "skipped"
	statusFailed    = "failed"
	statusDuplicate = "duplicate"
)

type noMetrics struct{}

func (noMetrics) Request(string, string)      {}
func (noMetrics) Stage(string, time.Duration) {}
func (noMetrics) Tokens(int64, int64)         {}
func (noMetrics) Delivered(string, uint64)    {}
func (noMetrics) CASConflict(string)          {}
func (noMetrics) InFlight(string, int)        {}

// stage times fn as the named stage.
func (p *Processor) stage(name string, fn func() error) error {
	t0 := time.Now()
	err := fn()
	p.metrics.Stage(name, time.Since(t0))
	return err
}
