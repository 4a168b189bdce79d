package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/topology"
)

// Commit steps a test can stop the processor after (Config.crashAt).
const (
	stepSummaryRequested = "summary_requested"
	stepLedgerStored     = "ledger_stored"
	stepCheckpointStored = "checkpoint_stored"
	stepHeadAdvanced     = "head_advanced"
	stepOutboxPublished  = "outbox_published"
	stepLedgerFinal      = "ledger_final"
	// stepOutcomeMarked is a failure's or skip's: its marker is stored,
	// its ledger entry not yet (firstDelivery).
	stepOutcomeMarked = "outcome_marked"
)

// crashSteps lists every commit step in order, for crash tests. The first
// two are a remote summarizer's only: a local one records neither a model
// call nor a plan in the ledger (storeLocalPlan). The ledger and checkpoint
// writes run concurrently (recordPlan), and so do the last two steps
// (finishActivation): a crash at ledger_stored may find the checkpoint
// stored or not, and one at either of the last two may find the other done
// or not.
var crashSteps = []string{stepSummaryRequested, stepLedgerStored, stepCheckpointStored, stepHeadAdvanced, stepOutboxPublished, stepLedgerFinal}

// compact is the innermost handler: it runs one request to its outcome.
// A request whose checkpoint is already stored resumes at activation and
// never calls the model again.
//
// Everything after the engine's last model call runs in a commit slot
// (commitgate.go), so that requests whose model calls return together do
// not all finish together.
func (p *Processor) compact(ctx context.Context, d *delivery) error {
	defer p.leaveCommit(d)
	if d.entry.State == ledger.Stored {
		if err := p.enterCommit(ctx, d); err != nil {
			return err
		}
		return p.commitStored(ctx, d)
	}
	req := d.req
	var evs laneEvents
	err := p.stage("load", func() (err error) {
		evs, err = p.loadEvents(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	in := Input{Body: d.body, Decoded: req.takeDecoded(), Events: evs.raw}
	if v, ok := p.compactor.(Validator); ok {
		// The request is checked before the parent fence, so that the
		// first error a producer sees is the one in its request.
		if err := p.stage("validate", func() error { return v.Validate(&in) }); err != nil {
			return err
		}
	}
	if err := p.laneHead(ctx, d); err != nil {
		return err
	}
	head := d.head
	if done, err := p.checkFence(ctx, d, head); done || err != nil {
		return err
	}
	if head != nil {
		in.State, in.StateRootTurnID = head.State, head.RootTurnID
		if in.PreviousSemantic, err = p.activeSemantic(ctx, head); err != nil {
			return err
		}
	}
	rs := &recordingSummarizer{p: p, d: d, inner: p.summarizer, local: IsLocal(p.summarizer)}
	var res *Result
	err = p.stage("engine", func() (err error) {
		res, err = p.compactor.Compact(ctx, in, rs, p.now())
		return err
	})
	if err != nil {
		if rs.wasOpened() && !errors.Is(err, errCrashed) && ctx.Err() == nil {
			// The calls returned: a redelivery need not wait for them.
			_ = p.updateEntry(ctx, d, func(e *ledger.Entry) { closeAttempt(e, rs.usageJSON()) })
		}
		return err
	}
	if err := p.enterCommit(ctx, d); err != nil { // a no-op after a model call
		return err
	}
	if res.Status == StatusSkipped {
		if done, err := p.fenceAssumedHead(ctx, d); done || err != nil {
			return err
		}
		return p.skip(ctx, d, res, rs)
	}
	plan, err := p.plan(d, head, res)
	if err != nil {
		return err
	}
	cp := &lanes.Checkpoint{
		ID: req.RequestID, Hash: res.CheckpointHash, ParentID: req.parent(), ParentHash: headHash(head),
		Generation: plan.Generation, Body: res.Checkpoint,
	}
	if rs.local && d.unrecorded() {
		plan, err = p.storeLocalPlan(ctx, d, plan, cp)
	} else {
		plan, err = p.recordPlan(ctx, d, plan, cp, rs.usageJSON())
	}
	if err != nil {
		return err
	}
	err = p.stage("activate", func() error { return p.activate(ctx, d, plan) })
	if err == nil {
		p.metrics.Tokens(res.TokensBefore, res.TokensAfter)
		if d.route == routeClaimed { // the stored checkpoint is cp itself, not an earlier delivery's
			p.recent.put(cp.ID, cp.Hash, cp.Body)
		}
	}
	return err
}

// recordPlan records the plan in the ledger (state stored) and stores its
// checkpoint, both at once, and returns the plan to activate: the plan is
// what makes a redelivery repeat these bytes instead of recomputing a
// checkpoint whose model output or created_at would differ, and it
// decides what a checkpoint under this id may be. A checkpoint whose plan
// never reached the ledger (a crash between the two writes, or a
// concurrent delivery that lost the ledger's compare-and-swap) is
// therefore a leftover no head refers to, and the plan's holder replaces
// it; a local summarizer's plan there is adopted (storeRecordedCheckpoint).
func (p *Processor) recordPlan(ctx context.Context, d *delivery, plan *lanes.Head, cp *lanes.Checkpoint, usage json.RawMessage) (*lanes.Head, error) {
	var recordErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		recordErr = p.updateEntry(ctx, d, func(e *ledger.Entry) {
			e.State, e.Plan, e.Checkpoint = ledger.Stored, plan, cp
			closeAttempt(e, usage)
		})
		if recordErr == nil {
			recordErr = p.crashPoint(stepLedgerStored)
		}
	})
	err := p.lanes.PutCheckpoint(ctx, cp)
	wg.Wait()
	if recordErr != nil {
		return nil, recordErr // never replace a checkpoint without holding its plan
	}
	if plan, err = p.storeRecordedCheckpoint(ctx, d, plan, cp, err); err != nil {
		return nil, err
	}
	return plan, p.crashPoint(stepCheckpointStored)
}

// storeRecordedCheckpoint finishes storing the checkpoint of a plan the
// ledger holds, given the insert's error, and returns the plan to
// activate. A differing leftover under the id is replaced. A local
// summarizer's plan stored with its checkpoint under the id is the
// request's own, left by a replica of the other kind (a fleet switching
// summarizers, whose local replica stopped before the head moved or was
// still at work): its body decides (another body is request_id_conflict),
// the ledger is rewritten to hold it, and it is the plan activated, so
// that the request keeps one outcome.
func (p *Processor) storeRecordedCheckpoint(ctx context.Context, d *delivery, plan *lanes.Head, cp *lanes.Checkpoint, insertErr error) (*lanes.Head, error) {
	if errcode.Code(insertErr) != errcode.CheckpointConflict {
		return plan, insertErr
	}
	err := p.lanes.ReplaceCheckpoint(ctx, cp)
	if errcode.Code(err) != errcode.CheckpointConflict {
		return plan, err
	}
	stored, readErr := p.lanes.GetCheckpoint(ctx, cp.ID)
	if readErr != nil {
		return nil, readErr
	}
	if stored == nil || stored.Plan == nil {
		return nil, err
	}
	adopted, err := p.adoptPlan(d, stored)
	if err != nil {
		return nil, err
	}
	err = p.updateEntry(ctx, d, func(e *ledger.Entry) { e.Plan, e.Checkpoint = adopted, stored })
	return adopted, err
}

// storeLocalPlan stores the checkpoint of a plan a local summarizer made,
// with the plan in the same record, and returns the plan to activate. The
// ledger is not written: a local summarizer charges nothing, so a crash
// before the head moves costs only a recompute, and the checkpoint's
// insert decides which of two computations of the request wins. A
// checkpoint already stored with a plan of the same request body is an
// earlier delivery's, and its plan is the one activated (a recompute would
// differ in created_at); one without a plan is a leftover no head refers
// to (recordPlan), and a plan of another body under this id is
// request_id_conflict.
func (p *Processor) storeLocalPlan(ctx context.Context, d *delivery, plan *lanes.Head, cp *lanes.Checkpoint) (*lanes.Head, error) {
	cp.Plan, cp.RequestHash = plan, d.contentHash()
	stored, created, err := p.lanes.InsertCheckpoint(ctx, cp)
	switch {
	case err != nil:
		return nil, err
	case d.route == routeFirst && !created:
		return nil, errUseLedger // not the id's first record: the ledger decides
	case d.route == routeFirst:
		d.take(turnClaim)
		return plan, p.crashPoint(stepCheckpointStored)
	case stored == nil:
	case stored.Plan == nil:
		if err := p.lanes.ReplaceCheckpoint(ctx, cp); err != nil {
			return nil, err
		}
	default:
		if plan, err = p.adoptPlan(d, stored); err != nil {
			return nil, err
		}
	}
	d.take(turnAdoptPlan)
	return plan, p.crashPoint(stepCheckpointStored)
}

// adoptPlan returns the plan stored with a local summarizer's checkpoint,
// after checking that the same request body made it.
func (p *Processor) adoptPlan(d *delivery, stored *lanes.Checkpoint) (*lanes.Head, error) {
	if stored.RequestHash != d.contentHash() {
		d.take(turnConflict)
		return nil, errcode.WithDetails(errcode.RequestIDConflict, "request_id was used with a different body",
			map[string]any{"field": "request_id", "rule": "unique", "request_id": d.req.RequestID})
	}
	return stored.Plan, nil
}

// localPlan returns the plan a local summarizer stored with this request's
// checkpoint, or nil when there is none. Only a request the ledger has no
// entry for can have one, so others are not looked up.
func (p *Processor) localPlan(ctx context.Context, d *delivery) (*lanes.Head, error) {
	if !d.unrecorded() {
		return nil, nil
	}
	stored, err := p.lanes.GetCheckpoint(ctx, d.req.RequestID)
	if err != nil || stored == nil || stored.Plan == nil {
		return nil, err
	}
	plan, err := p.adoptPlan(d, stored)
	if err != nil {
		return nil, err
	}
	d.take(turnAdoptPlan)
	return plan, nil
}

// commitStored resumes a request the ledger has at stored: it stores the
// plan's checkpoint and activates the plan.
func (p *Processor) commitStored(ctx context.Context, d *delivery) error {
	d.mu.Lock()
	plan, cp := d.entry.Plan, d.entry.Checkpoint
	d.mu.Unlock()
	if plan == nil || cp == nil {
		return errcode.New(errcode.Internal, "stored request has no plan or checkpoint")
	}
	withBody := *plan
	withBody.CheckpointBody = cp.Body
	plan = &withBody
	plan, err := p.storeRecordedCheckpoint(ctx, d, plan, cp, p.lanes.PutCheckpoint(ctx, cp))
	if err != nil {
		return err
	}
	if err := p.crashPoint(stepCheckpointStored); err != nil {
		return err
	}
	return p.activate(ctx, d, plan)
}

// checkFence enforces the parent fence (docs/request.md, "Lanes, heads and
// the parent fence"): the request's parent must be the lane's active
// checkpoint and its previous_semantic, when given, the active
// checkpoint's semantic. A head that already is this request's
// checkpoint means an earlier delivery activated it (done).
func (p *Processor) checkFence(ctx context.Context, d *delivery, head *lanes.Head) (done bool, err error) {
	req := d.req
	active := ""
	if head != nil {
		active = head.CheckpointID
	}
	if active == req.RequestID && active != "" {
		if d.route == routeFirst {
			return true, errUseLedger
		}
		return true, p.finishActivated(ctx, d, head)
	}
	if active != req.parent() && d.route == routeFirst {
		// Whether an earlier delivery activated this request is the
		// ledger's question; firstDelivery asks it if the id has a record.
		return false, staleHead(req, active, "parent_checkpoint_id", "parent_checkpoint_id is not the lane's active checkpoint")
	}
	if active != req.parent() {
		// A local summarizer's earlier delivery may have activated this
		// request before the lane moved on without recording it.
		plan, err := p.localPlan(ctx, d)
		if err != nil {
			return false, err
		}
		if plan != nil {
			if err := p.enterCommit(ctx, d); err != nil {
				return true, err
			}
			return true, p.activate(ctx, d, plan)
		}
		return false, staleHead(req, active, "parent_checkpoint_id", "parent_checkpoint_id is not the lane's active checkpoint")
	}
	if req.PreviousSemantic != nil {
		h, err := semanticHash(req.PreviousSemantic)
		if err != nil {
			return false, err
		}
		if head == nil || h != head.SemanticHash {
			return false, staleHead(req, active, "previous_semantic", "previous_semantic differs from the active checkpoint's")
		}
	}
	return false, nil
}

// laneHead makes sure d holds the lane's head for compaction: the one
// dedupe read, or the one this processor committed last on the lane
// (recentHeads), or else the one in the store. A kept head whose
// checkpoint is neither the request's parent nor the request's own is
// read again from the store before the parent fence judges it, so that
// a lane another replica moved on is never taken for stale_head.
func (p *Processor) laneHead(ctx context.Context, d *delivery) error {
	if d.headFrom != headNone {
		return nil
	}
	key, err := d.req.lane().Key()
	if err != nil {
		return err
	}
	if head, rev, ok := p.heads.get(key); ok && (head.CheckpointID == d.req.parent() || head.CheckpointID == d.req.RequestID) {
		d.holdHead(head, rev, headKept)
		return nil
	}
	head, rev, err := p.lanes.Head(ctx, d.req.lane())
	if err != nil {
		return err
	}
	d.holdHead(head, rev, headRead)
	return nil
}

// fenceAssumedHead checks the parent fence against the lane's real head
// when compaction took it to be absent (assumesNoHead) and nothing will
// write the head to prove it: a skipped outcome.
func (p *Processor) fenceAssumedHead(ctx context.Context, d *delivery) (done bool, err error) {
	if d.headFrom != headAssumed {
		return false, nil
	}
	head, _, err := p.lanes.Head(ctx, d.req.lane())
	if err != nil {
		return false, err
	}
	return p.checkFence(ctx, d, head)
}

// staleHead is the stale_head failure of a request whose parent (or, with
// field previous_semantic, whose summary) is not the lane's active head's.
func staleHead(req *envelope, active, field, why string) error {
	return errcode.WithDetails(errcode.StaleHead, why, map[string]any{
		"field": field, "rule": "match",
		"parent_checkpoint_id": idOrNull(req.parent()), "active_checkpoint_id": idOrNull(active),
	})
}

// idOrNull is a checkpoint id for error details: null for none.
func idOrNull(id string) any {
	if id == "" {
		return nil
	}
	return id
}

func headHash(h *lanes.Head) string {
	if h == nil {
		return ""
	}
	return h.HeadHash
}

// activeSemantic loads the active checkpoint's semantic, which the engine
// summarizes onto (docs/architecture.md).
func (p *Processor) activeSemantic(ctx context.Context, head *lanes.Head) (json.RawMessage, error) {
	if head.SemanticHash == "" || head.CheckpointID == "" {
		return nil, nil
	}
	stored, ok := p.recent.get(head.CheckpointID, head.HeadHash)
	if !ok {
		cp, err := p.lanes.GetCheckpoint(ctx, head.CheckpointID)
		if err != nil {
			return nil, err
		}
		if cp == nil || cp.IsMarker() {
			return nil, errcode.WithDetails(errcode.Internal, "the active checkpoint is missing from the store",
				map[string]any{"checkpoint_id": head.CheckpointID})
		}
		stored = cp.Body
	}
	var body struct {
		Semantic json.RawMessage `json:"semantic"`
	}
	if err := json.Unmarshal(stored, &body); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "stored checkpoint is corrupt", err)
	}
	if !hasJSONValue(body.Semantic) {
		return nil, nil
	}
	return body.Semantic, nil
}

