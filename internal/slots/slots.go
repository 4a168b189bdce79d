// Package slots bounds concurrent work with a fixed number of slots that a
// pull loop takes in bulk: it asks the server for exactly as many messages
// as it holds free slots, and every worker gives its slot back when done.
package slots

import "context"

// Slots is a pool of work slots; all start free. Safe for concurrent use.
type Slots struct{ free chan struct{} }

// New returns n free slots (n ≥ 1).
func New(n int) *Slots {
	s := &Slots{free: make(chan struct{}, n)}
	s.Release(n)
	return s
}

// TakeFree waits for one free slot, then takes every other free slot
// without waiting, and returns how many it took: 0 when ctx ended first.
func (s *Slots) TakeFree(ctx context.Context) int {
	select {
	case <-ctx.Done():
		return 0
	case <-s.free:
	}
	n := 1
	for {
		select {
		case <-s.free:
			n++
		default:
			return n
		}
	}
}

// Release gives back n taken slots.
func (s *Slots) Release(n int) {
	for range n {
		s.free <- struct{}{}
	}
}
