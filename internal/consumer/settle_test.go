package consumer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// hostileMsgIDLen is a Nats-Msg-Id that fits a stored request's header
// (at most 64 KiB) but not the header of a failed event naming it
// ("<id>:failed" plus the event kind): the server refuses that event with
// JetStream error 10097.
const hostileMsgIDLen = 65500

// publishBare sends a request body with the given Nats-Msg-Id and no other
// header, and returns its stream sequence.
func (e *env) publishBare(t testing.TB, body []byte, msgID string) uint64 {
	t.Helper()
	msg := nats.NewMsg(topology.SubjectRequested)
	msg.Data = body
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := e.js.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID))
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return ack.Sequence
}

// deadLetters returns the dead-letter advisories by the stream sequence of
// the request they name.
func (e *env) deadLetters(t testing.TB) map[uint64]event {
	t.Helper()
	out := map[uint64]event{}
	for _, ev := range e.streamEvents(t, topology.StreamDeadLetter) {
		out[uint64(ev.num("stream_seq"))] = ev
	}
	return out
}

// Messages whose failure cannot be recorded must not hold the only worker
// (or the consumer's ack-pending slots) while they are redelivered with
// backoff: with the production backoff (2 s, 10 s, 30 s, ...) each one
// delivered again would keep the valid request behind them waiting for
// minutes. Each is delivered once: its failed event is published, or, when
// it cannot be, it is terminated at once and dead-lettered.
func TestUnsettleableMessagesDoNotDelayOthers(t *testing.T) {
	e := singleEnv(t)
	cfg := testConfig()
	cfg.Workers = 1
	cfg.MaxDeliver = DefaultConfig().MaxDeliver
	cfg.NakBackoff = DefaultConfig().NakBackoff
	cfg.AckWait = 30 * time.Second
	e.start(t, cfg, nil, nil)

	const hostile = 4
	seqs := make([]uint64, hostile)
	ids := make([]string, hostile)
	for i := range seqs {
		ids[i] = fmt.Sprintf("h%d-", i) + strings.Repeat("x", hostileMsgIDLen-3)
		// Distinct bodies: with an id too long to use, a failed event is
		// named after its body.
		seqs[i] = e.publishBare(t, fmt.Appendf(nil, "not a request %d", i), ids[i])
	}
	valid := reqSpec{id: "after-hostile", lane: "after-hostile"}
	e.publish(t, e.body(valid), valid.id)

	testenv.Eventually(t, 15*time.Second, func() error {
		if len(e.eventsFor(t, valid.id)) == 0 {
			return fmt.Errorf("the valid request is still waiting behind %d unsettleable messages", hostile)
		}
		return nil
	})
	if ev := onlyEvent(t, e.eventsFor(t, valid.id)); ev.Kind != kindActivated {
		t.Fatalf("valid request ended %s", ev.Kind)
	}
	// Each hostile message ended in exactly one way, on its first delivery.
	testenv.Eventually(t, 10*time.Second, func() error {
		dead := e.deadLetters(t)
		for i, seq := range seqs {
			failed := len(e.eventsForSequence(t, seq))
			adv, isDead := dead[seq]
			switch {
			case failed == 0 && !isDead:
				return fmt.Errorf("hostile message %d (seq %d) has neither a failed event nor a dead letter", i, seq)
			case failed > 0 && isDead:
				t.Fatalf("hostile message %d has a failed event and a dead letter: %v", i, adv.Body)
			case isDead && (adv.num("deliveries") != 1 || !strings.HasSuffix(adv.str("type"), "terminated")):
				t.Fatalf("hostile message %d was dead-lettered after %d deliveries (%s), want terminated on the first",
					i, adv.num("deliveries"), adv.str("type"))
			}
		}
		return nil
	})
	info, err := e.consumerInfo(t)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumRedelivered != 0 || info.NumAckPending != 0 {
		t.Fatalf("consumer: %d redelivered, %d pending; want none", info.NumRedelivered, info.NumAckPending)
	}
}

