package consumer

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/cairnhq/cairn/errcode"
)

// recoverPanics turns a panic below it into an internal_error, so that one
// bad request cannot stop the processor.
func recoverPanics(next handler) handler {
	return func(ctx context.Context, d *delivery) (err error) {
		defer func() {
			if r := recover(); r != nil {
				// details says what failed (the panic's value, which a failed
				// event bounds); the stack stays in the log, through e.Err.
				e := errcode.WithDetails(errcode.Internal, "the processor failed on this request",
					map[string]any{"panic": fmt.Sprint(r)})
				e.Err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
				err = e
			}
		}()
		return next(ctx, d)
	}
}
