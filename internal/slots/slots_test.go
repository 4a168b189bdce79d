package slots

import (
	"context"
	"testing"
	"time"
)

func TestTakeFreeTakesEveryFreeSlot(t *testing.T) {
	s := New(4)
	if n := s.TakeFree(context.Background()); n != 4 {
		t.Fatalf("took %d of 4 free slots", n)
	}
	s.Release(3)
	if n := s.TakeFree(context.Background()); n != 3 {
		t.Fatalf("took %d of 3 released slots", n)
	}
}

func TestTakeFreeWaitsWhileNoneIsFree(t *testing.T) {
	s := New(1)
	s.TakeFree(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if n := s.TakeFree(ctx); n != 0 {
		t.Fatalf("took %d slots while none was free", n)
	}
	done := make(chan int)
	go func() { done <- s.TakeFree(context.Background()) }()
	s.Release(1)
	select {
	case n := <-done:
		if n != 1 {
			t.Fatalf("took %d slots after one release", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a released slot was not taken")
	}
}

func TestTakeFreeReturnsZeroWhenCancelled(t *testing.T) {
	s := New(1)
	s.TakeFree(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n := s.TakeFree(ctx); n != 0 {
		t.Fatalf("took %d slots after cancellation", n)
	}
}