// plan builds the head this request activates and the records it carries:
// the activated event, and the harvest job for a compacted result unless the
// request turned harvesting off.
func (p *Processor) plan(d *delivery, head *lanes.Head, res *Result) (*lanes.Head, error) {
	req := d.req
	gen := int64(1)
	if head != nil {
		gen = head.Generation + 1
	}
	d.mu.Lock()
	attempts := append([]ledger.Attempt(nil), d.entry.Attempts...)
	d.mu.Unlock()
	if len(attempts) > 0 {
		attempts = attempts[:len(attempts)-1] // the current attempt is in the engine's usage
	}
	id := eventID(req.RequestID, kindActivated, 0)
	ev := events.Activated{
		Header: header(req, req.RequestID, id, kindActivated, p.now()),
		Status: res.Status, CheckpointID: req.RequestID, ParentCheckpointID: nullable(req.parent()),
		Generation: gen, CheckpointHash: res.CheckpointHash, ParentCheckpointHash: nullable(headHash(head)),
		TokensBefore: res.TokensBefore, TokensAfter: res.TokensAfter, TokensReclaimed: res.TokensReclaimed,
		RetainedEventIDs: nonNil(res.RetainedEventIDs), ArtifactIDs: nonNil(res.ArtifactIDs),
		ProviderUsage: usageWithAttempts(res.ProviderUsage, attempts),
	}
	activated, err := activatedRecord(id, ev, d.traceparent)
	if err != nil {
		return nil, err
	}
	records := []outbox.Record{activated}
	if res.Status == StatusCompacted && req.harvest().HarvestEnabled() && len(res.CutEventIDs) > 0 {
		job, err := harvestRecord(req, req.RequestID, res.CutEventIDs, d.streamSeq, d.traceparent)
		if err != nil {
			return nil, err
		}
		records = append(records, job)
		p.handOff(d.streamSeq, req, res.CutEventIDs)
	}
	return &lanes.Head{
		Lane: req.lane(), CheckpointID: req.RequestID, ParentCheckpointID: req.parent(), Generation: gen,
		HeadHash: res.CheckpointHash, SemanticHash: res.SemanticHash, State: res.NextState, RootTurnID: req.RootTurnID,
		Outbox: records, UpdatedAt: p.now(), CheckpointBody: res.Checkpoint,
	}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// activate moves the lane head to plan by compare-and-swap, carrying the
// plan's records together with any records still pending on the head. The
// swap is the commit point. A conflict re-reads the head: if it still has
// the plan's parent (the relay cleared records meanwhile) the swap is
// retried; if it is the plan's checkpoint, or the checkpoint is in the
// lane's history, an earlier delivery committed it; otherwise the parent was
// replaced and the request is stale_head (the stored checkpoint stays, never
// rebased).
func (p *Processor) activate(ctx context.Context, d *delivery, plan *lanes.Head) error {
	lane := plan.Lane
	var committed uint64
	var written *lanes.Head
	head, rev, from := d.takeHead()
	for attempt := 0; ; attempt++ {
		if attempt >= p.cfg.HeadAttempts {
			return fmt.Errorf("consumer: lane head still contended after %d attempts", attempt)
		}
		if attempt > 0 || from == headNone {
			var err error
			if head, rev, err = p.lanes.Head(ctx, lane); err != nil {
				return err
			}
		}
		active := ""
		if head != nil {
			active = head.CheckpointID
		}
		if active == plan.CheckpointID {
			break
		}
		if active != plan.ParentCheckpointID {
			if in, err := p.lanes.InHistory(ctx, head, plan.CheckpointID, p.cfg.HistoryLimit); err != nil || in {
				if err != nil {
					return err
				}
				break
			}
			why := "the lane's active checkpoint changed before activation"
			if from == headAssumed {
				why = "parent_checkpoint_id is not the lane's active checkpoint" // as the fence says it
			}
			return staleHead(d.req, active, "parent_checkpoint_id", why)
		}
		next := *plan
		next.UpdatedAt = p.now()
		if head != nil && len(head.Outbox) > 0 {
			// Records still pending go on with the new head.
			next.Outbox = append(append([]outbox.Record(nil), head.Outbox...), plan.Outbox...)
		}
		var err error
		committed, err = p.lanes.Advance(ctx, lane, rev, &next)
		if err == nil {
			written = &next
			break
		}
		if !errors.Is(err, lanes.ErrConflict) {
			return err
		}
		if from == headKept {
			from = headRead
			if key, err := lane.Key(); err == nil {
				p.heads.forget(key)
			}
		}
		p.metrics.CASConflict(topology.BucketHeads)
	}
	if err := p.crashPoint(stepHeadAdvanced); err != nil {
		return err
	}
	return p.finishActivation(ctx, d, plan, written, committed)
}

// finishActivation publishes the committed records now (written and
// revision, when this delivery wrote the head; else the relay reads the
// head) and, at the same time, records the outcome in the ledger; then the
// message may be acked. Neither waits for the other because either order
// recovers: the head keeps the records until they are published (the relay
// finishes them after a crash), and a ledger still at stored makes a
// redelivery find the activated head and record the outcome. A failed
// publish is left to the relay, which retries it; the ledger's outcome lets
// a repeat re-publish the activated event under its id.
func (p *Processor) finishActivation(ctx context.Context, d *delivery, plan *lanes.Head, written *lanes.Head, revision uint64) error {
	var published error
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := p.deliverOutbox(ctx, plan.Lane, written, revision); err != nil {
			p.log.Debug("consumer: inline outbox delivery failed; the relay retries", "err", err)
		}
		published = p.crashPoint(stepOutboxPublished)
	})
	var err error
	if d.route != routeClaimed { // a claimed activation's record is its checkpoint with the plan
		outcome := plan.Outbox[0]
		err = p.updateEntry(ctx, d, func(e *ledger.Entry) {
			e.State, e.Outcome, e.Plan, e.Checkpoint = ledger.Activated, &outcome, nil, nil
			if d.route == routeLocalPlan {
				e.Outcome, e.OutcomeInCheckpoint = nil, true
			}
			closeAttempt(e, nil)
		})
	}
	if err == nil {
		err = p.crashPoint(stepLedgerFinal)
	}
	wg.Wait()
	if err := errors.Join(published, err); err != nil {
		return err
	}
	d.status = statusActivated
	return nil
}

