package consumer

import (
	"context"
	"errors"

	"github.com/cairnhq/cairn/internal/errcode"
)

// deadline bounds the request's work by its deadline_at and by the attempt
// timeout. Work cut off by deadline_at is deadline_exceeded (permanent);
// work cut off by the attempt timeout is transient and retried.
func (p *Processor) deadline(next handler) handler {
	return func(ctx context.Context, d *delivery) error {
		dl := d.req.deadline
		if !dl.IsZero() && !p.now().Before(dl) {
			return deadlineExceeded(d)
		}
		ctx, cancel := context.WithTimeout(ctx, p.cfg.AttemptTimeout)
		defer cancel()
		if !dl.IsZero() {
			var cancelDL context.CancelFunc
			ctx, cancelDL = context.WithDeadline(ctx, dl)
			defer cancelDL()
		}
		err := next(ctx, d)
		if err != nil && !dl.IsZero() && !p.now().Before(dl) &&
			(errors.Is(err, context.DeadlineExceeded) || errcode.Code(err) == errcode.ProviderError) {
			return deadlineExceeded(d)
		}
		return err
	}
}

func deadlineExceeded(d *delivery) error {
	return errcode.WithDetails(errcode.DeadlineExceeded, "the request's deadline passed before it completed",
		map[string]any{"deadline_at": d.req.deadline.UTC().Format("2006-01-02T15:04:05Z07:00")})
}
