package facts

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/pause"
	"github.com/cairnhq/cairn/internal/slots"
	"github.com/cairnhq/cairn/internal/telemetry"
	"github.com/cairnhq/cairn/internal/topology"
)

// MaxDeliver is how many times a harvest job is tried before it is reported
// with conversation.memory.failed (subjects.md).
const MaxDeliver = 3

// Config configures a Worker.
type Config struct {
	// Workers is how many jobs this worker runs at once (1..64); no pull
	// asks for more than the free slots.
	Workers int
	// MaxAckPending bounds the jobs delivered and not yet settled across
	// every worker sharing the durable consumer, counting those a killed
	// worker left behind until their AckWait ends and those waiting for a
	// delayed redelivery: 0 means AckPendingPerWorker × Workers, else
	// Workers..65536. Replicas should all set the same value, at least the
	// sum of their workers. Pulls stay bounded by free workers whatever it is.
	MaxAckPending int
	// MaxFacts bounds the facts stored per job (harvest_max_facts, 1..64).
	MaxFacts int
	// AckWait is the consumer's ack window (1s..10m). A running job sends
	// InProgress every AckWait/3.
	AckWait time.Duration
	// ExtractTimeout bounds one job's work, extraction included (1s..30m).
	ExtractTimeout time.Duration
	// Retry is the NakWithDelay schedule after a failed attempt, indexed by
	// the delivery count (1..MaxDeliver entries, each 1ms..1h); the last
	// entry repeats.
	Retry []time.Duration
	// PullWait bounds one pull; it is also how long shutdown may wait for a
	// pull in flight (10ms..30s).
	PullWait time.Duration
	// MemoryDir, when set, enables the MEMORY.md sink under this directory.
	MemoryDir string
	// Extractors picks each job's extractor; nil means Heuristic for all.
	Extractors *Router
	// Logger receives warnings about failed attempts; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of event times and fact timestamps; nil means time.Now.
	Now func() time.Time
	// Metrics, when set, counts deliveries, jobs in flight, extraction time
	// and harvested facts.
	Metrics *telemetry.Metrics
}

// AckPendingPerWorker is the default MaxAckPending per worker: jobs a
// killed worker received and never settled keep their slot until AckWait
// ends, and with MaxAckPending equal to the workers a restarted worker
// received nothing until then. The headroom is room for about 31 workers'
// worth of such jobs; each worker still pulls only what it has free
// workers for (the processor's consumer uses the same rule).
const AckPendingPerWorker = 32

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		Workers:        4,
		MaxFacts:       8,
		AckWait:        45 * time.Second,
		ExtractTimeout: 2 * time.Minute,
		Retry:          []time.Duration{5 * time.Second, 30 * time.Second},
		PullWait:       2 * time.Second,
	}
}

// Validate reports the first field out of bounds.
func (c Config) Validate() error {
	bad := func(field, bounds string, got any) error {
		return fmt.Errorf("facts: %s must be %s, got %v", field, bounds, got)
	}
	switch {
	case c.Workers < 1 || c.Workers > 64:
		return bad("Workers", "1..64", c.Workers)
	case c.MaxAckPending != 0 && (c.MaxAckPending < c.Workers || c.MaxAckPending > 65536):
		return bad("MaxAckPending", fmt.Sprintf("0 or %d..65536", c.Workers), c.MaxAckPending)
	case c.MaxFacts < 1 || c.MaxFacts > 64:
		return bad("MaxFacts", "1..64", c.MaxFacts)
	case c.AckWait < time.Second || c.AckWait > 10*time.Minute:
		return bad("AckWait", "1s..10m", c.AckWait)
	case c.ExtractTimeout < time.Second || c.ExtractTimeout > 30*time.Minute:
		return bad("ExtractTimeout", "1s..30m", c.ExtractTimeout)
	case len(c.Retry) < 1 || len(c.Retry) > MaxDeliver:
		return bad("Retry", fmt.Sprintf("1..%d delays", MaxDeliver), c.Retry)
	case c.PullWait < 10*time.Millisecond || c.PullWait > 30*time.Second:
		return bad("PullWait", "10ms..30s", c.PullWait)
	}
	for _, d := range c.Retry {
		if d < time.Millisecond || d > time.Hour {
			return bad("Retry", "delays of 1ms..1h", c.Retry)
		}
	}
	return nil
}

