package consumer

import (
	"slices"
	"sync"

	"github.com/cairnhq/cairn/internal/facts"
)

// Bounds of the cuts held for harvest jobs: how many, and how many bytes of
// content in all (a burst of a thousand 100-event compactions, whose
// harvests fall behind, fits). A cut larger than a quarter of the bytes is
// not held.
const (
	maxHandoffCuts  = 4096
	maxHandoffBytes = 64 << 20
)

// cutHandoff holds the cut of each recent compaction until the harvest job
// that follows it takes it, so that a job run in the process that
// compacted its request need not read the request back from the stream
// and decode it a second time: reading it back is most of a harvest's cost
// after extraction, and `processor bench --cpuprofile` (harvest ÷ compact
// per request, and the process CPU per request, with and without it) is
// the benchmark that keeps it. A job that runs on another replica, after a
// restart, or after its cut was evicted reads the request as before; a cut
// is handed only to the job of the same request sequence, request id and
// cut. It is safe for concurrent use; the zero value is ready.
type cutHandoff struct {
	mu    sync.Mutex
	cuts  map[uint64]handedCut
	order []uint64 // request sequences, oldest first
	bytes int
}

type handedCut struct {
	requestID string
	entryIDs  []string
	entries   []facts.Entry
	bytes     int
}

// put holds entries, the cut entryIDs of the request at requestSeq, in
// place of any cut held for that sequence, evicting the oldest cuts past
// the bounds.
func (h *cutHandoff) put(requestSeq uint64, requestID string, entryIDs []string, entries []facts.Entry) {
	n := 0
	for _, e := range entries {
		n += len(e.Content)
	}
	if n > maxHandoffBytes/4 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cuts == nil {
		h.cuts = map[uint64]handedCut{}
	}
	h.drop(requestSeq)
	h.cuts[requestSeq] = handedCut{requestID, entryIDs, entries, n}
	h.order = append(h.order, requestSeq)
	h.bytes += n
	for len(h.order) > maxHandoffCuts || h.bytes > maxHandoffBytes {
		h.drop(h.order[0])
	}
}

// take returns and forgets the cut held for the job's request, if it is
// the job's cut.
func (h *cutHandoff) take(requestSeq uint64, requestID string, entryIDs []string) ([]facts.Entry, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.cuts[requestSeq]
	if !ok || c.requestID != requestID || !slices.Equal(c.entryIDs, entryIDs) {
		return nil, false
	}
	h.drop(requestSeq)
	return c.entries, true
}

// drop forgets the cut held for requestSeq, if any.
func (h *cutHandoff) drop(requestSeq uint64) {
	c, ok := h.cuts[requestSeq]
	if !ok {
		return
	}
	delete(h.cuts, requestSeq)
	h.order = slices.DeleteFunc(h.order, func(s uint64) bool { return s == requestSeq })
	h.bytes -= c.bytes
}
