package facts

import (
	"context"
	"testing"

	"github.com/cairnhq/cairn/internal/topology"
)

// A job given up with its memory.failed event published is settled: its
// outcome exists, so it is acked, not terminated into the dead-letter
// stream, which holds only what could not be settled.
func TestGivenUpJobIsNotDeadLettered(t *testing.T) {
	e := newEnv(t)
	e.startWorker(t, e.testConfig(t))
	e.publishJob(t, Job{V: 7, ConversationID: "c", HeadEntryID: "h", Scope: Scope{Kind: "thread", ID: "c"}}, "")
	e.waitEvents(t, 1)
	e.waitSettled(t)
	ctx := context.Background()
	s, err := e.js.Stream(ctx, topology.StreamDeadLetter)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Fatalf("%d dead letters for a job whose failure was published", info.State.Msgs)
	}
}
