package consumer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/internal/pause"
	"github.com/cairnhq/cairn/internal/slots"
	"github.com/nats-io/nats.go/jetstream"
)

// Bounds of the wait between failed pulls.
const (
	minPullRetry = 50 * time.Millisecond
	maxPullRetry = 5 * time.Second
)

// pull fetches requests until ctx ends and hands each to a worker. Every
// fetch asks for exactly the worker slots that are free at that moment, and
// several fetches may be outstanding at once, so no message waits in a
// buffer behind a busy worker while its AckWait runs. A failed fetch (server
// restart, deleted consumer, leader change) makes the next pull re-create
// the consumer first, after a bounded, growing pause.
func (p *Processor) pull(ctx, workCtx context.Context, inflight *sync.WaitGroup) {
	free := slots.New(p.cfg.Workers)
	var fetches sync.WaitGroup
	defer fetches.Wait()
	var broken atomic.Bool
	var cons jetstream.Consumer
	failures := 0
	for ctx.Err() == nil {
		if cons == nil || broken.Swap(false) {
			c, err := p.js.CreateOrUpdateConsumer(ctx, p.cfg.Stream, p.cfg.ConsumerConfig())
			if err != nil {
				failures++
				p.log.Warn("consumer: cannot create the durable consumer; retrying", "err", err)
				pause.For(ctx, retryDelay(failures))
				continue
			}
			cons = c
		}
		n := free.TakeFree(ctx)
		if n == 0 {
			return
		}
		fetchCtx, cancelFetch := context.WithTimeout(ctx, p.cfg.PullWait)
		batch, err := cons.Fetch(n, jetstream.FetchContext(fetchCtx))
		if err != nil {
			cancelFetch()
			free.Release(n)
			p.log.Warn("consumer: pull request failed", "err", err)
			failures++
			broken.Store(true)
			pause.For(ctx, retryDelay(failures))
			continue
		}
		fetches.Add(1)
		go func() {
			defer fetches.Done()
			defer cancelFetch()
			got := p.dispatch(workCtx, batch, free, inflight)
			free.Release(n - got)
			if err := batch.Error(); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				p.log.Warn("consumer: pull failed; re-creating the consumer", "err", err)
				broken.Store(true)
				pause.For(ctx, retryDelay(2))
			}
		}()
		failures = 0
	}
}

// dispatch starts a worker for each message of batch; each worker returns
// its slot when it is done. It reports how many messages arrived.
func (p *Processor) dispatch(workCtx context.Context, batch jetstream.MessageBatch, free *slots.Slots, inflight *sync.WaitGroup) int {
	got := 0
	for msg := range batch.Messages() {
		got++
		inflight.Add(1)
		go func() {
			defer free.Release(1)
			defer inflight.Done()
			if p.isCrashed() {
				return // a killed process settles nothing
			}
			d := newDelivery(msg)
			p.metrics.Delivered(p.cfg.Durable, d.delivered)
			p.metrics.InFlight(p.cfg.Durable, 1)
			defer p.metrics.InFlight(p.cfg.Durable, -1)
			_ = p.handle(workCtx, d)
		}()
	}
	return got
}

func retryDelay(failures int) time.Duration {
	d := minPullRetry << min(failures, 10)
	return min(d, maxPullRetry)
}
