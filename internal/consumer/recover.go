package consumer

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/cairnhq/cairn/internal/errcode"
)

// recoverPanics turns a panic below it into an internal_error, so that one
// bad request cannot stop the processor.
func recoverPanics(next handler) handler {
	return func(ctx context.Context, d *delivery) (err error) {
		defer func() {
			if r := recover(); r != nil {
				e := errcode.New(errcode.Internal, "the processor failed on this request")
				e.Err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
				err = e
			}
		}()
		return next(ctx, d)
	}
}
