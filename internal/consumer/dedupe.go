package consumer

import (
	"context"
	"errors"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/topology"
)

// dedupe decides whether a delivery is a new request, a repeat of a
// finished one, or a used id. With a local summarizer it first lets the
// delivery run as a new request without reading the ledger
// (firstDelivery), whose first write proves the id new or sends it back
// here; every other delivery consults the request ledger before any work:
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
	withLedger := p.dedupeWithLedger(next)
	if !IsLocal(p.summarizer) {
		return withLedger
	}
	return func(ctx context.Context, d *delivery) error {
		err := p.firstDelivery(ctx, d, next)
		if !errors.Is(err, errUseLedger) {
			return err
		}
		d.take(turnToLedger)
		return withLedger(ctx, d)
	}
}

// errUseLedger sends a delivery that firstDelivery cannot decide to the
// ledger. It never leaves dedupe.
var errUseLedger = errors.New("consumer: decided by the request ledger")

// firstDelivery runs a request of a local summarizer without reading the
// ledger, as the first delivery of a new request id, and lets the
// request's first write claim the id: its checkpoint with the plan, or,
// for an outcome that moves no head (skipped, failed), a marker
// (lanes.Checkpoint.OutcomeInLedger) before the ledger records it. Both
// are create-only writes in the checkpoints bucket, where every request
// id the ledger knows has a record (its checkpoint or a marker: failures
// and skips write the marker first). So a write that creates its key
// proves the id new, and anything else (a redelivery, a resend, a used
// id) is errUseLedger: the delivery runs again with the ledger. An
// activation claimed this way records no ledger entry: the checkpoint with
// its plan is the record a repeat finds.
//
// It puts the delivery on routeFirst, which the speed rule keeps on
// `processor bench --events 100` and BenchmarkOpsPerRequest: the ledger
// route reads and writes the ledger besides.
func (p *Processor) firstDelivery(ctx context.Context, d *delivery, next handler) error {
	d.route = routeFirst
	d.setEntry(&ledger.Entry{RequestID: d.req.RequestID, ContentHash: ledger.ContentHash(d.body), State: ledger.Started, UpdatedAt: p.now()}, 0)
	p.assumeNoHeadIfAllowed(d)
	err := next(ctx, d)
	if err == nil || d.route != routeFirst || errors.Is(err, errUseLedger) || p.isCrashed() {
		return err
	}
	if Classify(err, d.delivered, p.cfg.MaxDeliver, p.cfg.NakBackoff, p.now()).Action != Fail {
		return err // redelivered; nothing is recorded
	}
	if claimErr := p.claimForOutcome(ctx, d); claimErr != nil {
		return claimErr
	}
	return err
}

