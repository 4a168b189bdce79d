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

	// route is the way to the outcome (route.go): routeLedger, or
	// routeFirst from the start of firstDelivery, then changed only by take.
	route  route
	status string // outcome status for metrics, set where the outcome is decided

	// head and headRev are the lane head held for compaction (holdHead);
	// the first activation attempt swaps against them instead of reading
	// again (takeHead).
	head     *lanes.Head
	headRev  uint64
	headFrom headSource

	// slot is the commit gate whose slot the request holds, nil while it
	// holds none (commitgate.go).
	slot *commitGate

	settled jsrun.Decision // how the runner settles the message, set by settle
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
