package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// hostileDeadline is how long a hostile request may take to reach its
// failed event: one delivery, no retries.
const hostileDeadline = 5 * time.Second

// hostileMaxEventBytes bounds what a failed event may weigh on the wire.
const hostileMaxEventBytes = 64 << 10

// Hostile input ends in exactly one stored, typed, non-retryable failed
// event, fast, without closing the processor's connection, and the
// processor keeps serving.
func TestHostileInputEndsInOneStoredFailedEvent(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	nc := e.js.Conn()
	core := newFailedCounter(t, nc)
	e.start(t, testConfig(), nil, nil)

	with := func(id string, extra map[string]any) []byte {
		return e.body(reqSpec{id: id, lane: id, events: 10, extra: extra})
	}
	hugeMsgID := strings.Repeat("m", 65480)
	cases := []struct {
		name, msgID string
		body        []byte
		code        string
		field       string // the field the error's details name ("" when none)
		hashID      bool   // no usable id: the event is named after the body's hash
	}{
		{"events_object of 4 KiB", "h-obj", with("h-obj", map[string]any{"events": nil, "events_object": strings.Repeat("n", 4096)}), errcode.InvalidRequest, "events_object", false},
		{"events_object with a newline", "h-obj-nl", with("h-obj-nl", map[string]any{"events": nil, "events_object": "a\r\nb"}), errcode.InvalidRequest, "events_object", false},
		{"Nats-Msg-Id of 65 480 bytes", hugeMsgID, with("h-msgid", nil), errcode.InvalidRequest, "Nats-Msg-Id", true},
		{"Nats-Msg-Id of 65 480 bytes on a broken body", strings.Repeat("b", 65480), []byte("{nope"), errcode.InvalidRequest, "Nats-Msg-Id", true},
		{"request_id of 5 000 bytes", "", with(strings.Repeat("r", 5000), nil), errcode.InvalidRequest, "request_id", true},
		{"request_id with a control character", "", with("h-ctl\x00", nil), errcode.InvalidRequest, "request_id", true},
		{"run_agent_id of 4 KiB", "h-agent", with("h-agent", map[string]any{"run_agent_id": strings.Repeat("a", 4096)}), errcode.InvalidRequest, "run_agent_id", false},
		{"checkpoint_namespace of 4 KiB", "h-ns", with("h-ns", map[string]any{"checkpoint_namespace": strings.Repeat("s", 4096)}), errcode.InvalidRequest, "checkpoint_namespace", false},
		{"thread_id of 300 000 '<'", "h-thread", raw(with("h-thread", map[string]any{"thread_id": "@@"}), strings.Repeat("<", 300000)), errcode.InvalidRequest, "thread_id", false},
		{"parent_checkpoint_id of 4 KiB", "h-parent", with("h-parent", map[string]any{"parent_checkpoint_id": strings.Repeat("p", 4096)}), errcode.InvalidRequest, "parent_checkpoint_id", false},
		{"unknown field of 300 000 '<'", "h-lt", raw(with("h-lt", map[string]any{"@@": 1}), strings.Repeat("<", 300000)), errcode.InvalidRequest, "", false},
		{"unknown field of 200 000 U+2028", "h-ls", raw(with("h-ls", map[string]any{"@@": 1}), strings.Repeat("\u2028", 200000)), errcode.InvalidRequest, "", false},
		{"8 000 unknown fields", "h-many", with("h-many", manyFields(8000)), errcode.InvalidRequest, "", false},
		{"Nats-Msg-Id differs from request_id", "h-other", with("h-mismatch", nil), errcode.InvalidRequest, "Nats-Msg-Id", false},
		{"events: []", "h-empty", with("h-empty", map[string]any{"events": []any{}, "active_input_event_ids": nil}), errcode.InvalidRequest, "events", false},
		{"events: {}", "h-events-map", with("h-events-map", map[string]any{"events": map[string]any{}, "active_input_event_ids": nil}), errcode.InvalidRequest, "events", false},
		{"rehydration_state of 1 000 000 bytes", "h-rehy", with("h-rehy", map[string]any{"rehydration_state": map[string]any{"blob": strings.Repeat("x", 1000000-len(`{"blob":""}`))}}), errcode.PayloadTooLarge, "rehydration_state", false},
	}
	reconnects := nc.Stats().Reconnects
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			ack := publishRaw(t, e.js, c.body, c.msgID)
			ev := awaitFailedSeq(t, e, ack.Sequence)
			took := time.Since(start)
			t.Logf("%s: %s in %v (%d bytes stored)", c.name, ev.code(), took.Round(time.Millisecond), ev.size)
			if ev.code() != c.code {
				t.Fatalf("code %q, want %q: %.500v", ev.code(), c.code, ev.Body)
			}
			errObj, _ := ev.Body["error"].(map[string]any)
			if errObj["retryable"] != false {
				t.Fatalf("retryable: %v", errObj["retryable"])
			}
			details, _ := errObj["details"].(map[string]any)
			if c.field != "" && details["field"] != c.field {
				t.Fatalf("details do not name field %q: %.500v", c.field, details)
			}
			if rule, _ := details["rule"].(string); details["field"] == nil || errcode.Rules[rule] == "" {
				t.Fatalf("details do not name a field and a rule of errcode.Rules: %.500v", details)
			}
			if took > hostileDeadline {
				t.Fatalf("took %v, want under %v", took, hostileDeadline)
			}
			if ev.size > hostileMaxEventBytes || len(ev.MsgID) > 512 || ev.MsgID != ev.str("event_id") {
				t.Fatalf("failed event unbounded: %d bytes, id of %d bytes", ev.size, len(ev.MsgID))
			}
			if c.hashID {
				want := "msg-" + ledger.ContentHash(c.body)[:32]
				if ev.str("request_id") != want || ev.MsgID != want+":failed" {
					t.Fatalf("unusable id: request_id %.80q, event id %.80q, want %q", ev.str("request_id"), ev.MsgID, want)
				}
			}
			settled(t, e, ack.Sequence)
			testenv.Eventually(t, waitLong, func() error {
				if core.count(ack.Sequence) == 0 {
					return fmt.Errorf("the plain subscriber saw no failed event yet")
				}
				return nil
			})
			if n := core.count(ack.Sequence); n != 1 {
				t.Fatalf("plain subscribers saw %d failed events, want 1", n)
			}
		})
	}
	if n := nc.Stats().Reconnects; n != reconnects {
		t.Fatalf("the connection was closed %d times", n-reconnects)
	}
	ok := reqSpec{id: "h-after", lane: "h-after"}
	e.publish(t, e.body(ok), ok.id)
	if ev := onlyEvent(t, e.awaitOutcome(t, ok.id)); ev.str("kind") != "activated" {
		t.Fatalf("processor stopped serving: %v", ev.Body)
	}
}

