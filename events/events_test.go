package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestNewInputEventHashesMatchTheContract(t *testing.T) {
	content := "implement the requested behavior"
	ev, err := events.NewInputEvent(events.InputEvent{
		EventID: "e1", RunAgentID: "a", ChatSeq: 1, LaneEventOrdinal: 1, CheckpointNamespace: "root",
		Role: "user", Provenance: map[string]string{"origin": "direct_user"}, Content: &content,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Hash vectors of docs/canonical-json.md.
	if want := "b1e4ff039f83558a6feec68fee9cd5148af0eb44508c4ab90aa8cf0730453f94"; ev.ProvenanceSHA256 != want {
		t.Errorf("provenance_sha256 = %s, want %s", ev.ProvenanceSHA256, want)
	}
	if want := "2bdd27bf9b99a8505106b92dfe213d30ef3db8e37a12fe4eb65bfa21970e4698"; ev.ContentHash != want {
		t.Errorf("content_hash = %s, want %s", ev.ContentHash, want)
	}
}

func TestPublishAndWaitOutcome(t *testing.T) {
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testenv.Stores(t, js, 1)
	since := time.Now().Add(-time.Second)
	req := events.Request{RequestID: "req-1", Trigger: "manual"}
	ack, err := events.Publish(ctx, js, req, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if err != nil {
		t.Fatal(err)
	}
	if ack.Stream != events.StreamRequests {
		t.Fatalf("request stored in %q", ack.Stream)
	}
	again, err := events.Publish(ctx, js, req, "")
	if err != nil || !again.Duplicate {
		t.Fatalf("resend not deduplicated: ack=%+v err=%v", again, err)
	}
	stored, err := js.Stream(ctx, events.StreamRequests)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stored.GetMsg(ctx, ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header.Get(jetstream.MsgIDHeader) != "req-1" || msg.Header.Get("traceparent") == "" {
		t.Errorf("headers = %v, want Nats-Msg-Id and traceparent", msg.Header)
	}
	var body map[string]any
	if err := json.Unmarshal(msg.Data, &body); err != nil || body["v"] != float64(1) {
		t.Errorf("body v = %v (%v), want 1", body["v"], err)
	}

	// Another request's outcome first, then ours: WaitOutcome picks ours.
	publishEvent(t, js, events.SubjectSkipped, events.Skipped{Header: header("other", events.KindSkipped), Reason: "below_trigger"})
	publishEvent(t, js, events.SubjectFailed, events.Failed{Header: header("req-1", events.KindFailed), Error: events.Error{Code: "stale_head", Details: map[string]any{}}})
	got, err := events.WaitOutcome(ctx, js, "req-1", since)
	if err != nil {
		t.Fatal(err)
	}
	if got.Failed == nil || got.Failed.Error.Code != "stale_head" || got.Kind != events.KindFailed || got.Sequence == 0 {
		t.Fatalf("outcome = %+v", got)
	}
}

func TestDecodeRejectsUnknownSubjects(t *testing.T) {
	if _, err := events.Decode("conversation.other", []byte(`{}`)); err == nil {
		t.Fatal("Decode accepted a subject that carries no event")
	}
	if _, err := events.Decode(events.SubjectActivated, []byte(`{"v":`)); err == nil {
		t.Fatal("Decode accepted broken JSON")
	}
}

func header(requestID, kind string) events.Header {
	return events.Header{V: 1, EventID: requestID + ":" + kind, Kind: kind, RequestID: requestID, OccurredAt: time.Now().UTC()}
}

func publishEvent(t *testing.T, js jetstream.JetStream, subject string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := canonical.Decode(b); err != nil {
		t.Fatalf("event is not strict JSON: %v", err)
	}
	msg := nats.NewMsg(subject)
	msg.Data = b
	if _, err := js.PublishMsg(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
}

// A follower stops when its context ends even while events keep waiting.
func TestFollowStopsWhileEventsWait(t *testing.T) {
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	testenv.Stores(t, js, 1)
	for _, id := range []string{"a", "b", "c"} {
		publishEvent(t, js, events.SubjectSkipped, events.Skipped{Header: header(id, events.KindSkipped), Reason: "below_trigger"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	calls := 0
	err := events.Follow(ctx, js, events.FollowOptions{FromStart: true}, func(events.Event) error {
		calls++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("Follow returned %v after %d events, want context.Canceled after 1", err, calls)
	}
}

func TestResendWithAnotherBodyIsAConflict(t *testing.T) {
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testenv.Stores(t, js, 1)
	first, err := events.PublishRaw(ctx, js, "req-c", []byte(`{"v":1,"request_id":"req-c","trigger":"manual"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	same, err := events.PublishRaw(ctx, js, "req-c", []byte(`{"v":1,"request_id":"req-c","trigger":"manual"}`), "")
	if err != nil || !same.Duplicate {
		t.Fatalf("resend of the same body: ack=%+v err=%v", same, err)
	}
	_, err = events.PublishRaw(ctx, js, "req-c", []byte(`{"v":1,"request_id":"req-c","trigger":"auto"}`), "")
	var conflict *events.ConflictError
	if !errors.As(err, &conflict) || conflict.Code() != events.CodeRequestIDConflict || conflict.Sequence != first.Sequence {
		t.Fatalf("resend of another body: err = %v, want a request_id_conflict naming #%d", err, first.Sequence)
	}
}
