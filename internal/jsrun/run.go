// Package jsrun runs a handler over a durable JetStream pull consumer, with
// as many messages in flight as it has free workers.
package jsrun

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/internal/pause"
	"github.com/cairnhq/cairn/internal/slots"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Handler works on one delivery and decides how it is settled; the runner
// sends the settle. ctx ends when a shutdown's drain gives up on the work.
// Handlers run concurrently, up to Config.Workers at once.
type Handler func(ctx context.Context, msg jetstream.Msg) Decision

// Metrics receives the runner's measurements. Implementations must be safe
// for concurrent use.
type Metrics interface {
	// Delivered records a received message's delivery count.
	Delivered(consumer string, numDelivered uint64)
	// InFlight moves the gauge of messages a consumer's handlers hold.
	InFlight(consumer string, delta int)
}

// Config configures a Runner. Its users validate their own bounds; New
// checks only what the runner cannot work without.
type Config struct {
	// Stream is the stream the consumer reads.
	Stream string
	// Consumer is the durable consumer, created or updated on start and
	// whenever it is lost. Durable must be set; a running handler sends
	// InProgress every AckWait/3.
	Consumer jetstream.ConsumerConfig
	// Workers bounds the handlers running at once. No pull asks for more
	// messages than there are free workers, so no message waits in a buffer
	// while its AckWait runs.
	Workers int
	// PullWait bounds one pull.
	PullWait time.Duration
	// DrainTimeout bounds how long Run waits for running handlers once its
	// context ends; then their context is cancelled, and a message they do
	// not settle as done (or abandon) is Nak'd at once.
	DrainTimeout time.Duration
	// Logger receives operational logs (nil: discarded).
	Logger *slog.Logger
	// Metrics receives measurements (nil: none).
	Metrics Metrics
}

// Runner pulls from one durable consumer and runs a handler on each message.
type Runner struct {
	js      jetstream.JetStream
	cfg     Config
	handle  Handler
	log     *slog.Logger
	metrics Metrics
}

// New returns a runner of h over cfg.Consumer. It does no I/O.
func New(js jetstream.JetStream, cfg Config, h Handler) (*Runner, error) {
	if js == nil || h == nil || cfg.Stream == "" || cfg.Consumer.Durable == "" ||
		cfg.Consumer.AckWait <= 0 || cfg.Workers < 1 || cfg.PullWait <= 0 || cfg.DrainTimeout < 0 {
		return nil, errors.New("jsrun: needs JetStream, a handler, Stream, Consumer.Durable, a positive Consumer.AckWait, Workers and PullWait")
	}
	r := &Runner{js: js, cfg: cfg, handle: h, log: cfg.Logger, metrics: cfg.Metrics}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.metrics == nil {
		r.metrics = noMetrics{}
	}
	return r, nil
}

// Run pulls and handles messages until ctx ends, then drains: it stops
// pulling, waits up to DrainTimeout for running handlers, then cancels
// them and waits for them to return. It never gives up on the consumer: a
// durable that cannot be created, or is deleted while it runs, is created
// again after a growing pause (50 ms doubling to 5 s), each failure logged.
func (r *Runner) Run(ctx context.Context) {
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var running sync.WaitGroup
	r.pull(ctx, workCtx, &running)

	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	timer := time.NewTimer(r.cfg.DrainTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		stopWork()
		<-done
	}
}

// pull fetches until ctx ends. Every fetch asks for exactly the workers
// free at that moment, and several fetches may be outstanding at once. A
// failed fetch, at once or at its end, marks the consumer lost; the next
// round binds it again, after a pause that grows with the failures since
// the last clean fetch, so a consumer that keeps failing is never retried
// in a tight loop.
func (r *Runner) pull(ctx, workCtx context.Context, running *sync.WaitGroup) {
	free := slots.New(r.cfg.Workers)
	var fetches sync.WaitGroup
	defer fetches.Wait()
	var failures atomic.Int64
	var lost atomic.Bool
	fail := func(err error) {
		r.log.Warn("jsrun: pull failed; binding the consumer again", "durable", r.cfg.Consumer.Durable, "err", err, "failures", failures.Add(1))
		lost.Store(true)
	}
	var cons jetstream.Consumer
	for ctx.Err() == nil {
		if cons == nil || lost.Swap(false) {
			if cons = r.bind(ctx, &failures); cons == nil {
				return
			}
		}
		n := free.TakeFree(ctx)
		if n == 0 {
			return
		}
		fetchCtx, cancel := context.WithTimeout(ctx, r.cfg.PullWait)
		batch, err := cons.Fetch(n, jetstream.FetchContext(fetchCtx))
		if err != nil {
			cancel()
			free.Release(n)
			if ctx.Err() == nil {
				fail(err)
			}
			continue
		}
		fetches.Go(func() {
			defer cancel()
			free.Release(n - r.dispatch(workCtx, batch, free, running))
			switch err := batch.Error(); {
			case err == nil || endOfPull(err):
				failures.Store(0)
			case ctx.Err() == nil:
				fail(err)
			}
		})
	}
}

// bind creates or updates the durable consumer, retrying until it exists
// or ctx ends (then it returns nil). After failures it pauses first.
func (r *Runner) bind(ctx context.Context, failures *atomic.Int64) jetstream.Consumer {
	for {
		n := failures.Load()
		if n > 0 && !pause.For(ctx, retryDelay(n)) {
			return nil
		}
		c, err := r.js.CreateOrUpdateConsumer(ctx, r.cfg.Stream, r.cfg.Consumer)
		if err == nil {
			if n > 0 {
				r.log.Info("jsrun: consumer bound again", "durable", r.cfg.Consumer.Durable, "failures", n)
			}
			return c
		}
		if ctx.Err() != nil {
			return nil
		}
		r.log.Warn("jsrun: cannot create the durable consumer; retrying", "durable", r.cfg.Consumer.Durable, "err", err, "failures", failures.Add(1))
	}
}

// dispatch starts a worker for each message of batch; each worker returns
// its slot when it is done. It reports how many messages arrived.
func (r *Runner) dispatch(workCtx context.Context, batch jetstream.MessageBatch, free *slots.Slots, running *sync.WaitGroup) int {
	got := 0
	for msg := range batch.Messages() {
		got++
		running.Go(func() {
			defer free.Release(1)
			r.work(workCtx, msg)
		})
	}
	return got
}

// endOfPull reports whether a pull ended because it asked for nothing more
// (its wait ran out, or shutdown), not because it failed.
func endOfPull(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages)
}

// Bounds of the pause between failed pulls or binds.
const (
	minRetry = 50 * time.Millisecond
	maxRetry = 5 * time.Second
)

func retryDelay(failures int64) time.Duration {
	return min(minRetry<<min(failures, 10), maxRetry)
}

type noMetrics struct{}

func (noMetrics) Delivered(string, uint64) {}
func (noMetrics) InFlight(string, int)     {}
