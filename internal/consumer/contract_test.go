package consumer

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
)

// The processor's delivery contract, written once and run against every
// deployment mode.
func TestContractSingleServer(t *testing.T) { runContract(t, singleEnv, false) }

func TestContractCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node cluster: skipped with -short")
	}
	runContract(t, clusterEnv, false)
}

// The same contract with the real engine and the offline summarizer.
func TestContractEngineSingleServer(t *testing.T) { runContract(t, singleEnv, true) }

func TestContractEngineCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node cluster: skipped with -short")
	}
	runContract(t, clusterEnv, true)
}

func runContract(t *testing.T, mk func(testing.TB) *env, realEngine bool) {
	e := mk(t)
	e.realEngine = realEngine
	r := e.start(t, testConfig(), nil, nil)
	cases := []struct {
		name string
		run  func(*testing.T, *env)
	}{
		{"activates once and queues the harvest job", contractActivate},
		{"repeats are no-ops with the same outcome", contractRepeat},
		{"racing requests on one parent", contractRace},
		{"a chain of three cites each parent's hash", contractChain},
		{"malformed requests fail and the processor keeps serving", contractMalformed},
		{"claim check", contractClaimCheck},
		{"skipped", contractSkipped},
		{"many lanes at once", contractMany},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, e) })
	}
	r.stop()
	if err := r.wait(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Run("slow model is kept alive by InProgress", func(t *testing.T) { contractSlowModel(t, e) })
	t.Run("crash between commit steps, then restart", func(t *testing.T) { contractCrash(t, e) })
}

func contractActivate(t *testing.T, e *env) {
	spec := reqSpec{id: "act-1", lane: "act"}
	e.publish(t, e.body(spec), spec.id)
	ev := onlyEvent(t, e.awaitOutcome(t, spec.id))
	if ev.Subject != topology.SubjectActivated || ev.str("kind") != "activated" {
		t.Fatalf("want activated, got %s %v", ev.Subject, ev.Body)
	}
	if ev.MsgID != "act-1:activated" || ev.str("event_id") != ev.MsgID {
		t.Fatalf("event id: header %q body %q", ev.MsgID, ev.str("event_id"))
	}
	if ev.num("generation") != 1 || ev.Body["checkpoint"] == nil || ev.str("checkpoint_hash") == "" {
		t.Fatalf("activated event incomplete: %v", ev.Body)
	}
	if ev.Trace == "" || ev.Kind != "activated" {
		t.Fatalf("headers: traceparent %q, kind %q", ev.Trace, ev.Kind)
	}
	h := e.head(t, laneOf("act"))
	if h == nil || h.CheckpointID != "act-1" || h.Generation != 1 || h.HeadHash != ev.str("checkpoint_hash") {
		t.Fatalf("head not moved: %+v", h)
	}
	testenv.Eventually(t, waitLong, func() error {
		if h := e.head(t, laneOf("act")); len(h.Outbox) != 0 {
			return fmt.Errorf("outbox not cleared: %d records", len(h.Outbox))
		}
		return nil
	})
	var job *event
	for _, j := range e.streamEvents(t, topology.StreamHarvest) {
		if j.str("head_entry_id") == "act-1" {
			job = &j
		}
	}
	if job == nil || job.str("conversation_id") != "thread-act" || job.num("request_seq") == 0 {
		t.Fatalf("harvest job missing or incomplete: %+v", job)
	}
	// Events go out before the ledger records the outcome: poll.
	testenv.Eventually(t, waitLong, func() error {
		if got := activationRecord(t, e, "act-1"); got != "act-1:activated" {
			return fmt.Errorf("the request's record names outcome %q", got)
		}
		return nil
	})
}

// activationRecord is the event id of the outcome a repeat of an
// activated request re-publishes, from the request's record: its ledger
// entry at activated, or, for a local summarizer's request activated on
// its first delivery, which leaves no ledger entry, the plan stored with
// its checkpoint (docs/architecture.md, "The commit path"); "" while the
// request has neither.
func activationRecord(t *testing.T, e *env, id string) string {
	t.Helper()
	if en := e.ledgerEntry(t, id); en != nil {
		if en.State != ledger.Activated {
			return ""
		}
		return recordedOutcome(t, e, en)
	}
	cp, err := e.checkpoint(t, id)
	if err != nil || cp == nil || cp.Plan == nil || len(cp.Plan.Outbox) == 0 || cp.RequestHash == "" {
		return ""
	}
	return cp.Plan.Outbox[0].EventID
}

