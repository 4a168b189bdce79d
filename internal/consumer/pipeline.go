package consumer

import (
	"context"
	"strings"
	"sync"

	"github.com/cairnhq/cairn/internal/jsrun"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go/jetstream"
)

// delivery is one request message on its way through the pipeline.
type delivery struct {
	body        []byte
	msgID       string // Nats-Msg-Id header ("" when absent)
	traceparent string
	delivered   uint64 // delivery count, 1 for the first
	streamSeq   uint64

	req *envelope // set by decode (possibly partial when decode failed)

	mu    sync.Mutex // guards entry and rev: the summarizer wrapper updates them
	entry *ledger.Entry
	rev   uint64

	conflict bool // the body differs from the ledger's: leave the ledger alone
	// fast says the ledger was not read (firstDelivery): the request's
	// record in the checkpoints bucket stands in for it once claimed is
	// set, and anything else sends the delivery to the ledger
	// (errUseLedger).
	fast, claimed bool
	// planInCheckpoint is set once the plan being activated is the one
	// stored with the request's checkpoint (storeLocalPlan, localPlan).
	planInCheckpoint bool
	status           string // outcome status for metrics, set where the outcome is decided

	// head and headRev are the lane head as read before compaction; the
	// first activation attempt swaps against them instead of reading again.
	// headAssumed says the head was not read but taken to be absent
	// (assumesNoHead): the first activation creates it, create-only.
	head        *lanes.Head
	headRev     uint64
	headKnown   bool
	headAssumed bool
	headKept    bool // the head is the one this processor committed last (recentHeads)

	// committing is set while the request holds a commit slot (commitgate.go).
	committing bool

	settled jsrun.Decision // how the runner settles the message, set by settle
}

// resetForLedger forgets what a fast attempt (firstDelivery) learned,
// before the delivery runs again with the ledger.
func (d *delivery) resetForLedger() {
	d.mu.Lock()
	d.entry, d.rev = nil, 0
	d.mu.Unlock()
	d.fast, d.claimed, d.conflict, d.planInCheckpoint, d.status = false, false, false, false, ""
	d.head, d.headRev, d.headKnown, d.headAssumed, d.headKept = nil, 0, false, false, false
}

// takeHead returns the head read before compaction, once; known is false
// when there is none to reuse.
func (d *delivery) takeHead() (head *lanes.Head, rev uint64, known bool) {
	head, rev, known = d.head, d.headRev, d.headKnown
	d.head, d.headRev, d.headKnown = nil, 0, false
	return head, rev, known
}

func newDelivery(msg jsrun.Msg) *delivery {
	d := &delivery{body: msg.Data(), delivered: msg.Delivered, streamSeq: msg.StreamSeq}
	if h := msg.Headers(); h != nil {
		d.msgID = h.Get(jetstream.MsgIDHeader)
		d.traceparent = headerFold(h, topology.HeaderTraceparent)
	}
	return d
}

// headerFold reads a header case-insensitively (W3C trace headers are
// lower-case by convention, but nats.Header keys are case-sensitive).
func headerFold(h map[string][]string, name string) string {
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, name) {
			return v[0]
		}
	}
	return ""
}

// handler processes one delivery; a nil error means the request reached its
// outcome and may be acked.
type handler func(ctx context.Context, d *delivery) error

// middleware wraps a handler with one concern.
type middleware func(handler) handler

// pipeline composes the processor's handler; the jsrun runner around it
// sends InProgress while it works and then the settle it decided.
// Outermost first:
//
//	observe   a span continuing the request's trace; one log line per delivery
//	settle    classify the result once; Ack, a failed event and Ack, or Nak
//	recover   a panic becomes internal_error instead of killing the process
//	decode    the request envelope and its Nats-Msg-Id
//	dedupe    the request ledger: repeats, conflicts, uncertain attempts
//	deadline  deadline_at and the attempt timeout bound the context
//	compact   claim check, validation, parent fence, engine, commit
//
// dedupe comes before deadline: a resend of a finished request gets its
// recorded outcome even after its deadline passed.
func (p *Processor) pipeline() handler {
	stack := []middleware{p.observe, p.settle, recoverPanics, traced("decode", p.decode), traced("dedupe", p.dedupe), p.deadline}
	h := tracedHandler("compact", p.compact)
	for i := len(stack) - 1; i >= 0; i-- {
		h = stack[i](h)
	}
	return h
}
