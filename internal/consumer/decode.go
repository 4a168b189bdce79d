package consumer

import (
	"context"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
)

// decode reads the request envelope and checks its Nats-Msg-Id: a message
// without one is accepted (deduplicated by request_id alone), one whose id
// breaks the name rule or differs from its request_id is
// invalid_compaction_request. An unusable Nats-Msg-Id is refused before
// the body is read, so the failed event is named after the body.
func (p *Processor) decode(next handler) handler {
	return func(ctx context.Context, d *delivery) error {
		if d.msgID != "" && !events.ValidName(d.msgID) {
			e := events.InvalidName("Nats-Msg-Id", "Nats-Msg-Id is not a valid request id")
			e.Details["bytes"] = int64(len(d.msgID))
			return e
		}
		req, err := decodeEnvelope(d.body)
		d.req = req
		if err != nil {
			return err
		}
		if d.msgID != "" && d.msgID != req.RequestID {
			return errcode.WithDetails(errcode.InvalidRequest, "Nats-Msg-Id differs from request_id",
				map[string]any{"field": "Nats-Msg-Id", "rule": "match", "nats_msg_id": d.msgID, "request_id": req.RequestID})
		}
		if err := checkRehydrationSize(req, p.maxPayload()); err != nil {
			return err
		}
		return next(ctx, d)
	}
}