// claimForOutcome claims a first delivery's request id (routeFirst) for
// an outcome that moves no head, by its marker; a record already there is
// errUseLedger.
func (p *Processor) claimForOutcome(ctx context.Context, d *delivery) error {
	if d.route != routeFirst {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	created, err := p.lanes.MarkOutcomeInLedger(sctx, d.req.RequestID)
	if err != nil {
		return err
	}
	if !created {
		return errUseLedger
	}
	d.take(turnClaim)
	return p.crashPoint(stepOutcomeMarked)
}

// markOutcomeInLedger leaves the marker of an outcome the ledger is about
// to record, unless the request has a record in the checkpoints bucket
// already, so that a later first delivery of the id finds it
// (firstDelivery).
func (p *Processor) markOutcomeInLedger(ctx context.Context, d *delivery) error {
	if d.route == routeClaimed {
		return nil // by its marker or its checkpoint
	}
	_, err := p.lanes.MarkOutcomeInLedger(ctx, d.req.RequestID)
	return err
}

// dedupeWithLedger is dedupe that reads the request's ledger entry first.
func (p *Processor) dedupeWithLedger(next handler) handler {
	return func(ctx context.Context, d *delivery) error {
		hash := ledger.ContentHash(d.body)
		// The lane head is read meanwhile: compaction needs it, and the
		// read is independent of the ledger (the head only ever moves by
		// compare-and-swap, so an early read is at worst a conflict later).
		headRead := func() {}
		if !p.assumeNoHeadIfAllowed(d) {
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
			if done, err := p.finishEarlierActivation(ctx, d); done || err != nil {
				return err
			}
			return next(ctx, d)
		}
		if entry.ContentHash != hash {
			d.take(turnConflict)
			return errcode.WithDetails(errcode.RequestIDConflict, "request_id was used with a different body",
				map[string]any{"field": "request_id", "rule": "unique", "request_id": d.req.RequestID})
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

// assumeNoHeadIfAllowed leaves an absent head in d when assumesNoHead
// allows it, and reports whether it did.
func (p *Processor) assumeNoHeadIfAllowed(d *delivery) bool {
	if !p.assumesNoHead(d) {
		return false
	}
	d.holdHead(nil, 0, headAssumed)
	return true
}

// finishEarlierActivation handles a request the ledger does not know whose
// plan a local summarizer stored with its checkpoint and activated: a
// first delivery's activation records no ledger entry (firstDelivery).
// When the plan's checkpoint is the lane's head or in its history, the
// request is done: the ledger records the outcome, the pending records
// are delivered and the outcome is published again under its id, as a
// repeat of a finished request is, before anything else (its deadline
// included) is looked at. A plan of another body is request_id_conflict.
// A plan that is not active is left to compaction, which adopts it
// (storeLocalPlan).
//
// A lane that moved on by more than HistoryLimit generations since the
// plan's cannot be walked back to it; the plan is then taken as
// activated, since every delivery that does not activate its plan
// records its failure in the ledger, and this one has no entry. (Only a
// request dead-lettered with every delivery cut short, whose lane then
// moved on that far, would be misread.)
func (p *Processor) finishEarlierActivation(ctx context.Context, d *delivery) (done bool, err error) {
	if !IsLocal(p.summarizer) {
		return false, nil
	}
	plan, err := p.localPlan(ctx, d)
	if err != nil {
		return true, err
	}
	if plan == nil {
		return false, nil
	}
	head, rev, from := d.takeHead()
	if from == headNone || from == headAssumed {
		if head, rev, err = p.lanes.Head(ctx, plan.Lane); err != nil {
			return true, err
		}
	}
	d.holdHead(head, rev, headRead) // for compaction, if not done
	if head == nil || head.Generation < plan.Generation {
		return false, nil
	}
	active, err := p.lanes.InHistory(ctx, head, plan.CheckpointID, p.cfg.HistoryLimit)
	if err != nil {
		return true, err
	}
	if !active && head.Generation-plan.Generation < int64(p.cfg.HistoryLimit) {
		return false, nil
	}
	if err := p.enterCommit(ctx, d); err != nil {
		return true, err
	}
	defer p.leaveCommit(d)
	if err := p.finishActivation(ctx, d, plan, nil, 0); err != nil {
		return true, err
	}
	d.status = statusDuplicate
	activated, err := lanes.WithCheckpoint(plan.Outbox[0], plan.CheckpointID, plan.CheckpointBody)
	if err != nil {
		return true, err
	}
	return true, outbox.Publish(ctx, p.js, activated)
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
			d.holdHead(head, rev, headRead)
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
			whole, err := lanes.Resolved(cp.Plan.Outbox[0], cp)
			if err != nil {
				return err
			}
			outcome = &whole
		}
	}
	if outcome == nil {
		return errcode.WithDetails(errcode.Internal, "finished request has no recorded outcome",
			map[string]any{"request_id": entry.RequestID})
	}
	whole, err := p.lanes.Resolve(ctx, *outcome) // an activated outcome names its checkpoint record
	if err != nil {
		return err
	}
	return outbox.Publish(ctx, p.js, whole)
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