// recordedOutcome is the event id of the outcome a finished request's
// repeat re-publishes: the ledger's, or for a local summarizer's request
// the first record of the plan stored with its checkpoint (and then the
// ledger holds no copy of it).
func recordedOutcome(t *testing.T, e *env, en *ledger.Entry) string {
	t.Helper()
	switch {
	case en.Outcome != nil && !en.OutcomeInCheckpoint:
		return en.Outcome.EventID
	case en.Outcome == nil && en.OutcomeInCheckpoint:
		cp, err := e.checkpoint(t, en.RequestID)
		if err != nil || cp == nil || cp.Plan == nil || len(cp.Plan.Outbox) == 0 {
			t.Fatalf("outcome in the checkpoint of %s, which has no plan: %+v (%v)", en.RequestID, cp, err)
		}
		return cp.Plan.Outbox[0].EventID
	}
	t.Fatalf("ledger entry of %s: outcome %v, in checkpoint %v", en.RequestID, en.Outcome, en.OutcomeInCheckpoint)
	return ""
}

func contractRepeat(t *testing.T, e *env) {
	spec := reqSpec{id: "rep-1", lane: "rep"}
	e.publish(t, e.body(spec), spec.id)
	first := onlyEvent(t, e.awaitOutcome(t, spec.id))
	if ack := e.publish(t, e.body(spec), spec.id); !ack.Duplicate {
		t.Fatal("same Nats-Msg-Id inside the window was not deduplicated by the stream")
	}
	// Without the header the stream keeps it, as after the window: the ledger
	// must make it a no-op that republishes the same outcome.
	resendAndSettle(t, e, e.body(spec))
	again := onlyEvent(t, e.eventsFor(t, spec.id))
	if again.MsgID != first.MsgID {
		t.Fatalf("outcome id changed: %s then %s", first.MsgID, again.MsgID)
	}
	if h := e.head(t, laneOf("rep")); h.Generation != 1 {
		t.Fatalf("second activation: generation %d", h.Generation)
	}
	// A different body under the used id is request_id_conflict.
	other := reqSpec{id: "rep-1", lane: "rep", events: 4}
	e.publish(t, e.body(other), "")
	testenv.Eventually(t, waitLong, func() error {
		for _, ev := range e.eventsFor(t, spec.id) {
			if ev.code() != errcode.RequestIDConflict {
				continue
			}
			if d := errorDetails(ev); d["request_id"] != spec.id {
				t.Fatalf("request_id_conflict details %v do not name the request", d)
			}
			return nil
		}
		return fmt.Errorf("no request_id_conflict yet")
	})
	if en := e.ledgerEntry(t, "rep-1"); en.State != ledger.Activated {
		t.Fatalf("conflict overwrote the ledger: %+v", en)
	}
}

func contractRace(t *testing.T, e *env) {
	base := reqSpec{id: "race-0", lane: "race"}
	e.publish(t, e.body(base), base.id)
	onlyEvent(t, e.awaitOutcome(t, base.id))
	a, b := reqSpec{id: "race-a", lane: "race", parent: "race-0"}, reqSpec{id: "race-b", lane: "race", parent: "race-0"}
	e.publish(t, e.body(a), a.id)
	e.publish(t, e.body(b), b.id)
	ea, eb := onlyEvent(t, e.awaitOutcome(t, a.id)), onlyEvent(t, e.awaitOutcome(t, b.id))
	kinds := []string{ea.str("kind"), eb.str("kind")}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"activated", "failed"}) {
		t.Fatalf("want one activated and one failed, got %v", kinds)
	}
	failed := ea
	if ea.str("kind") == "activated" {
		failed = eb
	}
	if failed.code() != errcode.StaleHead {
		t.Fatalf("loser failed with %q, want stale_head", failed.code())
	}
	if h := e.head(t, laneOf("race")); h.Generation != 2 {
		t.Fatalf("generation %d, want 2", h.Generation)
	}
}