// Worker consumes harvest jobs with the durable pull consumer "harvester" on
// MEMORY_HARVEST. For each job it harvests facts, appends them to the
// MEMORY.md sink when configured, publishes conversation.memory.flushed with
// Nats-Msg-Id = event_id, and only then acks. A failed attempt writes nothing
// and is retried with NakWithDelay; the third failed delivery publishes
// conversation.memory.failed and terminates the job. It never touches
// compaction state.
type Worker struct {
	js        jetstream.JetStream
	cfg       Config
	harvester *Harvester
	sink      *Sink
	log       *slog.Logger
}

// NewWorker validates cfg and returns a Worker that stores facts in store.
func NewWorker(js jetstream.JetStream, store *Store, cfg Config) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Extractors == nil {
		cfg.Extractors, _ = NewRouter(Heuristic{})
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	w := &Worker{
		js:        js,
		cfg:       cfg,
		harvester: &Harvester{Store: store, Extractors: cfg.Extractors, MaxFacts: cfg.MaxFacts},
		log:       cfg.Logger,
	}
	if cfg.MemoryDir != "" {
		w.sink = &Sink{Dir: cfg.MemoryDir}
	}
	return w, nil
}

// ConsumerConfig is the durable consumer the worker creates or updates.
func (w *Worker) ConsumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       topology.ConsumerHarvester,
		Description:   "memory harvest workers",
		FilterSubject: topology.SubjectHarvest,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       w.cfg.AckWait,
		MaxDeliver:    MaxDeliver,
		MaxAckPending: cmp.Or(w.cfg.MaxAckPending, AckPendingPerWorker*w.cfg.Workers),
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
}

// Run pulls and handles jobs until ctx ends, then stops pulling, lets the
// jobs in flight finish (each bounded by ExtractTimeout) and returns nil. It
// returns an error only when the consumer cannot be created at start.
func (w *Worker) Run(ctx context.Context) error {
	cons, err := w.js.CreateOrUpdateConsumer(ctx, topology.StreamHarvest, w.ConsumerConfig())
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return errcode.Wrap(errcode.Internal, "create the harvester consumer", err)
	}
	free := slots.New(w.cfg.Workers)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	// Jobs in flight finish after shutdown begins; their own timeout bounds them.
	workCtx := context.WithoutCancel(ctx)
	failures := 0
	for {
		n := free.TakeFree(ctx)
		if n == 0 {
			return nil
		}
		got, err := w.pull(ctx, workCtx, cons, n, free, &inflight)
		free.Release(n - got)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			failures = 0
			continue
		}
		failures++
		w.log.Warn("harvest: pull failed; retrying", "err", err, "failures", failures)
		if !pause.For(ctx, pullRetryDelay(failures)) {
			return nil
		}
		if c, err := w.js.CreateOrUpdateConsumer(ctx, topology.StreamHarvest, w.ConsumerConfig()); err == nil {
			cons = c
		}
	}
}

// pull fetches at most n jobs and starts a goroutine for each; every
// goroutine returns its slot when done. It reports how many arrived.
func (w *Worker) pull(ctx, workCtx context.Context, cons jetstream.Consumer, n int, free *slots.Slots, inflight *sync.WaitGroup) (int, error) {
	fctx, cancel := context.WithTimeout(ctx, w.cfg.PullWait)
	defer cancel()
	batch, err := cons.Fetch(n, jetstream.FetchContext(fctx))
	if err != nil {
		return 0, err
	}
	got := 0
	for msg := range batch.Messages() {
		got++
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			defer free.Release(1)
			w.handle(workCtx, msg)
		}()
	}
	if err := batch.Error(); err != nil && !isPullTimeout(err) {
		return got, err
	}
	return got, nil
}

func isPullTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages)
}

func pullRetryDelay(failures int) time.Duration {
	d := 50 * time.Millisecond << min(failures, 7)
	return min(d, 5*time.Second)
}

