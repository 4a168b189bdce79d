package events_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// countingPublisher is a caller's wrapper: it counts publishes and passes
// them on, which the narrowed parameters make possible.
type countingPublisher struct {
	events.Publisher
	n atomic.Int64
}

func (c *countingPublisher) PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	c.n.Add(1)
	return c.Publisher.PublishMsg(ctx, msg, opts...)
}

func TestPublishTakesAWrapper(t *testing.T) {
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testenv.Stores(t, js, 1)
	p := &countingPublisher{Publisher: js}
	if _, err := events.Publish(ctx, p, exampleRequest(), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := events.Publish(ctx, p, exampleRequest(), ""); err != nil {
		t.Fatalf("resend through the wrapper: %v", err)
	}
	if p.n.Load() != 2 {
		t.Fatalf("the wrapper saw %d publishes, want 2", p.n.Load())
	}
}

// WaitOutcome reads only outcomes stored since the request, and decodes only
// the awaited one in full, however many other lanes' events the stream holds.
func TestWaitOutcomeDecodesOnlyItsOutcome(t *testing.T) {
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	testenv.Stores(t, js, 1)
	const before, after = 300, 100
	publishOthers(t, js, "old", before)
	stored, err := js.Stream(ctx, events.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stored.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last, err := stored.GetMsg(ctx, info.State.LastSeq) // the last old event, of any subject
	if err != nil {
		t.Fatal(err)
	}
	// The stored time may be rounded: a millisecond later excludes the last
	// old event (and every one before it); a new one within that
	// millisecond is left out too, which the bound below allows.
	since := last.Time.Add(time.Millisecond)
	publishOthers(t, js, "new", after)
	publishEvent(t, js, events.SubjectFailed, events.Failed{Header: header("mine", events.KindFailed), Error: events.Error{Code: events.CodeStaleHead, Details: map[string]any{}}})

	envelopes0, decoded0 := events.WaitOutcomeWork()
	got, err := events.WaitOutcome(ctx, js, "mine", since)
	if err != nil {
		t.Fatal(err)
	}
	envelopes, decoded := events.WaitOutcomeWork()
	envelopes, decoded = envelopes-envelopes0, decoded-decoded0
	if got.Failed == nil || got.Failed.RequestID != "mine" {
		t.Fatalf("outcome = %+v", got)
	}
	if decoded != 1 || envelopes > after+1 {
		t.Fatalf("WaitOutcome decoded %d events in full and read the request_id of %d; want 1 and at most %d of the %d in the stream",
			decoded, envelopes, after+1, before+after+1)
	}
}

// publishOthers publishes n activated events of other lanes, each carrying a
// checkpoint, as a busy stream holds.
func publishOthers(t *testing.T, js jetstream.JetStream, prefix string, n int) {
	t.Helper()
	for i := range n {
		h := header(fmt.Sprintf("%s-%d", prefix, i), events.KindActivated)
		if i%2 == 0 {
			publishEvent(t, js, events.SubjectSkipped, events.Skipped{Header: h, Reason: events.SkipBelowTrigger})
			continue
		}
		publishEvent(t, js, events.SubjectActivated, events.Activated{Header: h, Status: events.StatusCompacted,
			ProviderUsage: []byte(`[]`), Checkpoint: []byte(`{"request_id":"mine","semantic":null}`)})
	}
}

func TestEnvelopeRequestIDReadsTheTopLevelField(t *testing.T) {
	for doc, want := range map[string]string{
		`{"v":1,"event_id":"e","kind":"skipped","request_id":"r1","tokens_before":3}`: "r1",
		`{"checkpoint":{"request_id":"inner"},"request_id":"outer"}`:                  "outer",
		`{"v":1}`:            "",
		`[{"request_id":1}]`: "",
	} {
		if got, _ := events.EnvelopeRequestID([]byte(doc)); got != want {
			t.Errorf("%s: request_id %q, want %q", doc, got, want)
		}
	}
}
