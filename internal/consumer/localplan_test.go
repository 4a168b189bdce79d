package consumer

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/testenv"
)

// startLocalAt starts a processor with the offline summarizer, the real
// engine and a clock ahead of the real one by ahead (attempt deadlines
// come from the clock, so it cannot stand still), stopping at step (none
// when "").
func startLocalAt(t *testing.T, e *env, ahead time.Duration, step string) *running {
	t.Helper()
	return startAt(t, e, ahead, step, offline.New(offline.DefaultOptions()))
}

// startRemoteAt is startLocalAt with a remote summarizer: the offline one
// behind testSummarizer, which is not a LocalSummarizer.
func startRemoteAt(t *testing.T, e *env, ahead time.Duration, step string) *running {
	t.Helper()
	return startAt(t, e, ahead, step, &testSummarizer{inner: offline.New(offline.DefaultOptions())})
}

func startAt(t *testing.T, e *env, ahead time.Duration, step string, s engine.Summarizer) *running {
	t.Helper()
	cfg := testConfig()
	if step != "" {
		var hit atomic.Bool
		cfg.crashAt = func(s string) bool { return s == step && hit.CompareAndSwap(false, true) }
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p, err := New(cfg, Deps{
		JS: e.js, Stores: e.stores, Compactor: EngineCompactor{}, Summarizer: s,
		Logger: log, Now: func() time.Time { return time.Now().Add(ahead) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return e.run(t, p)
}

func stopped(t *testing.T, r *running) {
	t.Helper()
	if err := r.wait(t); err == nil {
		t.Fatal("processor did not stop at its crash step")
	}
}

func finish(t *testing.T, r *running) {
	t.Helper()
	r.stop()
	if err := r.wait(t); err != nil {
		t.Fatal(err)
	}
}

// A local summarizer's checkpoint carries its plan, and a redelivery that
// computes the request again (here an hour later, so its created_at
// differs) activates the stored plan instead of its own.
func TestLocalPlanIsAdoptedNotRecomputed(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	first := startLocalAt(t, e, 0, stepCheckpointStored)
	e.publish(t, engineBody(t, "adopt-1", "adopt", "", 40, nil), "adopt-1")
	stopped(t, first)
	cp, err := e.checkpoint(t, "adopt-1")
	if err != nil || cp == nil || cp.Plan == nil || cp.RequestHash == "" {
		t.Fatalf("stored checkpoint %+v (%v), want one with its plan", cp, err)
	}
	if en := e.ledgerEntry(t, "adopt-1"); en != nil {
		t.Fatalf("ledger entry %+v before the head moved, want none", en)
	}
	stored := storedCreatedAt(t, cp.Body)
	second := startLocalAt(t, e, time.Hour, "")
	ev := onlyEvent(t, e.awaitOutcome(t, "adopt-1"))
	raw, _ := json.Marshal(ev.Body["checkpoint"])
	if got := storedCreatedAt(t, raw); ev.str("kind") != "activated" || got != stored {
		t.Fatalf("activated %s with created_at %q, want the stored plan's %q", ev.str("kind"), got, stored)
	}
	if h := e.head(t, laneOf("adopt")); h.HeadHash != cp.Hash {
		t.Fatalf("head hash %s, want the stored checkpoint's %s", h.HeadHash, cp.Hash)
	}
	finish(t, second)
	checkHarvestJob(t, e, "adopt-1", engineBody(t, "adopt-1", "adopt", "", 40, nil))
}

// A local summarizer's request that moved the head but was never recorded
// in the ledger (stopped right after the swap) is still found activated
// when the lane has moved on by the time it is redelivered.
func TestLocalActivationFoundAfterTheLaneMovedOn(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	first := startLocalAt(t, e, 0, stepHeadAdvanced)
	e.publish(t, engineBody(t, "moved-1", "moved", "", 40, nil), "moved-1")
	stopped(t, first)
	second := startLocalAt(t, e, 0, "")
	e.publish(t, engineBody(t, "moved-2", "moved", "moved-1", 40, nil), "moved-2")
	if ev := onlyEvent(t, e.awaitOutcome(t, "moved-2")); ev.str("kind") != "activated" {
		t.Fatalf("moved-2: %v", ev.Body)
	}
	ev := onlyEvent(t, e.awaitOutcome(t, "moved-1"))
	if ev.str("kind") != "activated" {
		t.Fatalf("moved-1 after the lane moved on: %v", ev.Body)
	}
	awaitLedgerState(t, e, "moved-1", ledger.Activated)
	finish(t, second)
	onlyEvent(t, e.eventsFor(t, "moved-1"))
	if h := e.head(t, laneOf("moved")); h.CheckpointID != "moved-2" || h.Generation != 2 {
		t.Fatalf("head %+v, want moved-2 at generation 2", h)
	}
}

// Another body under a request_id whose local plan is stored is
// request_id_conflict, and the stored plan's body is the one that
// activates and is recorded.
func TestLocalPlanOfAnotherBodyIsAConflict(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	first := startLocalAt(t, e, 0, stepHeadAdvanced)
	body := engineBody(t, "twin-1", "twin", "", 40, nil)
	e.publish(t, body, "twin-1")
	stopped(t, first)
	second := startLocalAt(t, e, 0, "")
	e.publish(t, engineBody(t, "twin-1", "twin", "", 41, nil), "") // no Msg-Id: not a duplicate
	awaitLedgerState(t, e, "twin-1", ledger.Activated)
	testenv.Eventually(t, waitLong, func() error {
		if n := len(e.eventsFor(t, "twin-1")); n < 2 {
			return fmt.Errorf("%d events for twin-1, want an outcome of each body", n)
		}
		return nil
	})
	finish(t, second)
	var activated, conflicts int
	for _, ev := range e.eventsFor(t, "twin-1") {
		switch {
		case ev.str("kind") == "activated":
			activated++
		case ev.code() == string(errcode.RequestIDConflict):
			conflicts++
		default:
			t.Errorf("unexpected event %v", ev.Body)
		}
	}
	if activated != 1 || conflicts != 1 {
		t.Fatalf("%d activated and %d request_id_conflict events, want one each", activated, conflicts)
	}
	if en := e.ledgerEntry(t, "twin-1"); en.ContentHash != ledger.ContentHash(body) {
		t.Fatal("the ledger records the other body")
	}
}

func awaitLedgerState(t *testing.T, e *env, id string, want ledger.State) {
	t.Helper()
	testenv.Eventually(t, waitLong, func() error {
		if en := e.ledgerEntry(t, id); en == nil || en.State != want {
			return fmt.Errorf("ledger entry of %s is %+v, want state %s", id, en, want)
		}
		return nil
	})
}

func storedCreatedAt(t *testing.T, checkpoint []byte) string {
	t.Helper()
	var body struct {
		CreatedAt string `json:"created_at"`
	}
	if err := json.Unmarshal(checkpoint, &body); err != nil || body.CreatedAt == "" {
		t.Fatalf("checkpoint without created_at (%v): %s", err, checkpoint)
	}
	return body.CreatedAt
}
