// Package jsrun runs a handler over a durable JetStream pull consumer, with
// as many messages in flight as it has free workers.
package jsrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/internal/pause"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Handler works on one delivery and decides how it is settled; the runner
// sends the settle. ctx ends when a shutdown's drain gives up on the work.
// Handlers run concurrently, up to Config.Workers at once.
type Handler func(ctx context.Context, msg Msg) Decision

// Msg is one delivery: the message and what its metadata says.
type Msg struct {
	jetstream.Msg
	Delivered uint64 // the delivery count, 1 for the first
	StreamSeq uint64 // 0 when the metadata cannot be read
}

// Decision is a handler's verdict on one delivery. The zero Decision
// abandons it.
type Decision struct {
	Action Action
	Delay  time.Duration // Nak only
	Reason string        // Term only
}

// Action is how a delivery is settled.
type Action string

// Actions. Abandon settles nothing: the server redelivers after AckWait
// and dead-letters the message once MaxDeliver deliveries are spent. Term
// stops redeliveries; the server's advisory dead-letters the message.
const (
	Abandon Action = ""
	Ack     Action = "ack"
	AckSync Action = "ack_sync" // Ack confirmed by the server (DoubleAck)
	Nak     Action = "nak"
	Term    Action = "term"
)

// Metrics receives the runner's measurements. Implementations must be safe
// for concurrent use; a nil-safe one may record nothing.
type Metrics interface {
	Delivered(consumer string, numDelivered uint64) // each received message
	InFlight(consumer string, delta int)            // messages handlers hold
}

// AckPendingPerWorker is the default MaxAckPending per worker of Cairn's
// durables. Messages a killed process never settled stay pending until
// their AckWait ends (so do delayed Naks): with MaxAckPending equal to the
// workers, a restarted process got nothing for a whole AckWait. Pulls stay
// bounded by free workers whatever it is.
const AckPendingPerWorker = 32

// Durable is a work consumer's configuration: explicit acks, every message
// from the start, never an InactiveThreshold (a durable must not expire).
func Durable(name, description, subject string, ackWait time.Duration, maxDeliver, maxAckPending int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable: name, Description: description, FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: ackWait, MaxDeliver: maxDeliver, MaxAckPending: maxAckPending, DeliverPolicy: jetstream.DeliverAllPolicy,
	}
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
	// messages than there are free workers: none waits in a buffer while
	// its AckWait runs.
	Workers int
	// PullWait bounds one pull.
	PullWait time.Duration
	// Gather is how long a pull may wait for more workers to come free,
	// until half the workers are, while the consumer has a backlog
	// (the last pull came back full) and Busy reports that the handlers
	// have more work than they can run at once. Every pull is a request
	// the server answers, so one pull for several messages replaces
	// several pulls of one; a worker kept free meanwhile costs nothing
	// when the handlers wait for the CPU anyway. Otherwise, and when Gather
	// is 0 or Busy nil, a pull goes out as soon as one worker is free.
	Gather time.Duration
	Busy   func() bool
	// DrainTimeout bounds how long Run waits for running handlers once its
	// context ends; then their context is cancelled, and a message they do
	// not settle as done (or abandon) is Nak'd at once.
	DrainTimeout time.Duration
	// Logger receives operational logs (nil: discarded).
	Logger *slog.Logger
	// Metrics receives measurements (required).
	Metrics Metrics
}

// Runner pulls from one durable consumer and runs a handler on each message.
type Runner struct {
	js     jetstream.JetStream
	cfg    Config
	handle Handler
	log    *slog.Logger
}