func contractChain(t *testing.T, e *env) {
	parent, parentHash := "", ""
	for i := 1; i <= 3; i++ {
		spec := reqSpec{id: fmt.Sprintf("chain-%d", i), lane: "chain", parent: parent}
		e.publish(t, e.body(spec), spec.id)
		ev := onlyEvent(t, e.awaitOutcome(t, spec.id))
		if ev.str("kind") != "activated" || ev.num("generation") != int64(i) {
			t.Fatalf("step %d: %v", i, ev.Body)
		}
		if got, _ := ev.Body["parent_checkpoint_hash"].(string); got != parentHash {
			t.Fatalf("step %d cites parent hash %q, want %q", i, got, parentHash)
		}
		cp, err := e.checkpoint(t, spec.id)
		if err != nil || cp.ParentHash != parentHash || cp.Hash != ev.str("checkpoint_hash") {
			t.Fatalf("stored checkpoint %d: %+v %v", i, cp, err)
		}
		parent, parentHash = spec.id, ev.str("checkpoint_hash")
	}
}

func contractMalformed(t *testing.T, e *env) {
	cases := []struct {
		name, msgID string
		body        []byte
		code        string
	}{
		{"not json", "bad-json", []byte("{nope"), errcode.InvalidRequest},
		{"unknown version", "bad-v", e.body(reqSpec{id: "bad-v", extra: map[string]any{"v": 9}}), errcode.UnsupportedVersion},
		{"no events", "bad-ev", e.body(reqSpec{id: "bad-ev", extra: map[string]any{"events": nil}}), errcode.InvalidRequest},
		{"msg id differs", "other-id", e.body(reqSpec{id: "bad-id"}), errcode.InvalidRequest},
		{"engine rejects", "bad-trigger", e.body(reqSpec{id: "bad-trigger", extra: map[string]any{"trigger": nil}}), errcode.InvalidRequest},
		{"deadline passed", "bad-dl", e.body(reqSpec{id: "bad-dl", lane: "dl", extra: map[string]any{"deadline_at": "2001-01-01T00:00:00Z"}}), errcode.DeadlineExceeded},
		{"stale parent", "bad-parent", e.body(reqSpec{id: "bad-parent", lane: "nolane", parent: "nope"}), errcode.StaleHead},
	}
	for _, c := range cases {
		e.publish(t, c.body, c.msgID)
		ev := onlyEvent(t, e.awaitOutcome(t, c.msgID))
		if ev.Subject != topology.SubjectFailed || ev.code() != c.code {
			t.Fatalf("%s: got %s %q, want failed %q", c.name, ev.Subject, ev.code(), c.code)
		}
		if ev.num("stream_sequence") == 0 {
			t.Fatalf("%s: failed event lacks stream_sequence", c.name)
		}
	}
	ok := reqSpec{id: "after-bad", lane: "after"}
	e.publish(t, e.body(ok), ok.id)
	if ev := onlyEvent(t, e.awaitOutcome(t, ok.id)); ev.str("kind") != "activated" {
		t.Fatalf("processor stopped serving: %v", ev.Body)
	}
}

func contractClaimCheck(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	full := reqSpec{id: "claim-1", lane: "claim"}
	var m map[string]any
	mustJSON(t, e.body(full), &m)
	events := mustMarshal(t, m["events"])
	if _, err := e.stores.Lanes.PutBytes(ctx, "claim-1-events", events); err != nil {
		t.Fatal(err)
	}
	spec := reqSpec{id: "claim-1", lane: "claim", extra: map[string]any{"events": nil, "events_object": "claim-1-events"}}
	e.publish(t, e.body(spec), spec.id)
	if ev := onlyEvent(t, e.awaitOutcome(t, spec.id)); ev.str("kind") != "activated" {
		t.Fatalf("claim-checked request: %v", ev.Body)
	}
	missing := reqSpec{id: "claim-2", lane: "claim2", extra: map[string]any{"events": nil, "events_object": "nothing-here"}}
	e.publish(t, e.body(missing), missing.id)
	if ev := onlyEvent(t, e.awaitOutcome(t, missing.id)); ev.code() != errcode.EventsObjectMissing {
		t.Fatalf("missing object: %v", ev.Body)
	}
	big := make([]byte, testConfig().MaxEventsObjectBytes+1)
	if _, err := e.stores.Lanes.PutBytes(ctx, "claim-3-events", big); err != nil {
		t.Fatal(err)
	}
	tooBig := reqSpec{id: "claim-3", lane: "claim3", extra: map[string]any{"events": nil, "events_object": "claim-3-events"}}
	e.publish(t, e.body(tooBig), tooBig.id)
	if ev := onlyEvent(t, e.awaitOutcome(t, tooBig.id)); ev.code() != errcode.PayloadTooLarge {
		t.Fatalf("oversized object: %v", ev.Body)
	}
}

