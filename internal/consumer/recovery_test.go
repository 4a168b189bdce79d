package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
)

// A model call whose outcome is unknown (the process died during it) is
// not repeated while it may still run; after its deadline it is retried,
// and both attempts show in the ledger and in provider_usage.
func TestUncertainAttemptRetriedAfterDeadline(t *testing.T) {
	e := singleEnv(t)
	cfg := testConfig()
	cfg.AttemptTimeout = 2 * time.Second
	var hit atomic.Bool
	cfg.crashAt = func(s string) bool { return s == stepSummaryRequested && hit.CompareAndSwap(false, true) }
	first := e.start(t, cfg, nil, nil)
	spec := reqSpec{id: "unc-1", lane: "unc"}
	e.publish(t, e.body(spec), spec.id)
	if err := first.wait(t); err == nil {
		t.Fatal("processor did not stop")
	}
	en := e.ledgerEntry(t, spec.id)
	if en.State != ledger.SummaryRequested || len(en.Attempts) != 1 {
		t.Fatalf("ledger before restart: %+v", en)
	}
	deadline := en.Attempts[0].Deadline
	sum := &testSummarizer{}
	cfg.crashAt = nil
	e.start(t, cfg, nil, sum)
	ev := onlyEvent(t, e.awaitOutcome(t, spec.id))
	if ev.str("kind") != "activated" {
		t.Fatalf("got %v", ev.Body)
	}
	if time.Now().Before(deadline) {
		t.Fatal("retried before the uncertain attempt's deadline")
	}
	if n := sum.calls.Load(); n != 1 {
		t.Fatalf("model called %d times after restart, want 1", n)
	}
	en = e.ledgerEntry(t, spec.id)
	if len(en.Attempts) != 2 || en.Attempts[0].Done || !en.Attempts[1].Done {
		t.Fatalf("ledger attempts: %+v", en.Attempts)
	}
	usage, _ := json.Marshal(ev.Body["provider_usage"])
	if !strings.Contains(string(usage), `"outcome":"uncertain"`) {
		t.Fatalf("provider_usage hides the uncertain attempt: %s", usage)
	}
}

func TestUncertainAttemptFailsWhenConfigured(t *testing.T) {
	e := singleEnv(t)
	cfg := testConfig()
	cfg.AttemptTimeout = time.Second
	cfg.OnUncertain = OnUncertainFail
	var hit atomic.Bool
	cfg.crashAt = func(s string) bool { return s == stepSummaryRequested && hit.CompareAndSwap(false, true) }
	first := e.start(t, cfg, nil, nil)
	spec := reqSpec{id: "unc-2", lane: "unc2"}
	e.publish(t, e.body(spec), spec.id)
	if err := first.wait(t); err == nil {
		t.Fatal("processor did not stop")
	}
	sum := &testSummarizer{}
	cfg.crashAt = nil
	e.start(t, cfg, nil, sum)
	ev := onlyEvent(t, e.awaitOutcome(t, spec.id))
	if ev.code() != errcode.ProviderAttemptUncertain {
		t.Fatalf("got %v", ev.Body)
	}
	if d := errorDetails(ev); d["attempt"] == nil || d["requested_at"] == nil || d["deadline"] == nil {
		t.Fatalf("details %v do not name the uncertain attempt", d)
	}
	if sum.calls.Load() != 0 {
		t.Fatal("model called again under OnUncertain=fail")
	}
}

// A model that stays down is retried with backoff MaxDeliver times, then
// the request fails with provider_unavailable and the max-deliveries path
// ends in a failed event (never silently), after which the message is
// acked; a resend after that reopens it.
func TestTransientFailureEndsInProviderUnavailable(t *testing.T) {
	e := singleEnv(t)
	cfg := testConfig()
	cfg.MaxDeliver = 3
	down := &testSummarizer{fail: func(int64) error { return errModelDown }}
	r := e.start(t, cfg, nil, down)
	spec := reqSpec{id: "down-1", lane: "down"}
	e.publish(t, e.body(spec), spec.id)
	ev := onlyEvent(t, e.awaitOutcome(t, spec.id))
	if ev.code() != errcode.ProviderUnavailable {
		t.Fatalf("got %v", ev.Body)
	}
	if errObj, _ := ev.Body["error"].(map[string]any); errObj["retryable"] != true {
		t.Fatalf("provider_unavailable must be retryable: %v", errObj)
	}
	if n := down.calls.Load(); n != 3 {
		t.Fatalf("model called %d times, want MaxDeliver=3", n)
	}
	// The failure is recorded and published, so the request is settled:
	// acked, not terminated, and not a dead letter.
	testenv.Eventually(t, waitLong, func() error {
		info, err := e.consumerInfo(t)
		if err != nil {
			return err
		}
		if info.AckFloor.Stream < uint64(ev.num("stream_sequence")) {
			return fmt.Errorf("request not acked yet (ack floor %d)", info.AckFloor.Stream)
		}
		return nil
	})
	if evs := e.streamEvents(t, topology.StreamDeadLetter); len(evs) != 0 {
		t.Fatalf("a settled request was dead-lettered: %v", evs[0].Body)
	}
	r.stop()
	_ = r.wait(t)
	// The model is back; a resend of the same body reopens the request.
	e.start(t, cfg, nil, nil)
	e.publish(t, e.body(spec), "")
	testenv.Eventually(t, waitLong, func() error {
		for _, ev := range e.eventsFor(t, spec.id) {
			if ev.str("kind") == "activated" {
				return nil
			}
		}
		return fmt.Errorf("resend not activated yet")
	})
	// The event is published before the ledger records the outcome, so the
	// ledger may lag the event by a moment.
	testenv.Eventually(t, waitLong, func() error {
		if en := e.ledgerEntry(t, spec.id); en.State != ledger.Activated || en.Round != 1 {
			return fmt.Errorf("ledger after reopen: state %s round %d", en.State, en.Round)
		}
		return nil
	})
}

