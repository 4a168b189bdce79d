package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/natsrv"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go/jetstream"
)

// connectExample starts a throwaway embedded server, as `processor serve`
// does; a real service connects to its NATS URL instead.
func connectExample() (jetstream.JetStream, func()) {
	dir, _ := os.MkdirTemp("", "cairn-example")
	srv, err := natsrv.Start(natsrv.Config{DataDir: dir, Listen: natsrv.ListenNone, ReadyTimeout: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	nc, _ := srv.Connect()
	js, _ := jetstream.New(nc)
	if _, err := topology.Ensure(context.Background(), js, topology.DefaultOptions()); err != nil {
		panic(err)
	}
	return js, func() { nc.Close(); srv.Shutdown(); os.RemoveAll(dir) }
}

// exampleRequest is a manual request for a lane of one event. A real Cairn
// answers it with failed, code nothing_to_compact: the recent tail keeps at
// least 8 000 tokens verbatim, so a lane this small has nothing older to
// summarize (examples/coding-agent-lane.json is one that compacts).
func exampleRequest() events.Request {
	text := "Add retries to the uploader; never retry a 4xx."
	ev, err := events.NewInputEvent(events.InputEvent{
		EventID: "0190f5d2-0000-7000-8000-000000000001", RunAgentID: "agent-1",
		ChatSeq: 1, LaneEventOrdinal: 1, CheckpointNamespace: "root", Role: events.RoleUser,
		Provenance: map[string]string{"origin": "direct_user"}, Content: &text,
	})
	if err != nil {
		panic(err)
	}
	limit := int64(128000)
	policy, _ := json.Marshal(events.DefaultPolicy())
	return events.Request{
		V: events.Version, RequestID: "req-42", Trigger: events.TriggerManual, RunID: "run-1",
		Correlation: events.Correlation{ThreadID: "thread-1", RunAgentID: "agent-1", CheckpointNamespace: "root"},
		RootTurnID:  "turn-1", ProviderConnectionID: "conn-1", DestinationIdentityHash: fmt.Sprintf("%064x", 0),
		ModelProfile:     events.ModelProfile{ContextLimitKind: "separate_input", MaxInputTokens: &limit},
		Events:           []events.InputEvent{ev},
		RehydrationState: []byte(`{}`),
		Policy:           policy,
	}
}

// A producer builds lane events with their hashes and publishes a request.
// The example shows only the stream's acknowledgement: no Cairn reads the
// throwaway server. Against a running Cairn, WaitOutcome then returns the
// outcome, here failed with nothing_to_compact because the lane is a single
// short event (TestCairnsMessagesMatchTheSchemaFiles sends this request to a
// real Cairn).
func ExamplePublish() {
	js, stop := connectExample()
	defer stop()

	ack, err := events.Publish(context.Background(), js, exampleRequest(), "")
	if err != nil {
		panic(err)
	}
	fmt.Println(ack.Stream, ack.Duplicate)
	// Output: COMPACT_REQUESTS false
}

// A service reacts to activations, for example to print the new budget.
func ExampleFollow() {
	js, stop := connectExample()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Stand in for Cairn: one activation is already in the stream.
	_, _ = js.Publish(ctx, events.SubjectActivated, []byte(`{"v":1,"kind":"activated","request_id":"req-42","tokens_before":120000,"tokens_after":30000}`))

	err := events.Follow(ctx, js, events.FollowOptions{FromStart: true, Subjects: []string{events.SubjectActivated}}, func(ev events.Event) error {
		a := ev.Activated
		fmt.Printf("%s: %d -> %d tokens\n", a.RequestID, a.TokensBefore, a.TokensAfter)
		return context.Canceled // one is enough for the example
	})
	fmt.Println(err)
	// Output:
	// req-42: 120000 -> 30000 tokens
	// context canceled
}
