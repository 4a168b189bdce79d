// Package consumer turns compaction requests into activated checkpoints.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/jsrun"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/telemetry"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go/jetstream"
)

// Deps are the processor's collaborators.
type Deps struct {
	// JS is the JetStream context; the connection behind it should reconnect
	// forever (nats.MaxReconnects(-1)).
	JS jetstream.JetStream
	// Stores are the buckets from topology.Ensure.
	Stores *topology.Stores
	// Compactor runs the engine.
	Compactor Compactor
	// Summarizer is the model boundary the engine calls.
	Summarizer engine.Summarizer
	// Logger receives operational logs (nil: discarded).
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Metrics receives measurements (nil: none).
	Metrics Metrics
}

// Processor consumes compaction requests with one durable pull consumer
// shared by every replica, and commits each outcome through the lane head.
// A jsrun.Runner pulls, heartbeats and settles its requests. Run it once
// per process.
type Processor struct {
	cfg        Config
	js         jetstream.JetStream
	stores     *topology.Stores
	lanes      *lanes.Store
	ledger     *ledger.Ledger
	relay      *outbox.Relay
	compactor  Compactor
	summarizer engine.Summarizer
	log        *slog.Logger
	now        func() time.Time
	metrics    Metrics
	handle     handler
	commits    *commitGate
	runner     *jsrun.Runner
	recent     *recentCheckpoints
	heads      *recentHeads

	// requests is the COMPACT_REQUESTS handle harvest jobs read their
	// request through, looked up once (requestStream).
	requestsMu sync.Mutex
	requests   jetstream.Stream
	// handoff holds each compaction's cut for its harvest job.
	handoff cutHandoff

	// crashed ends when a test crash point stops the processor.
	crashed context.Context
	crash   context.CancelFunc
}

// New validates cfg and returns a processor. It does no I/O.
func New(cfg Config, d Deps) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.JS == nil || d.Stores == nil || d.Stores.Heads == nil || d.Stores.Checkpoints == nil ||
		d.Stores.Ledger == nil || d.Stores.Lanes == nil || d.Compactor == nil || d.Summarizer == nil {
		return nil, errors.New("consumer: Deps needs JS, Stores (heads, checkpoints, ledger, lanes), Compactor and Summarizer")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Metrics == nil {
		d.Metrics = noMetrics{}
	}
	heads := newRecentHeads()
	store := lanes.New(d.Stores.Heads, d.Stores.Checkpoints)
	relayCfg := cfg.Relay
	relayCfg.OnCleared = heads.cleared
	relayCfg.Resolve = store.Resolve // a head's activated event names its checkpoint record
	relay, err := outbox.NewRelay(d.Stores.Heads, d.JS, relayCfg, d.Logger)
	if err != nil {
		return nil, err
	}
	p := &Processor{
		cfg: cfg, js: d.JS, stores: d.Stores,
		lanes: store, ledger: ledger.New(d.Stores.Ledger),
		relay: relay, compactor: d.Compactor, summarizer: d.Summarizer,
		log: d.Logger, now: d.Now, metrics: d.Metrics,
		commits: newCommitGate(cfg.EffectiveCommitConcurrency()), recent: newRecentCheckpoints(), heads: heads,
	}
	p.crashed, p.crash = context.WithCancel(context.Background())
	p.handle = p.pipeline()
	p.runner, err = jsrun.New(d.JS, jsrun.Config{
		Stream: cfg.Stream, Consumer: cfg.ConsumerConfig(), Workers: cfg.Workers, PullWait: cfg.PullWait,
		Gather: cfg.PullGather, Busy: p.gatherWhen(), DrainTimeout: cfg.DrainTimeout, Logger: d.Logger, Metrics: d.Metrics,
	}, p.work)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// gatherWhen is when a pull may wait to fetch several requests at once
// (jsrun.Config.Busy): with a local summarizer, while requests wait for a
// commit slot. Then the processor has more work ready than the CPU takes,
// and a request pulled at once would only queue for it. A request for a
// remote model spends its time waiting on the model, so a pull never waits
// for it: waiting would only delay its model call (BenchmarkSlowModel200ms
// measures the fraction of the ideal throughput a remote model reaches).
func (p *Processor) gatherWhen() func() bool {
	if !IsLocal(p.summarizer) {
		return nil
	}
	return func() bool { return p.commits.queued() > 0 }
}

// Relay returns the processor's outbox relay (for Flush in tools and tests).
func (p *Processor) Relay() *outbox.Relay { return p.relay }

// ConsumerConfig is the durable consumer the processor creates or updates
// on start (jsrun.Durable), with MaxAckPending as configured.
func (c Config) ConsumerConfig() jetstream.ConsumerConfig {
	return jsrun.Durable(c.Durable, "Cairn processor: compaction requests", c.Subject, c.AckWait, c.MaxDeliver, c.EffectiveMaxAckPending())
}

// Run consumes until ctx ends, then drains: it stops pulling, lets in-flight
// requests finish for up to DrainTimeout (then Naks them), drains the
// outbox relay, and returns nil. It survives server restarts and a deleted
// consumer by re-creating the consumer and pulling again. It returns an
// error only when a test crash point stopped it.
func (p *Processor) Run(ctx context.Context) error {
	relayCtx, stopRelay := context.WithCancel(context.Background())
	var relay sync.WaitGroup
	relay.Go(func() { _ = p.relay.Run(relayCtx) })
	defer func() { stopRelay(); relay.Wait() }()

	pullCtx, stopPull := context.WithCancel(ctx)
	defer stopPull()
	defer context.AfterFunc(p.crashed, stopPull)()
	p.runner.Run(pullCtx)
	if p.isCrashed() {
		return errCrashed
	}
	flushCtx, cancel := context.WithTimeout(context.Background(), max(p.cfg.DrainTimeout, 5*time.Second))
	defer cancel()
	if err := p.relay.Drain(flushCtx); err != nil {
		p.log.Warn("consumer: outbox flush on shutdown incomplete; the next start finishes it", "err", err)
	}
	return nil
}

// work is the processor's jsrun handler: it runs the pipeline on one
// request and returns the decision settle made. A crash point cancels every
// request in flight, and a crashed processor settles nothing.
func (p *Processor) work(ctx context.Context, msg jsrun.Msg) jsrun.Decision {
	if p.isCrashed() {
		return jsrun.Decision{Action: jsrun.Abandon}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(p.crashed, cancel)()
	d := newDelivery(msg)
	telemetry.Stage(ctx, telemetry.StageCompact, func(ctx context.Context) { _ = p.handle(ctx, d) })
	return d.settled
}

func (p *Processor) isCrashed() bool { return p.crashed.Err() != nil }

// crashPoint stops the processor at a named commit step when a test asks.
func (p *Processor) crashPoint(step string) error {
	if p.cfg.crashAt != nil && p.cfg.crashAt(step) {
		p.crash()
		return fmt.Errorf("%w: %s", errCrashed, step)
	}
	return nil
}
