package consumer

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The attempt's bound ends the work, but the calls made under it see no
// deadline (so each JetStream call takes the client's own timeout), and
// withAttemptBound shows it again.
func TestPerCallHidesTheAttemptBoundButKeepsIt(t *testing.T) {
	bound := time.Now().Add(200 * time.Millisecond)
	parent, cancel := context.WithDeadline(context.Background(), bound)
	defer cancel()
	ctx := perCall(parent)
	if dl, ok := ctx.Deadline(); ok {
		t.Fatalf("perCall shows the deadline %s", dl)
	}
	long, cancelLong := withAttemptBound(ctx)
	defer cancelLong()
	if dl, ok := long.Deadline(); !ok || !dl.Equal(bound) {
		t.Fatalf("withAttemptBound: deadline %s, %v; want %s", dl, ok, bound)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the hidden bound did not end the context")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(long.Err(), context.DeadlineExceeded) {
		t.Fatalf("errors %v, %v; want deadline exceeded", ctx.Err(), long.Err())
	}
	if c := perCall(context.Background()); c != context.Background() {
		t.Errorf("perCall of a context without a deadline changed it")
	}
}
