package consumer

import (
	"context"
	"errors"

	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/topology"
)

// dedupe consults the request ledger before any work:
//
//   - a new request_id gets its entry with its first write (the stored plan,
//     a remote model call, or the outcome), created only if still absent;
//   - a body that differs from the recorded one is request_id_conflict;
//   - a finished request re-publishes its recorded outcome (same event id)
//     and is acked, so a redelivery or a late resend is a no-op;
//   - a retryable failure is reopened by a resend;
//   - a model call that may still be running (summary_requested before its
//     deadline) is not repeated: the message is redelivered after the
//     deadline, when the call is retried, or failed with
//     provider_attempt_uncertain under OnUncertain "fail".
//
// A new request writes nothing here: until the engine has a result (or a
// remote model is about to be called) a crash leaves nothing a redelivery
// would need, so a "started" entry would be one write per request that no
// reader uses. A concurrent change of the entry means another delivery of
// the same request is working on it; that is transient.
func (p *Processor) dedupe(next handler) handler {
	return func(ctx context.Context, d *delivery) error {
		hash := ledger.ContentHash(d.body)
		// The lane head is read meanwhile: compaction needs it, and the
		// read is independent of the ledger (the head only ever moves by
		// compare-and-swap, so an early read is at worst a conflict later).
		headRead := func() {}
		if p.assumesNoHead(d) {
			d.head, d.headRev, d.headKnown, d.headAssumed = nil, 0, true, true
		} else {
			headRead = p.readHead(ctx, d)
		}
		entry, rev, err := p.ledger.Get(ctx, d.req.RequestID)
		headRead()
		if err != nil {
			return err
		}
		if entry == nil {
			// Revision 0: the first write creates the entry, and fails
			// as a conflict if another delivery created it meanwhile.
			d.setEntry(&ledger.Entry{RequestID: d.req.RequestID, ContentHash: hash, State: ledger.Started, UpdatedAt: p.now()}, 0)
			return next(ctx, d)
		}
		if entry.ContentHash != hash {
			d.conflict = true
			return errcode.WithDetails(errcode.RequestIDConflict, "request_id was used with a different body",
				map[string]any{"request_id": d.req.RequestID})
		}
		d.setEntry(entry, rev)
		switch {
		case entry.State == ledger.Failed && entry.Retryable:
			return p.reopen(ctx, d, next)
		case entry.State.Terminal():
			d.status = statusDuplicate
			return p.replay(ctx, entry)
		case entry.State == ledger.SummaryRequested:
			if err := p.checkUncertain(entry); err != nil {
				return err
			}
		}
		return next(ctx, d)
	}
}

// assumesNoHead reports whether compaction may take the lane to have no
// head without reading it: the request names no parent and no previous
// semantic, so the parent fence passes only on a lane without a head, and
// the engine then gets no state. The head is created by a create-only
// write, which fails on a lane that has one; activate then reads it and
// decides as after any conflict (this request's own activation, or
// stale_head). A remote summarizer's requests always read it first, so
// that a stale request never calls the model.
func (p *Processor) assumesNoHead(d *delivery) bool {
	return IsLocal(p.summarizer) && d.req.parent() == "" && d.req.PreviousSemantic == nil
}

// readHead starts reading the delivery's lane head; the returned wait
// blocks until the read is done and, when it succeeded, leaves the head in
// the delivery for compaction (a failed read is repeated there).
func (p *Processor) readHead(ctx context.Context, d *delivery) (wait func()) {
	var (
		head *lanes.Head
		rev  uint64
		err  error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		head, rev, err = p.lanes.Head(ctx, d.req.lane())
	}()
	return func() {
		<-done
		if err == nil {
			d.head, d.headRev, d.headKnown = head, rev, true
		}
	}
}

// replay re-publishes a finished request's outcome under its original id:
// the ledger's, or the first record of the plan stored with its checkpoint.
func (p *Processor) replay(ctx context.Context, entry *ledger.Entry) error {
	outcome := entry.Outcome
	if outcome == nil && entry.OutcomeInCheckpoint {
		cp, err := p.lanes.GetCheckpoint(ctx, entry.RequestID)
		if err != nil {
			return err
		}
		if cp != nil && cp.Plan != nil && len(cp.Plan.Outbox) > 0 {
			outcome = &cp.Plan.Outbox[0]
		}
	}
	if outcome == nil {
		return errcode.WithDetails(errcode.Internal, "finished request has no recorded outcome",
			map[string]any{"request_id": entry.RequestID})
	}
	return outbox.Publish(ctx, p.js, *outcome)
}

// reopen starts a new round of a request whose last failure was retryable.
func (p *Processor) reopen(ctx context.Context, d *delivery, next handler) error {
	d.mu.Lock()
	e := *d.entry
	e.State, e.Outcome, e.Retryable, e.Round = ledger.Started, nil, false, e.Round+1
	e.UpdatedAt = p.now()
	rev, err := p.ledger.Put(ctx, &e, d.rev)
	d.mu.Unlock()
	if err != nil {
		return err
	}
	d.setEntry(&e, rev)
	return next(ctx, d)
}

// checkUncertain decides about an attempt that recorded a model call but no
// outcome.
func (p *Processor) checkUncertain(entry *ledger.Entry) error {
	open := entry.OpenAttempt()
	if open == nil {
		return nil
	}
	if p.now().Before(open.Deadline) {
		return &attemptInFlight{until: open.Deadline}
	}
	if p.cfg.OnUncertain == OnUncertainFail {
		return errcode.WithDetails(errcode.ProviderAttemptUncertain,
			"an earlier model call's outcome is unknown and retrying is disabled",
			map[string]any{"attempt": open.N, "requested_at": open.RequestedAt, "deadline": open.Deadline})
	}
	return nil
}

// unrecorded reports whether the ledger holds nothing of this request yet:
// its entry is the one dedupe made up, still to be created.
func (d *delivery) unrecorded() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rev == 0
}

// contentHash is the request body's hash, as the ledger records it.
func (d *delivery) contentHash() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.entry.ContentHash
}

func (d *delivery) setEntry(e *ledger.Entry, rev uint64) {
	d.mu.Lock()
	d.entry, d.rev = e, rev
	d.mu.Unlock()
}

// updateEntry applies change to a copy of the ledger entry and writes it by
// compare-and-swap.
func (p *Processor) updateEntry(ctx context.Context, d *delivery, change func(*ledger.Entry)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.entry == nil {
		return errors.New("consumer: no ledger entry")
	}
	e := *d.entry
	e.Attempts = append([]ledger.Attempt(nil), d.entry.Attempts...)
	change(&e)
	e.UpdatedAt = p.now()
	rev, err := p.ledger.Put(ctx, &e, d.rev)
	if errors.Is(err, ledger.ErrConflict) {
		p.metrics.CASConflict(topology.BucketLedger)
	}
	if err != nil {
		return err
	}
	d.entry, d.rev = &e, rev
	return nil
}