func contractSkipped(t *testing.T, e *env) {
	spec := reqSpec{id: "skip-1", lane: "skip", events: 1, extra: map[string]any{"trigger": "auto"}}
	e.publish(t, e.body(spec), spec.id)
	ev := onlyEvent(t, e.awaitOutcome(t, spec.id))
	if ev.Subject != topology.SubjectSkipped || ev.str("reason") == "" {
		t.Fatalf("want skipped with a reason: %s %v", ev.Subject, ev.Body)
	}
	if h := e.head(t, laneOf("skip")); h != nil {
		t.Fatalf("skipped request moved the head: %+v", h)
	}
}

func contractMany(t *testing.T, e *env) {
	const n = 24
	for i := range n {
		spec := reqSpec{id: fmt.Sprintf("many-%d", i), lane: fmt.Sprintf("many-%d", i%6), parent: ""}
		if i >= 6 {
			continue // one per lane: parents are unknown until the first lands
		}
		e.publish(t, e.body(spec), spec.id)
	}
	for i := range 6 {
		if ev := onlyEvent(t, e.awaitOutcome(t, fmt.Sprintf("many-%d", i))); ev.str("kind") != "activated" {
			t.Fatalf("many-%d: %v", i, ev.Body)
		}
	}
	if e.stepDown != nil {
		e.stepDown() // the requests stream's leader moves mid-run
	}
	for i := 6; i < n; i++ {
		spec := reqSpec{id: fmt.Sprintf("many-%d", i), lane: fmt.Sprintf("many-%d", i%6), parent: fmt.Sprintf("many-%d", i-6)}
		e.publish(t, e.body(spec), spec.id)
		if ev := onlyEvent(t, e.awaitOutcome(t, spec.id)); ev.str("kind") != "activated" {
			t.Fatalf("%s: %v", spec.id, ev.Body)
		}
		if i == n/2 && e.stepDown != nil {
			e.stepDown()
		}
	}
	for l := range 6 {
		if h := e.head(t, laneOf(fmt.Sprintf("many-%d", l))); h.Generation != n/6 {
			t.Fatalf("lane %d generation %d, want %d", l, h.Generation, n/6)
		}
	}
}

func contractSlowModel(t *testing.T, e *env) {
	cfg := testConfig()
	cfg.AttemptTimeout = 30 * time.Second                   // the engine may call the model once per chunk
	slow := &testSummarizer{delay: 3500 * time.Millisecond} // 3.5 × AckWait
	if e.realEngine {
		slow.inner = offline.New(offline.DefaultOptions())
	}
	r := e.start(t, cfg, nil, slow)
	spec := reqSpec{id: "slow-1", lane: "slow"}
	ack := e.publish(t, e.body(spec), spec.id)
	if ev := onlyEvent(t, e.awaitOutcome(t, spec.id)); ev.str("kind") != "activated" {
		t.Fatalf("slow request: %v", ev.Body)
	}
	if n := slow.calls.Load(); n < 1 || n > 3 {
		t.Fatalf("model called %d times, want one call per chunk (redelivered while working?)", n)
	}
	if info, err := e.consumerInfo(t); err != nil || info.NumRedelivered != 0 {
		t.Fatalf("redelivered while the model worked: %+v %v", info, err)
	}
	if en := e.ledgerEntry(t, spec.id); len(en.Attempts) != 1 {
		t.Fatalf("ledger attempts %d, want 1", len(en.Attempts))
	}
	_ = ack
	r.stop()
	if err := r.wait(t); err != nil {
		t.Fatal(err)
	}
}