// raw puts s unescaped where body has "@@" (encoding/json would escape
// '<' and U+2028 as six bytes each; a hostile client need not).
func raw(body []byte, s string) []byte {
	return bytes.Replace(body, []byte(`"@@"`), []byte(`"`+s+`"`), 1)
}

func manyFields(n int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		m[fmt.Sprintf("unknown-%06d-%s", i, strings.Repeat("f", 80))] = i
	}
	return m
}

// publishRaw publishes a request with no traceparent (a Nats-Msg-Id of
// 65 480 bytes leaves no room for more headers) and msgID as its
// Nats-Msg-Id when not empty.
func publishRaw(t testing.TB, js jetstream.JetStream, body []byte, msgID string) *jetstream.PubAck {
	t.Helper()
	msg := nats.NewMsg(topology.SubjectRequested)
	msg.Data = body
	if msgID != "" {
		msg.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := js.PublishMsg(ctx, msg)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return ack
}

// storedEvent is an event of COMPACT_EVENTS with its stored size.
type storedEvent struct {
	event
	size int
}

// awaitFailedSeq waits for the stored failed event of the request at
// stream sequence seq and checks it is the only one.
func awaitFailedSeq(t testing.TB, e *env, seq uint64) storedEvent {
	t.Helper()
	var found []storedEvent
	testenv.Eventually(t, waitLong, func() error {
		found = found[:0]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := e.js.Stream(ctx, topology.StreamEvents)
		if err != nil {
			return err
		}
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		for s := info.State.FirstSeq; info.State.Msgs > 0 && s <= info.State.LastSeq; s++ {
			m, err := st.GetMsg(ctx, s)
			if err != nil {
				return err
			}
			var body map[string]any
			if err := json.Unmarshal(m.Data, &body); err != nil {
				return err
			}
			ev := event{Subject: m.Subject, MsgID: m.Header.Get(jetstream.MsgIDHeader), Body: body}
			if ev.Subject == topology.SubjectFailed && uint64(ev.num("stream_sequence")) == seq {
				found = append(found, storedEvent{ev, len(m.Data)})
			}
		}
		if len(found) == 0 {
			return fmt.Errorf("no stored failed event for stream sequence %d", seq)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("%d stored failed events for stream sequence %d", len(found), seq)
	}
	return found[0]
}

// settled waits until the processor acknowledged or terminated the request
// at seq, so nothing more is published for it.
func settled(t testing.TB, e *env, seq uint64) {
	t.Helper()
	testenv.Eventually(t, waitLong, func() error {
		info, err := e.consumerInfo(t)
		if err != nil {
			return err
		}
		if info.AckFloor.Stream < seq || info.NumAckPending > 0 {
			return fmt.Errorf("request %d not settled (ack floor %d, pending %d)", seq, info.AckFloor.Stream, info.NumAckPending)
		}
		return nil
	})
}

// failedCounter counts the failed events a plain subscriber receives, by
// the request's stream sequence: stored or not.
type failedCounter struct {
	mu    sync.Mutex
	bySeq map[uint64]int
}

func newFailedCounter(t testing.TB, nc *nats.Conn) *failedCounter {
	c := &failedCounter{bySeq: map[uint64]int{}}
	sub, err := nc.Subscribe(topology.SubjectFailed, func(m *nats.Msg) {
		var ev struct {
			Seq uint64 `json:"stream_sequence"`
		}
		_ = json.Unmarshal(m.Data, &ev)
		c.mu.Lock()
		c.bySeq[ev.Seq]++
		c.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return c
}

func (c *failedCounter) count(seq uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bySeq[seq]
}

// The rehydration limit is one Cairn can keep: a state at the limit
// activates, with plain characters or with ones encoding/json escapes
// (which count six bytes each), and one byte more is payload_too_large.
func TestRehydrationLimitIsStorable(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	limit := int(maxRehydrationBytes(e.js.Conn().MaxPayload()))
	overhead := len(`{"blob":""}`)
	cases := []struct {
		id, blob string
		want     string
	}{
		{"rh-plain", strings.Repeat("x", limit-overhead), "activated"},
		{"rh-escaped", strings.Repeat("<", (limit-overhead)/6), "activated"},
		{"rh-over", strings.Repeat("x", limit-overhead+1), errcode.PayloadTooLarge},
	}
	for _, c := range cases {
		body := raw(e.body(reqSpec{id: c.id, lane: c.id, extra: map[string]any{"rehydration_state": map[string]any{"blob": "@@"}}}), c.blob)
		start := time.Now()
		e.publish(t, body, c.id)
		ev := onlyEvent(t, e.awaitOutcome(t, c.id))
		t.Logf("%s: %d bytes of rehydration_state: %s %s in %v", c.id, len(c.blob)+overhead, ev.str("kind"), ev.code(), time.Since(start).Round(time.Millisecond))
		if got := ev.str("kind"); got != c.want && ev.code() != c.want {
			t.Fatalf("%s: %s %.300v", c.id, got, ev.Body)
		}
	}
}

// hugeCheckpointCompactor pads every checkpoint past what any message can
// hold: the checkpoint record, the ledger entry and the event each carry it
// once, and the server's max_payload is 1 MiB.
type hugeCheckpointCompactor struct{ testCompactor }

func (c hugeCheckpointCompactor) Compact(ctx context.Context, in Input, s engine.Summarizer, now time.Time) (*Result, error) {
	res, err := c.testCompactor.Compact(ctx, in, s, now)
	if err != nil || res.Status == StatusSkipped {
		return res, err
	}
	var m map[string]any
	if err := json.Unmarshal(res.Checkpoint, &m); err != nil {
		return nil, err
	}
	m["padding"] = strings.Repeat("p", 1100<<10)
	if res.Checkpoint, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return res, nil
}

// A write larger than the server accepts is permanent: the request fails
// with payload_too_large on its first delivery instead of being retried.
func TestWriteOverMaxPayloadFailsAtOnce(t *testing.T) {
	e := singleEnv(t)
	cfg := testConfig()
	cfg.NakBackoff = []time.Duration{2 * time.Second} // a retry would show in the time taken
	e.start(t, cfg, hugeCheckpointCompactor{}, nil)
	spec := reqSpec{id: "huge-cp", lane: "huge-cp"}
	start := time.Now()
	e.publish(t, e.body(spec), spec.id)
	ev := onlyEvent(t, e.awaitOutcome(t, spec.id))
	took := time.Since(start)
	t.Logf("%s in %v", ev.code(), took.Round(time.Millisecond))
	if ev.code() != errcode.PayloadTooLarge || took > hostileDeadline {
		t.Fatalf("%s after %v: %.300v", ev.code(), took, ev.Body)
	}
	if info, err := e.consumerInfo(t); err != nil || info.NumRedelivered != 0 {
		t.Fatalf("redelivered: %+v %v", info, err)
	}
	if en := e.ledgerEntry(t, spec.id); en.State != ledger.Failed || en.Retryable {
		t.Fatalf("ledger: %+v", en)
	}
}
