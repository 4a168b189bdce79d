package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/jsrun"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/outbox"
)

// settleTimeout bounds the writes that settle a delivery, which run even
// when the request's own context has ended.
const settleTimeout = 10 * time.Second

// settle is the outermost middleware: it classifies the handler's result
// once (Classify), acts on it, and leaves in d.settled how the runner
// settles the message. A permanent failure is recorded in the
// ledger and published as a failed event, and then the message is acked:
// its outcome exists, so it is settled and no dead letter. A failure that
// cannot be recorded is decided by ClassifyUnsettled: terminated at once
// (dead-lettered) when a retry cannot help, else redelivered soon, a
// bounded number of times. So nothing ends silently, and no message holds
// a worker, or for long a slot of MaxAckPending, for a failure it cannot
// record.
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
			d.settled = ack
		case Fail:
			if ferr := p.fail(sctx, d, dec.Err); ferr != nil {
				d.settled = p.unsettled(d, dec.Err, ferr)
				return err
			}
			p.metrics.Request(statusFailed, dec.Err.Code)
			p.log.Info("consumer: request failed", "code", dec.Err.Code, "request_id", logID(requestIDOf(d)), "err", err)
			d.settled = ack
		case Nak:
			p.log.Debug("consumer: transient failure; redelivering", "delay", dec.Delay, "err", err)
			d.settled = jsrun.Decision{Action: jsrun.Nak, Delay: dec.Delay}
		case Abandon, Term:
		}
		return err
	}
}

// ack settles a delivery whose outcome is recorded. A plain Ack, not
// DoubleAck: the outcome is in the ledger (or its event in the stream)
// before the ack, so a lost ack only means a redelivery that replays it,
// which is all a failed DoubleAck could lead to either. Waiting for the
// server's confirmation added a round trip to every worker's cycle.
var ack = jsrun.Decision{Action: jsrun.Ack}

// unsettled decides what becomes of a delivery whose failure e could not
// be recorded (ferr is why): see ClassifyUnsettled.
func (p *Processor) unsettled(d *delivery, e *errcode.Error, ferr error) jsrun.Decision {
	dec := ClassifyUnsettled(ferr, d.delivered, p.cfg.MaxDeliver)
	if dec.Action == Nak {
		p.log.Warn("consumer: could not record a failure; redelivering soon",
			"code", e.Code, "request_id", logID(requestIDOf(d)), "delivery", d.delivered, "delay", dec.Delay, "err", logErr(ferr))
		return jsrun.Decision{Action: jsrun.Nak, Delay: dec.Delay}
	}
	p.log.Error("consumer: could not record a failure; terminating the request, see the dead-letter stream",
		"code", e.Code, "request_id", logID(requestIDOf(d)), "stream_seq", d.streamSeq, "delivery", d.delivered, "err", logErr(ferr))
	return jsrun.Decision{Action: jsrun.Term, Reason: termReason(e.Code, ferr)}
}

// maxLogID bounds the ids and errors settle logs: a request id or
// Nats-Msg-Id can be as long as a message header (64 KiB).
const maxLogID = 256

func logID(id string) string {
	if len(id) <= maxLogID {
		return id
	}
	return id[:maxLogID] + "…"
}

func logErr(err error) string {
	return logID(err.Error())
}

// fail records the failure as the request's outcome (unless the body
// conflicted with the ledger's, which belongs to the original) and publishes
// the failed event.
func (p *Processor) fail(ctx context.Context, d *delivery, e *errcode.Error) error {
	rec, err := p.failedRecord(d, e)
	if err != nil {
		return err
	}
	if d.entry != nil && d.route != routeConflict {
		if err := p.markOutcomeInLedger(ctx, d); err != nil {
			return err
		}
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

// requestIDOf is the request id a failed event names: the request's, or for
// a message that could not be decoded, its Nats-Msg-Id.
func requestIDOf(d *delivery) string {
	if d.req != nil && d.req.RequestID != "" && (d.msgID == "" || d.msgID == d.req.RequestID) {
		return d.req.RequestID
	}
	return d.msgID
}
