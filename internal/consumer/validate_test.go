package consumer

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/summarize/offline"
)

// On a lane that already has a head, a request with its own mistake and a
// stale parent fails with its own mistake: validation comes before the
// parent fence, so the first error a producer sees is the one it made.
func TestRequestErrorsComeBeforeTheParentFence(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	e.publish(t, engineBody(t, "vf-1", "vf", "", 40, nil), "vf-1")
	if ev := onlyEvent(t, e.awaitOutcome(t, "vf-1")); ev.str("kind") != "activated" {
		t.Fatalf("first request: %v", ev.Body)
	}

	tampered := func(id string) []byte {
		var m map[string]any
		mustJSON(t, engineBody(t, id, "vf", "", 40, nil), &m) // parent null: stale on this lane
		first := m["events"].([]any)[0].(map[string]any)
		first["content_hash"] = strings.Repeat("0", 64)
		return mustMarshal(t, m)
	}
	withTrigger := func(id string) []byte {
		var m map[string]any
		mustJSON(t, engineBody(t, id, "vf", "", 40, nil), &m)
		m["trigger"] = "sometimes"
		return mustMarshal(t, m)
	}
	cases := []struct {
		id    string
		body  []byte
		code  string
		field string
	}{
		{"vf-hash", tampered("vf-hash"), errcode.InvalidEvent, "content_hash"},
		{"vf-trigger", withTrigger("vf-trigger"), errcode.InvalidRequest, ""},
	}
	for _, c := range cases {
		e.publish(t, c.body, c.id)
		ev := onlyEvent(t, e.awaitOutcome(t, c.id))
		if ev.code() != c.code {
			t.Fatalf("%s: failed with %q, want %q (%v)", c.id, ev.code(), c.code, ev.Body["error"])
		}
		details, _ := ev.Body["error"].(map[string]any)["details"].(map[string]any)
		if c.field != "" && details["field"] != c.field {
			t.Fatalf("%s: details %v do not name %s", c.id, details, c.field)
		}
	}
}

// A resend of a finished request after its deadline_at gets the recorded
// outcome, not deadline_exceeded.
func TestResendAfterDeadlineReplaysTheOutcome(t *testing.T) {
	e := singleEnv(t)
	var clock atomic.Int64 // unix nanoseconds
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	p, err := New(testConfig(), Deps{JS: e.js, Stores: e.stores, Compactor: EngineCompactor{},
		Summarizer: offline.New(offline.DefaultOptions()), Logger: log, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	e.run(t, p)

	var m map[string]any
	mustJSON(t, engineBody(t, "dl-1", "dl", "", 40, nil), &m)
	m["deadline_at"] = now().Add(time.Hour).UTC().Format(time.RFC3339)
	body := mustMarshal(t, m)
	e.publish(t, body, "")
	if first := onlyEvent(t, e.awaitOutcome(t, "dl-1")); first.str("kind") != "activated" {
		t.Fatalf("first: %v", first.Body)
	}
	clock.Add(int64(2 * time.Hour))
	resendAndSettle(t, e, body) // without Nats-Msg-Id the stream keeps the resend
	for _, ev := range e.eventsFor(t, "dl-1") {
		if ev.str("kind") != "activated" {
			t.Fatalf("the resend after the deadline published %v", ev.Body)
		}
	}
}

// stale_head names both checkpoints as plain JSON values.
func TestStaleHeadDetailsArePlainValues(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	e.publish(t, engineBody(t, "sh-1", "sh", "", 40, nil), "sh-1")
	onlyEvent(t, e.awaitOutcome(t, "sh-1"))
	e.publish(t, engineBody(t, "sh-2", "sh", "", 40, nil), "sh-2")
	ev := onlyEvent(t, e.awaitOutcome(t, "sh-2"))
	details, _ := ev.Body["error"].(map[string]any)["details"].(map[string]any)
	if ev.code() != errcode.StaleHead || details["active_checkpoint_id"] != "sh-1" || details["parent_checkpoint_id"] != nil {
		t.Fatalf("stale_head: %v", ev.Body["error"])
	}
}

// The lane state stored after an activation keeps its accounting units, so
// an automatic request right after it, with no new tokens, is skipped.
func TestAutoRequestRightAfterACompactionIsSkipped(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	e.publish(t, engineBody(t, "at-1", "at", "", 40, nil), "at-1")
	if ev := onlyEvent(t, e.awaitOutcome(t, "at-1")); ev.str("kind") != "activated" {
		t.Fatalf("first: %v", ev.Body)
	}
	var m map[string]any
	mustJSON(t, engineBody(t, "at-2", "at", "at-1", 40, nil), &m)
	m["trigger"] = "auto"
	m["new_tokens_since_compaction"] = 0
	e.publish(t, mustMarshal(t, m), "at-2")
	ev := onlyEvent(t, e.awaitOutcome(t, "at-2"))
	if ev.str("kind") != "skipped" || ev.str("reason") != "insufficient_new_tokens" {
		t.Fatalf("auto request with no new tokens: %v", ev.Body)
	}
}

// The automatic-compaction limit is per root turn: a request of a new
// root turn is not held back by the count of the turn before.
func TestAutomaticLimitIsPerRootTurn(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	auto := func(id, parent, turn string) map[string]any {
		var m map[string]any
		mustJSON(t, engineBody(t, id, "turns", parent, 40, nil), &m)
		m["trigger"], m["root_turn_id"], m["new_tokens_since_compaction"] = "auto", turn, 100000
		m["policy"].(map[string]any)["maximum_auto_compactions_per_root_turn"] = 1
		m["policy"].(map[string]any)["minimum_new_tokens_before_recompact"] = 1
		return m
	}
	outcome := func(m map[string]any) event {
		id := m["request_id"].(string)
		e.publish(t, mustMarshal(t, m), id)
		return onlyEvent(t, e.awaitOutcome(t, id))
	}
	if ev := outcome(auto("turn-a1", "", "turn-a")); ev.str("kind") != "activated" {
		t.Fatalf("first automatic compaction: %v", ev.Body)
	}
	if ev := outcome(auto("turn-a2", "turn-a1", "turn-a")); ev.str("reason") != "automatic_limit" {
		t.Fatalf("second in the same turn: %v", ev.Body)
	}
	if ev := outcome(auto("turn-b1", "turn-a1", "turn-b")); ev.str("reason") == "automatic_limit" {
		t.Fatalf("first of a new turn: %v", ev.Body)
	}
}

// A request without a parent is compacted without reading the lane head
// (assumesNoHead); on a lane that has one it is still stale_head, with
// the fence's message, whether the engine would activate or skip it.
func TestParentlessRequestOnALaneWithAHeadIsStale(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	activate(t, e, "ph-1", "ph", "")
	skippable := withTrigger(t, engineBody(t, "ph-3", "ph", "", 3, nil), "auto") // below its trigger: the engine skips it
	for id, body := range map[string][]byte{"ph-2": engineBody(t, "ph-2", "ph", "", 40, nil), "ph-3": skippable} {
		e.publish(t, body, id)
		ev := onlyEvent(t, e.awaitOutcome(t, id))
		if ev.code() != errcode.StaleHead || ev.Body["error"].(map[string]any)["message"] != "parent_checkpoint_id is not the lane's active checkpoint" {
			t.Fatalf("%s: %v", id, ev.Body)
		}
	}
}