// handle runs one delivery of a job and settles it exactly once.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.ExtractTimeout)
	defer cancel()
	stop := w.heartbeat(ctx, msg)
	defer stop()

	delivered := uint64(1)
	if md, err := msg.Metadata(); err == nil {
		delivered = md.NumDelivered
	}
	w.cfg.Metrics.Delivered(topology.ConsumerHarvester, delivered)
	w.cfg.Metrics.InFlight(topology.ConsumerHarvester, 1)
	defer w.cfg.Metrics.InFlight(topology.ConsumerHarvester, -1)
	job, err := DecodeJob(msg.Data())
	if err != nil {
		// Bad input never gets better: report it and stop now.
		stop()
		w.giveUp(ctx, msg, partialJob(msg.Data()), err)
		return
	}
	if err := w.process(ctx, msg, job); err != nil {
		stop()
		w.log.Warn("harvest: attempt failed", "conversation_id", job.ConversationID,
			"head_entry_id", job.HeadEntryID, "delivery", delivered, "code", errcode.Code(err), "err", err)
		if delivered >= MaxDeliver {
			w.giveUp(ctx, msg, job, err)
			return
		}
		delay := w.cfg.Retry[min(int(delivered), len(w.cfg.Retry))-1]
		if err := msg.NakWithDelay(delay); err != nil {
			w.log.Warn("harvest: nak failed; the job returns after AckWait", "err", err)
		}
		return
	}
	stop()
	if err := msg.DoubleAck(ctx); err != nil {
		// The effect is idempotent: a redelivery re-stores the same slugs and
		// republishes the same event id.
		w.log.Warn("harvest: ack failed; the job may run again", "err", err)
	}
}

// process is one attempt: harvest, sink, publish the flushed event.
func (w *Worker) process(ctx context.Context, msg jetstream.Msg, job Job) error {
	start := time.Now()
	res, err := w.harvester.Harvest(ctx, job)
	w.cfg.Metrics.ModelCall("extractor", time.Since(start), err)
	if err != nil {
		return err
	}
	w.cfg.Metrics.Harvest(len(res.Facts), res.Duplicates, res.Redacted)
	if w.sink != nil {
		if _, err := w.sink.Append(job.Scope, res.Facts); err != nil {
			return errcode.Wrap(errcode.HarvestFailed, "append to MEMORY.md", err)
		}
	}
	ev := Flushed(job, res, w.cfg.Now())
	return w.publish(ctx, msg, ev.EventID, ev.Kind, topology.SubjectFlushed, ev)
}

// giveUp publishes memory.failed and acks the job: its outcome exists, so it
// is settled and no dead letter. Only a job whose failed event cannot be
// published is terminated, into the dead-letter stream. The failed event is
// retried briefly: after Term there is no redelivery to try it again.
func (w *Worker) giveUp(ctx context.Context, msg jetstream.Msg, job Job, cause error) {
	ev := Failed(job, cause, w.cfg.Now())
	if ev.HeadEntryID == "" {
		ev.EventID = "harvest-seq-" + streamSeq(msg) + ":" + ev.Kind
	}
	var err error
	for attempt := range 3 {
		if attempt > 0 && !pause.For(ctx, time.Duration(attempt)*200*time.Millisecond) {
			break
		}
		if err = w.publish(ctx, msg, ev.EventID, ev.Kind, topology.SubjectMemoryFailed, ev); err == nil {
			break
		}
	}
	w.log.Warn("harvest: giving up", "conversation_id", job.ConversationID, "head_entry_id", job.HeadEntryID, "code", ev.Error.Code)
	if err == nil {
		if err := msg.Ack(); err != nil {
			w.log.Warn("harvest: ack of a given-up job failed", "err", err)
		}
		return
	}
	w.log.Error("harvest: cannot publish memory.failed; terminating the job, see the dead-letter stream", "event_id", ev.EventID, "err", err)
	if err := msg.TermWithReason("unsettled " + ev.Error.Code); err != nil {
		w.log.Warn("harvest: term failed", "err", err)
	}
}

func (w *Worker) publish(ctx context.Context, msg jetstream.Msg, id, kind, subject string, payload any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return errcode.Wrap(errcode.Internal, "encode "+kind+" event", err)
	}
	headers := map[string]string{topology.HeaderEventKind: kind}
	if tp := msg.Headers().Get(topology.HeaderTraceparent); tp != "" {
		headers[topology.HeaderTraceparent] = tp
	}
	rec := outbox.Record{Subject: subject, EventID: id, Headers: headers, Payload: data}
	if err := outbox.Publish(ctx, w.js, rec); err != nil {
		return errcode.Wrap(errcode.HarvestFailed, "publish "+kind, err)
	}
	return nil
}

// heartbeat tells the server the job is still running every AckWait/3 until
// the returned stop is called (stop may be called more than once).
func (w *Worker) heartbeat(ctx context.Context, msg jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(w.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

// partialJob reads what it can of an undecodable job, so its failed event
// names the conversation when possible.
func partialJob(data []byte) Job {
	var j Job
	_ = json.Unmarshal(data, &j)
	return j
}

func streamSeq(msg jetstream.Msg) string {
	if md, err := msg.Metadata(); err == nil {
		return strconv.FormatUint(md.Sequence.Stream, 10)
	}
	return "unknown"
}
