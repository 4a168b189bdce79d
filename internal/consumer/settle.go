package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/topology"
)

// settleTimeout bounds the writes that settle a delivery, which run even
// when the request's own context has ended.
const settleTimeout = 10 * time.Second

// settle is the outermost middleware: it classifies the handler's result
// once (Classify) and acts on it. A permanent failure is recorded in the
// ledger and published as a failed event before the message is terminated;
// if that cannot be done the message is Nak'd instead, so no failure ends
// silently.
func (p *Processor) settle(next handler) handler {
	return func(ctx context.Context, d *delivery) error {
		err := next(ctx, d)
		switch {
		case p.isCrashed():
			return errors.Join(errCrashed, err) // a killed process settles nothing
		case err != nil && ctx.Err() != nil && !errors.Is(err, errCrashed):
			err = errors.Join(errShutdown, err)
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel()
		dec := Classify(err, d.delivered, p.cfg.MaxDeliver, p.cfg.NakBackoff, p.now())
		switch dec.Action {
		case Ack:
			p.metrics.Request(d.status, "")
			// A plain Ack, not DoubleAck: the outcome is in the ledger
			// before the ack, so a lost ack only means a redelivery that
			// replays it, which is all a failed DoubleAck could lead to
			// either. Waiting for the server's confirmation added a round
			// trip to every worker's cycle.
			if aerr := d.msg.Ack(); aerr != nil {
				p.log.Warn("consumer: ack not sent; a redelivery will find the outcome", "err", aerr)
			}
		case Term:
			if ferr := p.fail(sctx, d, dec.Err); ferr != nil {
				p.log.Warn("consumer: could not record a failure; redelivering", "code", dec.Err.Code, "err", ferr)
				_ = d.msg.NakWithDelay(backoffFor(d.delivered, p.cfg.NakBackoff))
				return err
			}
			p.metrics.Request(statusFailed, dec.Err.Code)
			_ = d.msg.TermWithReason(dec.Err.Code)
		case Nak:
			p.log.Debug("consumer: transient failure; redelivering", "delay", dec.Delay, "err", err)
			_ = d.msg.NakWithDelay(dec.Delay)
		case Abandon:
		}
		if dec.Action == Term {
			p.log.Info("consumer: request failed", "code", dec.Err.Code, "request_id", requestIDOf(d), "err", err)
		}
		return err
	}
}

// fail records the failure as the request's outcome (unless the body
// conflicted with the ledger's, which belongs to the original) and publishes
// the failed event.
func (p *Processor) fail(ctx context.Context, d *delivery, e *errcode.Error) error {
	rec, err := p.failedRecord(d, e)
	if err != nil {
		return err
	}
	if d.entry != nil && !d.conflict {
		err := p.updateEntry(ctx, d, func(en *ledger.Entry) {
			en.State, en.Outcome, en.Retryable = ledger.Failed, &rec, e.Retryable
			closeAttempt(en, nil)
		})
		if err != nil {
			return err
		}
	}
	return outbox.Publish(ctx, p.js, rec)
}

// failedRecord builds the failed event. Its id is deterministic: from the
// request id and ledger round; for a conflicting body from the request id
// and the body's hash; for an undecodable message from its Nats-Msg-Id or,
// without one, the body's hash.
func (p *Processor) failedRecord(d *delivery, e *errcode.Error) (outbox.Record, error) {
	rid := requestIDOf(d)
	var id string
	switch {
	case d.conflict:
		id = rid + ":conflict:" + ledger.ContentHash(d.body)[:16]
	case d.entry != nil:
		id = eventID(rid, kindFailed, d.entry.Round)
	case rid != "":
		id = eventID(rid, kindFailed, 0)
	default:
		id = "msg-" + ledger.ContentHash(d.body)[:32] + ":" + kindFailed
	}
	ev := events.Failed{Header: header(d.req, rid, id, kindFailed, p.now()), Error: wireError(e), StreamSequence: d.streamSeq}
	return record(topology.SubjectFailed, id, ev, d.traceparent)
}

// requestIDOf is the request id a failed event names: the request's, or for
// a message that could not be decoded, its Nats-Msg-Id.
func requestIDOf(d *delivery) string {
	if d.req != nil && d.req.RequestID != "" && (d.msgID == "" || d.msgID == d.req.RequestID) {
		return d.req.RequestID
	}
	return d.msgID
}
