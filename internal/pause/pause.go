// Package pause waits for a while unless a context ends first: the wait
// between retries, pulls and paced publishes.
package pause

import (
	"context"
	"time"
)

// For waits d, or until ctx ends, and reports whether ctx is still live
// afterwards. A d of zero or less returns at once.
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
