package consumer

import (
	"sync"

	"github.com/cairnhq/cairn/internal/lanes"
)

// recentHeadLanes bounds the lanes recentHeads keeps (about 1 KB each).
const recentHeadLanes = 4096

// recentHeads keeps, per lane, the head this processor committed last, in
// the cleared form the relay wrote once the head's records were published,
// and that write's revision: the lane's next compaction in this process
// then starts from it without reading the head. A kept head is a guess
// that every later step checks: the head's compare-and-swap fails if the
// lane changed meanwhile (another replica, an operator), and a parent
// fence that fails against a kept head is checked again against the head
// read from the store (laneHead). A conflict forgets the lane.
type recentHeads struct {
	mu    sync.Mutex
	byKey map[string]*recentHead
	order []string // keys, oldest first
}

type recentHead struct {
	head      *lanes.Head // cleared form: no outbox records
	committed uint64      // the revision the processor committed
	cleared   uint64      // the revision of the relay's clear; 0 until then
}

func newRecentHeads() *recentHeads { return &recentHeads{byKey: map[string]*recentHead{}} }

// committed keeps head, committed at revision rev, until its clear.
func (r *recentHeads) committed(key string, head *lanes.Head, rev uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byKey[key]; !ok {
		r.order = append(r.order, key)
		for len(r.order) > recentHeadLanes {
			delete(r.byKey, r.order[0])
			r.order = r.order[1:]
		}
	}
	r.byKey[key] = &recentHead{head: head, committed: rev}
}

// cleared records that the relay replaced the value committed at revision
// from by its cleared form at revision to (outbox.RelayConfig.OnCleared).
func (r *recentHeads) cleared(key string, from, to uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.byKey[key]; ok && e.committed == from {
		e.cleared = to
	}
}

// get returns a copy of the kept head of key and its revision, once the
// relay cleared it.
func (r *recentHeads) get(key string) (*lanes.Head, uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byKey[key]
	if !ok || e.cleared == 0 {
		return nil, 0, false
	}
	h := *e.head
	return &h, e.cleared, true
}

// forget stops get from returning key's head, which proved stale, until
// the processor commits the lane again. The entry keeps its place in the
// order, so that every kept key is there once.
func (r *recentHeads) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.byKey[key]; ok {
		e.cleared = 0
	}
}
