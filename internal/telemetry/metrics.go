// Package telemetry holds Cairn's Prometheus metrics and serves them beside the health and readiness checks.
package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are every metric Cairn exports. A nil *Metrics is valid and
// records nothing, so packages can take one without caring whether metrics
// are enabled.
type Metrics struct {
	Registry *prometheus.Registry

	requests       *prometheus.CounterVec
	stageSeconds   *prometheus.HistogramVec
	modelSeconds   *prometheus.HistogramVec
	modelRetries   *prometheus.CounterVec
	tokens         *prometheus.CounterVec
	outboxPending  prometheus.Gauge
	relayLag       prometheus.Histogram
	harvest        *prometheus.CounterVec
	redeliveries   *prometheus.CounterVec
	casConflicts   *prometheus.CounterVec
	inFlight       *prometheus.GaugeVec
	relayPublished prometheus.Counter
}

// NewMetrics registers every metric, plus the Go and process collectors, in a
// fresh registry.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	durations := []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_requests_total", Help: "Compaction requests finished, by outcome status (activated, skipped, failed, duplicate) and error code.",
		}, []string{"status", "code"}),
		stageSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cairn_stage_duration_seconds", Help: "Time spent in each stage of handling a request (decode, load, engine, commit_wait, activate).", Buckets: durations,
		}, []string{"stage"}),
		modelSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cairn_model_call_duration_seconds", Help: "Duration of summarizer and extractor calls, by component and result.", Buckets: durations,
		}, []string{"component", "result"}),
		modelRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_model_retries_total", Help: "Model calls retried after a transient failure, by component.",
		}, []string{"component"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_tokens_total", Help: "Tokens of activated compactions: before, after and reclaimed.",
		}, []string{"kind"}),
		outboxPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cairn_outbox_pending", Help: "Lane heads whose committed events are overdue for publication, as of the last readiness check.",
		}),
		relayLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "cairn_outbox_relay_lag_seconds", Help: "Time from a head commit to the publication of its events.", Buckets: durations,
		}),
		relayPublished: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cairn_outbox_published_total", Help: "Outbox records published by the relay.",
		}),
		harvest: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_harvest_facts_total", Help: "Harvested facts by result: stored, duplicate, redacted.",
		}, []string{"result"}),
		redeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_consumer_redeliveries_total", Help: "Messages received with a delivery count above one, by consumer.",
		}, []string{"consumer"}),
		casConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_cas_conflicts_total", Help: "Compare-and-swap conflicts on key-value stores, by bucket.",
		}, []string{"bucket"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cairn_in_flight", Help: "Messages being worked on, by consumer.",
		}, []string{"consumer"}),
	}
	reg.MustRegister(m.requests, m.stageSeconds, m.modelSeconds, m.modelRetries, m.tokens,
		m.outboxPending, m.relayLag, m.relayPublished, m.harvest, m.redeliveries, m.casConflicts, m.inFlight)
	return m
}

// Request counts one finished request. code is "" unless status is failed.
func (m *Metrics) Request(status, code string) {
	if m != nil {
		m.requests.WithLabelValues(status, code).Inc()
	}
}

// Stage records how long a stage took.
func (m *Metrics) Stage(stage string, d time.Duration) {
	if m != nil {
		m.stageSeconds.WithLabelValues(stage).Observe(d.Seconds())
	}
}

// ModelCall records one model call of a component (summarizer, extractor).
func (m *Metrics) ModelCall(component string, d time.Duration, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.modelSeconds.WithLabelValues(component, result).Observe(d.Seconds())
}

// ModelRetries adds n retries of a component's calls.
func (m *Metrics) ModelRetries(component string, n int) {
	if m != nil && n > 0 {
		m.modelRetries.WithLabelValues(component).Add(float64(n))
	}
}

// Tokens records the budget of one activated compaction.
func (m *Metrics) Tokens(before, after int64) {
	if m == nil {
		return
	}
	m.tokens.WithLabelValues("before").Add(float64(before))
	m.tokens.WithLabelValues("after").Add(float64(after))
	if before > after {
		m.tokens.WithLabelValues("reclaimed").Add(float64(before - after))
	}
}

// OutboxPending sets the number of unpublished outbox records.
func (m *Metrics) OutboxPending(n int) {
	if m != nil {
		m.outboxPending.Set(float64(n))
	}
}

// RelayPublished records one record published lag after its commit.
func (m *Metrics) RelayPublished(lag time.Duration) {
	if m != nil {
		m.relayPublished.Inc()
		m.relayLag.Observe(lag.Seconds())
	}
}

// Harvest records the facts of one flush.
func (m *Metrics) Harvest(stored, duplicates, redacted int) {
	if m == nil {
		return
	}
	m.harvest.WithLabelValues("stored").Add(float64(stored))
	m.harvest.WithLabelValues("duplicate").Add(float64(duplicates))
	m.harvest.WithLabelValues("redacted").Add(float64(redacted))
}

// Delivered records a received message and whether it was a redelivery.
func (m *Metrics) Delivered(consumer string, numDelivered uint64) {
	if m != nil && numDelivered > 1 {
		m.redeliveries.WithLabelValues(consumer).Inc()
	}
}

// CASConflict counts one compare-and-swap conflict on a bucket.
func (m *Metrics) CASConflict(bucket string) {
	if m != nil {
		m.casConflicts.WithLabelValues(bucket).Inc()
	}
}

// InFlight adds delta to the in-flight gauge of a consumer.
func (m *Metrics) InFlight(consumer string, delta int) {
	if m != nil {
		m.inFlight.WithLabelValues(consumer).Add(float64(delta))
	}
}