// New returns a runner of h over cfg.Consumer. It does no I/O.
func New(js jetstream.JetStream, cfg Config, h Handler) (*Runner, error) {
	if js == nil || h == nil || cfg.Stream == "" || cfg.Consumer.Durable == "" || cfg.Metrics == nil ||
		cfg.Consumer.AckWait <= 0 || cfg.Workers < 1 || cfg.PullWait <= 0 || cfg.DrainTimeout < 0 || cfg.Gather < 0 {
		return nil, errors.New("jsrun: needs JetStream, a handler, Stream, Consumer.Durable, a positive Consumer.AckWait, Workers, PullWait and Metrics, and no negative Gather")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{js: js, cfg: cfg, handle: h, log: cfg.Logger.With("durable", cfg.Consumer.Durable)}, nil
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
	select {
	case <-done:
	case <-time.After(r.cfg.DrainTimeout):
		stopWork()
		<-done
	}
}

// pull fetches until ctx ends. Every fetch asks for exactly the workers
// free at that moment (after gathering some under a backlog, see
// Config.Gather), and several fetches may be outstanding at once. A
// failed fetch, at once or at its end, marks the consumer lost; the next
// round binds it again, after a pause that grows with the failures since
// the last clean fetch, so a consumer that keeps failing is never retried
// in a tight loop.
func (r *Runner) pull(ctx, workCtx context.Context, running *sync.WaitGroup) {
	free := make(slots, r.cfg.Workers)
	free.release(r.cfg.Workers)
	var fetches sync.WaitGroup
	defer fetches.Wait()
	var failures atomic.Int64
	var lost, backlog atomic.Bool
	batch := max(1, r.cfg.Workers/2)
	fail := func(err error) {
		r.log.Warn("jsrun: pull failed; binding the consumer again", "err", err, "failures", failures.Add(1))
		lost.Store(true)
	}
	var cons jetstream.Consumer
	for ctx.Err() == nil {
		if cons == nil || lost.Swap(false) {
			if cons = r.bind(ctx, &failures); cons == nil {
				return
			}
		}
		n := free.take(ctx)
		if n == 0 {
			return
		}
		if n < batch && backlog.Load() && r.cfg.Busy != nil && r.cfg.Busy() {
			n += free.gather(ctx, batch-n, r.cfg.Gather)
		}
		fetchCtx, cancel := context.WithTimeout(ctx, r.cfg.PullWait)
		msgs, err := cons.Fetch(n, jetstream.FetchContext(fetchCtx))
		if err != nil {
			cancel()
			free.release(n)
			if ctx.Err() == nil {
				fail(err)
			}
			continue
		}
		fetches.Go(func() {
			defer cancel()
			got := r.dispatch(workCtx, msgs, free, running)
			free.release(n - got)
			backlog.Store(got == n)
			switch err := msgs.Error(); {
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
		if n > 0 && !pause.For(ctx, min(50*time.Millisecond<<min(n, 10), 5*time.Second)) {
			return nil
		}
		c, err := r.js.CreateOrUpdateConsumer(ctx, r.cfg.Stream, r.cfg.Consumer)
		if err == nil {
			if n > 0 {
				r.log.Info("jsrun: consumer bound again", "failures", n)
			}
			return c
		}
		if ctx.Err() != nil {
			return nil
		}
		r.log.Warn("jsrun: cannot create the durable consumer; retrying", "err", err, "failures", failures.Add(1))
	}
}

// endOfPull reports whether a pull ended because it asked for nothing more
// (its wait ran out, or shutdown), not because it failed.
func endOfPull(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages)
}

// dispatch starts a worker for each message of batch; each worker returns
// its slot when it is done. It reports how many messages arrived.
func (r *Runner) dispatch(workCtx context.Context, batch jetstream.MessageBatch, free slots, running *sync.WaitGroup) int {
	got := 0
	for msg := range batch.Messages() {
		got++
		running.Go(func() {
			defer free.release(1)
			r.work(workCtx, msg)
		})
	}
	return got
}

// work runs the handler on one message, sending InProgress while it runs,
// and settles the message as the handler decided.
func (r *Runner) work(ctx context.Context, jm jetstream.Msg) {
	msg := Msg{Msg: jm, Delivered: 1}
	if md, err := jm.Metadata(); err == nil {
		msg.Delivered, msg.StreamSeq = md.NumDelivered, md.Sequence.Stream
	}
	r.cfg.Metrics.Delivered(r.cfg.Consumer.Durable, msg.Delivered)
	r.cfg.Metrics.InFlight(r.cfg.Consumer.Durable, 1)
	defer r.cfg.Metrics.InFlight(r.cfg.Consumer.Durable, -1)

	stop := r.heartbeat(msg)
	dec := r.call(ctx, msg)
	stop() // no heartbeat may follow the settle
	if ctx.Err() != nil && dec.Action != Ack && dec.Action != AckSync && dec.Action != Abandon {
		dec = Decision{Action: Nak} // the drain gave up on it: hand it back at once
	}
	r.settle(msg, dec)
}

// call runs the handler. A panic that escapes it is logged and settles
// nothing, so one bad message cannot stop the process; handlers that want
// a panic to become a failure they report recover it themselves.
func (r *Runner) call(ctx context.Context, msg Msg) (dec Decision) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("jsrun: handler panicked; the message returns after AckWait", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			dec = Decision{Action: Abandon}
		}
	}()
	return r.handle(ctx, msg)
}

// heartbeat sends InProgress every AckWait/3 until stop is called, so slow
// work does not make the server redeliver the message.
func (r *Runner) heartbeat(msg jetstream.Msg) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(max(r.cfg.Consumer.AckWait/3, 100*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					r.log.Debug("jsrun: in-progress heartbeat failed", "err", err)
				}
			}
		}
	}()
	return func() { close(done); <-exited }
}

// settleTimeout bounds a DoubleAck's wait for the server.
const settleTimeout = 10 * time.Second

// settle sends the decided settle. One that is not sent leaves the message
// to return after AckWait, which every handler must tolerate.
func (r *Runner) settle(msg jetstream.Msg, dec Decision) {
	var err error
	switch dec.Action {
	case Abandon:
		return
	case Ack:
		err = msg.Ack()
	case AckSync:
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		defer cancel()
		err = msg.DoubleAck(ctx)
	case Nak:
		err = msg.NakWithDelay(dec.Delay)
	case Term:
		err = msg.TermWithReason(dec.Reason)
	}
	if err != nil {
		r.log.Warn("jsrun: settle not sent; the message returns after AckWait", "action", dec.Action, "err", err)
	}
}

// slots are the free workers; each worker gives its own back when done.
type slots chan struct{}

// take waits for one free slot, then takes every other free one without
// waiting, and returns how many it took: 0 when ctx ended first.
func (s slots) take(ctx context.Context) int {
	select {
	case <-ctx.Done():
		return 0
	case <-s:
	}
	for n := 1; ; n++ {
		select {
		case <-s:
		default:
			return n
		}
	}
}

// gather takes up to want more free slots, waiting at most wait for them,
// and returns how many it took.
func (s slots) gather(ctx context.Context, want int, wait time.Duration) int {
	if want <= 0 || wait <= 0 {
		return 0
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for n := 0; ; n++ {
		if n == want {
			return n
		}
		select {
		case <-s:
		case <-timer.C:
			return n
		case <-ctx.Done():
			return n
		}
	}
}

func (s slots) release(n int) {
	for range n {
		s <- struct{}{}
	}
}
