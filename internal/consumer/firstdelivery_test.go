package consumer

import (
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/ledger"
)

// The first delivery of a local summarizer's request reads no ledger
// (firstDelivery); these tests check that the outcomes it records are
// still the ones a repeat finds.

// A failure on a first delivery claims the id with a marker before the
// ledger records it, so a resend replays the failure and a different body
// under the id is request_id_conflict.
func TestFirstDeliveryFailureIsReplayed(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	bad := withTrigger(t, engineBody(t, "fd-bad", "fd-bad", "", 40, nil), "whenever")
	e.publish(t, bad, "fd-bad")
	failed := onlyEvent(t, e.awaitOutcome(t, "fd-bad"))
	if failed.code() != errcode.InvalidRequest {
		t.Fatalf("first: %v", failed.Body)
	}
	if cp, err := e.checkpoint(t, "fd-bad"); err != nil || cp == nil || !cp.IsMarker() {
		t.Fatalf("no marker for the failed request: %+v (%v)", cp, err)
	}
	if en := e.ledgerEntry(t, "fd-bad"); en == nil || en.State != ledger.Failed {
		t.Fatalf("ledger: %+v", en)
	}
	resendAndSettle(t, e, bad)
	if again := onlyEvent(t, e.eventsFor(t, "fd-bad")); again.MsgID != failed.MsgID {
		t.Fatalf("resend published %s after %s", again.MsgID, failed.MsgID)
	}
	resendAndSettle(t, e, engineBody(t, "fd-bad", "fd-bad", "", 40, nil))
	var codes []string
	for _, ev := range e.eventsFor(t, "fd-bad") {
		codes = append(codes, ev.code())
	}
	if len(codes) != 2 || codes[1] != errcode.RequestIDConflict {
		t.Fatalf("a valid body under the failed id: %v", codes)
	}
	if h := e.head(t, laneOf("fd-bad")); h != nil {
		t.Fatalf("a used id activated: %+v", h)
	}
}

// A skip on a first delivery is claimed the same way.
func TestFirstDeliverySkipIsReplayed(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	body := withTrigger(t, engineBody(t, "fd-skip", "fd-skip", "", 3, nil), "auto") // below its trigger: skipped
	e.publish(t, body, "fd-skip")
	skipped := onlyEvent(t, e.awaitOutcome(t, "fd-skip"))
	if skipped.str("kind") != "skipped" {
		t.Fatalf("first: %v", skipped.Body)
	}
	if cp, err := e.checkpoint(t, "fd-skip"); err != nil || cp == nil || !cp.IsMarker() {
		t.Fatalf("no marker for the skipped request: %+v (%v)", cp, err)
	}
	resendAndSettle(t, e, body)
	if again := onlyEvent(t, e.eventsFor(t, "fd-skip")); again.MsgID != skipped.MsgID {
		t.Fatalf("resend published %s after %s", again.MsgID, skipped.MsgID)
	}
}

// An activation of a first delivery leaves no ledger entry; a resend after
// the lane moved on further than HistoryLimit reaches still replays it
// (finishEarlierActivation), instead of calling it stale_head.
func TestActivationBeyondTheHistoryLimitIsReplayed(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	cfg := testConfig()
	cfg.HistoryLimit = 1
	e.start(t, cfg, nil, nil)
	first := activate(t, e, "fd-chain-0", "fd-chain", "")
	activate(t, e, "fd-chain-1", "fd-chain", "fd-chain-0")
	activate(t, e, "fd-chain-2", "fd-chain", "fd-chain-1")
	if en := e.ledgerEntry(t, "fd-chain-0"); en != nil {
		t.Fatalf("a first delivery's activation wrote the ledger: %+v", en)
	}
	resendAndSettle(t, e, first)
	if ev := onlyEvent(t, e.eventsFor(t, "fd-chain-0")); ev.str("kind") != "activated" {
		t.Fatalf("resend: %v", ev.Body)
	}
	if en := e.ledgerEntry(t, "fd-chain-0"); en == nil || en.State != ledger.Activated {
		t.Fatalf("the resend did not record the outcome: %+v", en)
	}
}

// A failure's marker stored, then the process killed before the ledger
// recorded the failure: the redelivery finds the marker, takes the ledger
// path, and records and publishes the failure once.
func TestAFailureKilledAfterItsMarkerEndsOnce(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	cfg := testConfig()
	var hit atomic.Bool
	cfg.crashAt = func(s string) bool { return s == stepOutcomeMarked && hit.CompareAndSwap(false, true) }
	first := e.start(t, cfg, nil, nil)
	bad := withTrigger(t, engineBody(t, "fd-kill", "fd-kill", "", 40, nil), "whenever")
	e.publish(t, bad, "fd-kill")
	if err := first.wait(t); err == nil {
		t.Fatal("processor did not stop at outcome_marked")
	}
	if en := e.ledgerEntry(t, "fd-kill"); en != nil {
		t.Fatalf("ledger written before the kill: %+v", en)
	}
	e.start(t, testConfig(), nil, nil)
	failed := onlyEvent(t, e.awaitOutcome(t, "fd-kill"))
	if failed.code() != errcode.InvalidRequest {
		t.Fatalf("after the kill: %v", failed.Body)
	}
	if en := e.ledgerEntry(t, "fd-kill"); en == nil || en.State != ledger.Failed {
		t.Fatalf("ledger: %+v", en)
	}
	resendAndSettle(t, e, bad)
	onlyEvent(t, e.eventsFor(t, "fd-kill"))
}