// deliverOutbox hands the head this delivery wrote to the relay with its
// records and its cleared form, so the relay neither reads nor re-encodes
// it; without one the relay reads the head.
func (p *Processor) deliverOutbox(ctx context.Context, lane lanes.Lane, written *lanes.Head, revision uint64) error {
	key, err := lane.Key()
	if err != nil {
		return err
	}
	if written == nil {
		return p.relay.Deliver(ctx, key)
	}
	records, err := written.Published()
	if err != nil {
		return err
	}
	cleared := *written
	cleared.Outbox = []outbox.Record{}
	value, err := cleared.Encode()
	if err != nil {
		return err
	}
	p.heads.committed(key, &cleared, revision)
	return p.relay.DeliverCommitted(ctx, key, records, value, revision)
}

// finishActivated handles a head that already is this request's checkpoint
// while the ledger has no plan (it was lost or never written): the outcome
// is rebuilt from the stored plan if any, else the request is treated as
// done once the ledger records it.
func (p *Processor) finishActivated(ctx context.Context, d *delivery, head *lanes.Head) error {
	if d.entry.Plan != nil {
		return p.finishActivation(ctx, d, d.entry.Plan, nil, 0)
	}
	plan, err := p.localPlan(ctx, d)
	if err != nil {
		return err
	}
	if plan != nil {
		return p.finishActivation(ctx, d, plan, nil, 0)
	}
	return errcode.WithDetails(errcode.Internal, "the lane head is this request's checkpoint but the ledger has no record of it",
		map[string]any{"checkpoint_id": head.CheckpointID})
}

// skip records and publishes a skipped outcome; nothing else changes.
func (p *Processor) skip(ctx context.Context, d *delivery, res *Result, rs *recordingSummarizer) error {
	req := d.req
	id := eventID(req.RequestID, kindSkipped, 0)
	ev := events.Skipped{Header: header(req, req.RequestID, id, kindSkipped, p.now()), Reason: res.SkipReason, TokensBefore: res.TokensBefore}
	rec, err := record(topology.SubjectSkipped, id, ev, d.traceparent)
	if err != nil {
		return err
	}
	if err := p.claimForOutcome(ctx, d); err != nil {
		return err
	}
	if err := p.markOutcomeInLedger(ctx, d); err != nil {
		return err
	}
	err = p.updateEntry(ctx, d, func(e *ledger.Entry) {
		e.State, e.Outcome = ledger.Skipped, &rec
		closeAttempt(e, rs.usageJSON())
	})
	if err != nil {
		return err
	}
	if err := outbox.Publish(ctx, p.js, rec); err != nil {
		return err
	}
	d.status = statusSkipped
	return p.crashPoint(stepLedgerFinal)
}
