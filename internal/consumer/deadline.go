package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/cairnhq/cairn/errcode"
)

// deadline bounds the request's work by its deadline_at and by the attempt
// timeout. Work cut off by deadline_at is deadline_exceeded (permanent);
// work cut off by the attempt timeout is transient and retried.
//
// The bound ends the work when it passes, but is not shown to the calls
// the work makes (perCall): each JetStream call then waits at most the
// client's default timeout (5 s) instead of the attempt's minutes. A
// request whose reply is lost (sent to a server or a group leader that
// froze) fails that call in seconds and is retried, rather than holding
// its worker until the attempt ends. Waits meant to last longer take the
// bound back with withAttemptBound.
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
		err := next(perCall(ctx), d)
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

// hiddenBound is a context that ends with its parent but reports no
// deadline, so that the JetStream client bounds each call by its default
// timeout. The parent's deadline stays readable by withAttemptBound.
type hiddenBound struct{ context.Context }

func (hiddenBound) Deadline() (time.Time, bool) { return time.Time{}, false }

type attemptBoundKey struct{}

// perCall hides ctx's deadline from the calls made under it.
func perCall(ctx context.Context) context.Context {
	dl, ok := ctx.Deadline()
	if !ok {
		return ctx
	}
	return hiddenBound{context.WithValue(ctx, attemptBoundKey{}, dl)}
}

// withAttemptBound shows the attempt's deadline again, for a wait that may
// rightly outlast one call's timeout (reading a large events object).
func withAttemptBound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Value(attemptBoundKey{}).(time.Time); ok {
		return context.WithDeadline(ctx, dl)
	}
	return context.WithCancel(ctx)
}