// A request that fails for bad input has its outcome (the failed event):
// it is settled and is not a dead letter. Only what Cairn could not settle
// is: here a failed event the events stream refuses.
func TestOnlyUnsettledRequestsAreDeadLettered(t *testing.T) {
	e := singleEnv(t)
	e.start(t, testConfig(), nil, nil)
	const bad = 3
	for i := range bad {
		spec := reqSpec{id: fmt.Sprintf("bad-%d", i), lane: "bad", extra: map[string]any{"trigger": ""}}
		e.publish(t, e.body(spec), spec.id)
		if ev := onlyEvent(t, e.awaitOutcome(t, spec.id)); ev.Kind != kindFailed {
			t.Fatalf("%s ended %s", spec.id, ev.Kind)
		}
	}
	testenv.Eventually(t, 10*time.Second, func() error {
		info, err := e.consumerInfo(t)
		if err != nil {
			return err
		}
		if info.NumAckPending != 0 {
			return fmt.Errorf("%d requests not settled yet", info.NumAckPending)
		}
		return nil
	})

	// An operator bounds the failed subject, so the next failed event
	// cannot be stored: that request cannot be settled.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := e.js.Stream(ctx, topology.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	sc.MaxMsgsPerSubject, sc.Discard, sc.DiscardNewPerSubject = bad, jetstream.DiscardNew, true
	if _, err := e.js.UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	spec := reqSpec{id: "bad-unsettled", lane: "bad", extra: map[string]any{"trigger": ""}}
	ack := e.publish(t, e.body(spec), spec.id)
	testenv.Eventually(t, waitLong, func() error {
		if _, ok := e.deadLetters(t)[ack.Sequence]; !ok {
			return fmt.Errorf("the unsettled request is not dead-lettered yet")
		}
		return nil
	})
	dead := e.deadLetters(t)
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want only the unsettled request's: %v", len(dead), dead)
	}
	if n := len(e.eventsFor(t, spec.id)); n != 0 {
		t.Fatalf("the unsettled request has %d events", n)
	}
}

// A failed event the events stream refuses for its size (JetStream 10054,
// an operator's max message size) is refused again on every delivery: the
// request is terminated on its first delivery and dead-lettered with a
// reason naming the cause, instead of being redelivered with the request
// backoff while it holds a slot.
func TestUnrecordableFailureIsTerminatedOnFirstDelivery(t *testing.T) {
	e := singleEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := e.js.Stream(ctx, topology.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	limited := sc
	limited.MaxMsgSize = 64
	if _, err := e.js.UpdateStream(ctx, limited); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Workers = 1
	cfg.MaxDeliver = DefaultConfig().MaxDeliver
	cfg.NakBackoff = DefaultConfig().NakBackoff
	cfg.AckWait = 30 * time.Second
	e.start(t, cfg, nil, nil)

	const bad = 3
	seqs := make([]uint64, bad)
	for i := range seqs {
		spec := reqSpec{id: fmt.Sprintf("unrecordable-%d", i), lane: "unrecordable", extra: map[string]any{"trigger": ""}}
		seqs[i] = e.publish(t, e.body(spec), spec.id).Sequence
	}
	testenv.Eventually(t, 10*time.Second, func() error {
		dead := e.deadLetters(t)
		for _, seq := range seqs {
			if _, ok := dead[seq]; !ok {
				return fmt.Errorf("request at seq %d not dead-lettered yet (%d dead letters)", seq, len(dead))
			}
		}
		return nil
	})
	for _, seq := range seqs {
		adv := e.deadLetters(t)[seq]
		if adv.num("deliveries") != 1 || adv.str("reason") != "unsettled invalid_compaction_request: jetstream 10054" {
			t.Fatalf("seq %d: %v; want terminated on its first delivery", seq, adv.Body)
		}
	}

	// The operator lifts the limit: the next request is served at once.
	if _, err := e.js.UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	valid := reqSpec{id: "after-unrecordable", lane: "after-unrecordable"}
	e.publish(t, e.body(valid), valid.id)
	testenv.Eventually(t, 10*time.Second, func() error {
		if len(e.eventsFor(t, valid.id)) == 0 {
			return fmt.Errorf("valid request not served yet")
		}
		return nil
	})
}

// eventsForSequence returns the events that answer the request stored at
// seq: a request whose id was unusable is known by its sequence only.
func (e *env) eventsForSequence(t testing.TB, seq uint64) []event {
	var out []event
	for _, ev := range e.streamEvents(t, topology.StreamEvents) {
		if uint64(ev.num("stream_sequence")) == seq {
			out = append(out, ev)
		}
	}
	return out
}
