package consumer

import (
	"context"

	"github.com/cairnhq/cairn/internal/errcode"
)

// decode reads the request envelope and checks its Nats-Msg-Id: a message
// without one is accepted (deduplicated by request_id alone), one whose id
// differs from its request_id is invalid_compaction_request.
func (p *Processor) decode(next handler) handler {
	return func(ctx context.Context, d *delivery) error {
		req, err := decodeEnvelope(d.body)
		d.req = req
		if err != nil {
			return err
		}
		if d.msgID != "" && d.msgID != req.RequestID {
			return errcode.WithDetails(errcode.InvalidRequest, "Nats-Msg-Id differs from request_id",
				map[string]any{"nats_msg_id": d.msgID, "request_id": req.RequestID})
		}
		return next(ctx, d)
	}
}
