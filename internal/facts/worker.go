package facts

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/jsrun"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/pause"
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
	// Logger receives warnings about failed attempts (nil: discarded).
	Logger *slog.Logger
	// Now is the clock of event times and fact timestamps; nil means time.Now.
	Now func() time.Time
	// Metrics, when set, counts deliveries, jobs in flight, extraction time
	// and harvested facts.
	Metrics *telemetry.Metrics
	// Requests reads the cut entries of pointer jobs (version 2) from their
	// request; without it such a job fails with harvest_failed.
	Requests RequestReader
}

// RequestReader reads the cut events of a compaction from the request that
// made it: the request at requestSeq in COMPACT_REQUESTS, whose request_id
// must be requestID. Entries are in lane order, unredacted.
type RequestReader interface {
	CutEntries(ctx context.Context, requestSeq uint64, requestID string, entryIDs []string) ([]Entry, error)
}

// AckPendingPerWorker is the default MaxAckPending per worker, the
// processor's rule (jsrun.AckPendingPerWorker says why).
const AckPendingPerWorker = jsrun.AckPendingPerWorker

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		Workers:        4,
		MaxFacts:       32,
		AckWait:        10 * time.Second,
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
// conversation.memory.failed and acks the job. It never touches compaction
// state. A jsrun.Runner pulls, heartbeats and settles its jobs.
type Worker struct {
	js        jetstream.JetStream
	cfg       Config
	harvester *Harvester
	sink      *Sink
	log       *slog.Logger
	runner    *jsrun.Runner
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
		cfg.Logger = slog.New(slog.DiscardHandler)
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
	run := jsrun.Config{
		Stream: topology.StreamHarvest, Consumer: w.ConsumerConfig(), Workers: cfg.Workers, PullWait: cfg.PullWait,
		// Every job in flight at shutdown ends by its own ExtractTimeout first.
		DrainTimeout: cfg.ExtractTimeout, Logger: cfg.Logger, Metrics: cfg.Metrics, // nil-safe
	}
	var err error
	if w.runner, err = jsrun.New(js, run, w.handle); err != nil {
		return nil, err
	}
	return w, nil
}

// ConsumerConfig is the durable consumer the worker creates or updates.
func (w *Worker) ConsumerConfig() jetstream.ConsumerConfig {
	return jsrun.Durable(topology.ConsumerHarvester, "memory harvest workers", topology.SubjectHarvest,
		w.cfg.AckWait, MaxDeliver, cmp.Or(w.cfg.MaxAckPending, AckPendingPerWorker*w.cfg.Workers))
}

// Run pulls and handles jobs until ctx ends, then stops pulling, lets the
// jobs in flight finish (each bounded by ExtractTimeout) and returns nil.
// A harvester consumer that cannot be created, or is deleted while it runs,
// is created again after a growing pause, for ever (jsrun.Runner.Run).
func (w *Worker) Run(ctx context.Context) error {
	w.runner.Run(ctx)
	return nil
}

// handle runs one delivery of a job and decides how it is settled: acked
// once its event is published, retried with NakWithDelay, or given up.
func (w *Worker) handle(ctx context.Context, msg jsrun.Msg) (d jsrun.Decision) {
	telemetry.Stage(ctx, telemetry.StageHarvest, func(ctx context.Context) { d = w.attempt(ctx, msg) })
	return d
}

// attempt is handle's work, under the harvest's profile label.
func (w *Worker) attempt(ctx context.Context, msg jsrun.Msg) jsrun.Decision {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.ExtractTimeout)
	defer cancel()
	job, err := DecodeJob(msg.Data())
	if err != nil {
		// Bad input never gets better: report it and stop now.
		return w.giveUp(ctx, msg, partialJob(msg.Data()), err)
	}
	if err := w.process(ctx, msg, job); err != nil {
		w.log.Warn("harvest: attempt failed", "conversation_id", job.ConversationID,
			"head_entry_id", job.HeadEntryID, "delivery", msg.Delivered, "code", errcode.Code(err), "err", err)
		if msg.Delivered >= MaxDeliver {
			return w.giveUp(ctx, msg, job, err)
		}
		return jsrun.Decision{Action: jsrun.Nak, Delay: w.cfg.Retry[min(int(msg.Delivered), len(w.cfg.Retry))-1]}
	}
	// Confirmed, though the effect is idempotent: a redelivery re-stores the
	// same slugs and republishes the same event id.
	return jsrun.Decision{Action: jsrun.AckSync}
}

// process is one attempt: harvest, sink, publish the flushed event.
func (w *Worker) process(ctx context.Context, msg jetstream.Msg, job Job) error {
	job, err := w.expand(ctx, job)
	if err != nil {
		return err
	}
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

// expand reads a pointer job's cut entries from its request: every one of
// them, which the extractor reads whole.
func (w *Worker) expand(ctx context.Context, job Job) (Job, error) {
	if job.V != PointerJobVersion {
		return job, nil
	}
	if w.cfg.Requests == nil {
		return job, errcode.New(errcode.HarvestFailed, "harvest job points to its request, and this worker has no reader of requests")
	}
	entries, err := w.cfg.Requests.CutEntries(ctx, job.RequestSeq, job.HeadEntryID, job.EntryIDs)
	if err != nil {
		return job, err
	}
	job.Entries = entries
	return job, nil
}

// giveUp publishes memory.failed and acks the job: its outcome exists, so it
// is settled and no dead letter. Only a job whose failed event cannot be
// published is terminated, into the dead-letter stream. The failed event is
// retried briefly: after Term there is no redelivery to try it again.
func (w *Worker) giveUp(ctx context.Context, msg jsrun.Msg, job Job, cause error) jsrun.Decision {
	ev := Failed(job, cause, w.cfg.Now())
	if seq := "unknown"; ev.HeadEntryID == "" {
		if msg.StreamSeq > 0 {
			seq = strconv.FormatUint(msg.StreamSeq, 10)
		}
		ev.EventID = "harvest-seq-" + seq + ":" + ev.Kind
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
		return jsrun.Decision{Action: jsrun.Ack}
	}
	w.log.Error("harvest: cannot publish memory.failed; terminating the job, see the dead-letter stream", "event_id", ev.EventID, "err", err)
	return jsrun.Decision{Action: jsrun.Term, Reason: "unsettled " + ev.Error.Code}
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

// partialJob reads what it can of an undecodable job, so its failed event
// names the conversation when possible.
func partialJob(data []byte) Job {
	var j Job
	_ = json.Unmarshal(data, &j)
	return j
}