// contractCrash stops the processor after each commit step in turn, starts
// a fresh one, and checks that the request ends in exactly one terminal
// event with its head moved exactly once. It runs every step of both
// commit paths: a remote summarizer's, whose plan is in the ledger, and a
// local one's, whose plan is stored with its checkpoint (and which has no
// summary_requested or ledger_stored step).
func contractCrash(t *testing.T, e *env) {
	for _, remote := range []bool{true, false} {
		for _, step := range crashSteps {
			if !remote && (step == stepSummaryRequested || step == stepLedgerStored) {
				continue
			}
			name := "local/" + step
			if remote {
				name = "remote/" + step
			}
			t.Run(name, func(t *testing.T) { crashAndRestart(t, e, step, remote) })
		}
	}
}

func crashAndRestart(t *testing.T, e *env, step string, remote bool) {
	cfg := testConfig()
	var hit atomic.Bool
	cfg.crashAt = func(s string) bool { return s == step && hit.CompareAndSwap(false, true) }
	id, lane := "crash-"+step, "crash-"+step
	var s engine.Summarizer // the default: the offline one with the real engine
	if remote {
		s = e.remoteSummarizer() // a local summarizer's calls are not recorded
		id, lane = "crash-remote-"+step, "crash-remote-"+step
	}
	first := e.start(t, cfg, nil, s)
	spec := reqSpec{id: id, lane: lane}
	body := e.body(spec)
	e.publish(t, body, spec.id)
	if err := first.wait(t); err == nil {
		t.Fatalf("processor did not stop at %s", step)
	}
	second := e.start(t, testConfig(), nil, s)
	ev := onlyEvent(t, e.awaitOutcome(t, id))
	if ev.str("kind") != "activated" {
		t.Fatalf("after crash at %s: %v", step, ev.Body)
	}
	h := e.head(t, laneOf(lane))
	if h == nil || h.CheckpointID != id || h.Generation != 1 {
		t.Fatalf("head after crash at %s: %+v", step, h)
	}
	testenv.Eventually(t, waitLong, func() error {
		if en := e.ledgerEntry(t, id); en == nil || en.State != ledger.Activated {
			return fmt.Errorf("ledger entry %+v", en)
		}
		if h := e.head(t, laneOf(lane)); len(h.Outbox) != 0 {
			return fmt.Errorf("%d outbox records left", len(h.Outbox))
		}
		return nil
	})
	// Let redeliveries settle, then check again that nothing doubled.
	second.stop()
	if err := second.wait(t); err != nil {
		t.Fatal(err)
	}
	onlyEvent(t, e.eventsFor(t, id))
	checkHarvestJob(t, e, id, body)
}

// checkHarvestJob checks that the request's harvest job was queued once and
// is the pointer job of its cut: it names the request it was made from by
// its stream sequence, and the cut events are the request's events the
// activated checkpoint did not retain.
func checkHarvestJob(t *testing.T, e *env, id string, body []byte) {
	t.Helper()
	var jobs []event
	for _, j := range e.streamEvents(t, topology.StreamHarvest) {
		if j.str("head_entry_id") == id {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) != 1 {
		t.Fatalf("%d harvest jobs for %s, want 1", len(jobs), id)
	}
	job := jobs[0]
	if job.num("v") != facts.PointerJobVersion || job.Body["transcript"] != nil {
		t.Fatalf("harvest job of %s is not a pointer job: %v", id, job.Body)
	}
	stream, err := e.js.Stream(context.Background(), topology.StreamRequests)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.GetMsg(context.Background(), uint64(job.num("request_seq")))
	if err != nil || !bytes.Equal(msg.Data, body) {
		t.Fatalf("request_seq %d of %s's job names another message (%v)", job.num("request_seq"), id, err)
	}
	retained := map[string]bool{}
	for _, v := range onlyEvent(t, e.awaitOutcome(t, id)).Body["retained_event_ids"].([]any) {
		retained[v.(string)] = true
	}
	var want []any
	var m struct {
		Events []struct {
			EventID string `json:"event_id"`
		} `json:"events"`
	}
	mustJSON(t, body, &m)
	for _, ev := range m.Events {
		if !retained[ev.EventID] {
			want = append(want, ev.EventID)
		}
	}
	if len(want) == 0 || !reflect.DeepEqual(job.Body["entry_ids"], want) {
		t.Fatalf("harvest job of %s cuts %v, want %v", id, job.Body["entry_ids"], want)
	}
}
