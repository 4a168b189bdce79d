package jsrun

import (
	"context"
	"testing"
	"time"
)

func TestSlotsTakeTakesEveryFreeSlot(t *testing.T) {
	s := newSlots(4)
	if n := s.take(context.Background()); n != 4 {
		t.Fatalf("took %d of 4 free slots", n)
	}
	s.release(3)
	if n := s.take(context.Background()); n != 3 {
		t.Fatalf("took %d of 3 released slots", n)
	}
}

func TestSlotsTakeWaitsWhileNoneIsFree(t *testing.T) {
	s := newSlots(1)
	s.take(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if n := s.take(ctx); n != 0 {
		t.Fatalf("took %d slots while none was free", n)
	}
	done := make(chan int)
	go func() { done <- s.take(context.Background()) }()
	s.release(1)
	select {
	case n := <-done:
		if n != 1 {
			t.Fatalf("took %d slots after one release", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a released slot was not taken")
	}
}

func TestSlotsTakeReturnsZeroWhenCancelled(t *testing.T) {
	s := newSlots(1)
	s.take(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n := s.take(ctx); n != 0 {
		t.Fatalf("took %d slots after cancellation", n)
	}
}

func newSlots(n int) slots {
	s := make(slots, n)
	s.release(n)
	return s
}
