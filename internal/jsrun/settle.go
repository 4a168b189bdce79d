package jsrun

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Action is how a delivery is settled.
type Action int

// Actions.
const (
	// Abandon settles nothing: the server redelivers after AckWait, and
	// dead-letters the message once MaxDeliver deliveries are spent.
	Abandon Action = iota
	// Ack settles the message as done.
	Ack
	// AckSync is Ack confirmed by the server (DoubleAck).
	AckSync
	// Nak redelivers the message after Decision.Delay.
	Nak
	// Term stops the message's redeliveries with Decision.Reason; the
	// server's advisory puts it in the dead-letter stream.
	Term
)

func (a Action) String() string {
	return [...]string{"abandon", "ack", "ack_sync", "nak", "term"}[a]
}

// Decision is a handler's verdict on one delivery. The zero Decision
// abandons it.
type Decision struct {
	Action Action
	Delay  time.Duration // Nak only
	Reason string        // Term only
}

// settleTimeout bounds a DoubleAck's wait for the server.
const settleTimeout = 10 * time.Second

// work runs the handler on one message, sending InProgress while it runs,
// and settles the message as the handler decided.
func (r *Runner) work(ctx context.Context, msg jetstream.Msg) {
	durable := r.cfg.Consumer.Durable
	delivered := uint64(1)
	if md, err := msg.Metadata(); err == nil {
		delivered = md.NumDelivered
	}
	r.metrics.Delivered(durable, delivered)
	r.metrics.InFlight(durable, 1)
	defer r.metrics.InFlight(durable, -1)

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
func (r *Runner) call(ctx context.Context, msg jetstream.Msg) (dec Decision) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("jsrun: handler panicked; the message returns after AckWait",
				"durable", r.cfg.Consumer.Durable, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			dec = Decision{Action: Abandon}
		}
	}()
	return r.handle(ctx, msg)
}

// heartbeat sends InProgress every AckWait/3 until stop is called, so slow
// work does not make the server redeliver the message.
func (r *Runner) heartbeat(msg jetstream.Msg) (stop func()) {
	every := max(r.cfg.Consumer.AckWait/3, 100*time.Millisecond)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					r.log.Debug("jsrun: in-progress heartbeat failed", "durable", r.cfg.Consumer.Durable, "err", err)
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

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
		r.log.Warn("jsrun: settle not sent; the message returns after AckWait", "durable", r.cfg.Consumer.Durable, "action", dec.Action.String(), "err", err)
	}
}
