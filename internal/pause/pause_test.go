package pause

import (
	"context"
	"testing"
	"time"
)

func TestForWaitsUnlessTheContextEnds(t *testing.T) {
	if !For(context.Background(), time.Millisecond) {
		t.Fatal("a wait with a live context reported it ended")
	}
	if !For(context.Background(), 0) {
		t.Fatal("a zero wait with a live context reported it ended")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if For(ctx, time.Hour) {
		t.Fatal("a wait on an ended context reported it live")
	}
	if For(ctx, -time.Second) {
		t.Fatal("a negative wait on an ended context reported it live")
	}
}