// The processor re-creates its durable consumer when it is deleted, and
// rides out a server restart.
func TestRecoversDeletedConsumerAndServerRestart(t *testing.T) {
	srv := testenv.NATS(t, testenv.Options{})
	e := newEnv(t, srv.JetStream(t), 1)
	e.start(t, testConfig(), nil, nil)
	one := reqSpec{id: "rec-1", lane: "rec1"}
	e.publish(t, e.body(one), one.id)
	onlyEvent(t, e.awaitOutcome(t, one.id))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.js.DeleteConsumer(ctx, topology.StreamRequests, topology.ConsumerProcessor); err != nil {
		t.Fatal(err)
	}
	two := reqSpec{id: "rec-2", lane: "rec2"}
	e.publish(t, e.body(two), two.id)
	onlyEvent(t, e.awaitOutcome(t, two.id))

	srv.Restart(t)
	three := reqSpec{id: "rec-3", lane: "rec3"}
	e.publish(t, e.body(three), three.id)
	if ev := onlyEvent(t, e.awaitOutcome(t, three.id)); ev.str("kind") != "activated" {
		t.Fatalf("after restart: %v", ev.Body)
	}
}

// Graceful stop finishes in-flight work and leaves no outbox records.
func TestGracefulDrain(t *testing.T) {
	e := singleEnv(t)
	slow := &testSummarizer{delay: 300 * time.Millisecond}
	r := e.start(t, testConfig(), nil, slow)
	spec := reqSpec{id: "drain-1", lane: "drain"}
	e.publish(t, e.body(spec), spec.id)
	testenv.Eventually(t, waitLong, func() error {
		if slow.calls.Load() == 0 {
			return fmt.Errorf("not started")
		}
		return nil
	})
	r.stop()
	if err := r.wait(t); err != nil {
		t.Fatal(err)
	}
	if ev := onlyEvent(t, e.eventsFor(t, spec.id)); ev.str("kind") != "activated" {
		t.Fatalf("in-flight request not finished by drain: %v", ev.Body)
	}
	if h := e.head(t, laneOf("drain")); len(h.Outbox) != 0 {
		t.Fatalf("outbox not flushed: %d", len(h.Outbox))
	}
}

// A checkpoint stored under a request's id by an attempt that never
// recorded its plan (the two writes run at once, and a crash can fall
// between them) is a leftover no head refers to: the attempt that records
// its plan replaces it instead of failing with checkpoint_conflict. A
// redelivery resuming from the recorded plan does the same.
func TestLeftoverCheckpointIsReplacedByThePlanHolder(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	ctx := context.Background()
	store := lanes.New(e.stores.Heads, e.stores.Checkpoints)
	leftover := func(id string) {
		cp := &lanes.Checkpoint{ID: id, Hash: "leftover", Generation: 1, Body: json.RawMessage(`{"summary":"an earlier attempt"}`)}
		if err := store.PutCheckpoint(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	check := func(id, lane string) {
		t.Helper()
		ev := onlyEvent(t, e.awaitOutcome(t, id))
		if ev.str("kind") != "activated" {
			t.Fatalf("%s: %v", id, ev.Body)
		}
		cp, err := e.checkpoint(t, id)
		if err != nil || cp == nil {
			t.Fatalf("%s: checkpoint %v, %v", id, cp, err)
		}
		if h := e.head(t, laneOf(lane)); h == nil || cp.Hash != h.HeadHash || cp.Hash != ev.str("checkpoint_hash") {
			t.Fatalf("%s: stored checkpoint hash %s, head %+v, event %s", id, cp.Hash, h, ev.str("checkpoint_hash"))
		}
	}

	// A fresh request meets the leftover while recording its plan.
	r := e.start(t, testConfig(), nil, nil)
	leftover("left-1")
	e.publish(t, engineBody(t, "left-1", "left-1", "", 24, nil), "left-1")
	check("left-1", "left-1")
	r.stop()
	if err := r.wait(t); err != nil {
		t.Fatal(err)
	}

	// A request stopped right after recording its plan meets a leftover
	// written meanwhile when its redelivery resumes.
	cfg := testConfig()
	var hit atomic.Bool
	cfg.crashAt = func(s string) bool { return s == stepCheckpointStored && hit.CompareAndSwap(false, true) }
	first := e.start(t, cfg, nil, nil)
	e.publish(t, engineBody(t, "left-2", "left-2", "", 24, nil), "left-2")
	if err := first.wait(t); err == nil {
		t.Fatal("processor did not stop")
	}
	key, err := lanes.IDKey("left-2")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.stores.Checkpoints.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	leftover("left-2")
	second := e.start(t, testConfig(), nil, nil)
	check("left-2", "left-2")
	second.stop()
	if err := second.wait(t); err != nil {
		t.Fatal(err)
	}
}
