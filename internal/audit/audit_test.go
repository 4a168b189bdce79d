package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/audit"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go/jetstream"
)

type fixture struct {
	js     jetstream.JetStream
	stores *topology.Stores
	lanes  *lanes.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	stores := testenv.Stores(t, js, 1)
	return &fixture{js: js, stores: stores, lanes: lanes.New(stores.Heads, stores.Checkpoints)}
}

// advance moves the lane's head to h. Nothing else writes the lane, yet
// under load a replicated bucket sometimes answered one of these writes
// with a revision conflict (10164), as the processor is told when another
// delivery moved a head: like the processor, the fixture then re-reads the
// head, takes a head that is already h as this write having landed, and
// writes again over a head that is still h's parent (a bounded number of
// times); any other head fails the test.
func (f *fixture) advance(ctx context.Context, lane lanes.Lane, rev uint64, h *lanes.Head) (uint64, error) {
	for try := 0; ; try++ {
		next, err := f.lanes.Advance(ctx, lane, rev, h)
		if !errors.Is(err, lanes.ErrConflict) {
			return next, err
		}
		head, headRev, rerr := f.lanes.Head(ctx, lane)
		switch {
		case rerr == nil && head != nil && head.CheckpointID == h.CheckpointID && head.Generation == h.Generation:
			return headRev, nil
		case rerr == nil && try < 5 && head != nil && head.Generation == h.Generation-1 && head.CheckpointID == h.ParentCheckpointID:
			rev = headRev
		default:
			return 0, fmt.Errorf("%w (the head is %+v at revision %d, %v)", err, head, headRev, rerr)
		}
	}
}

// activate stores a chain of n checkpoints on lane and publishes their
// activated events, as the processor does.
func (f *fixture) activate(t *testing.T, lane lanes.Lane, n int) {
	t.Helper()
	ctx := context.Background()
	var parentID, parentHash string
	var rev uint64
	for gen := int64(1); gen <= int64(n); gen++ {
		id := fmt.Sprintf("%s-%s-%d", lane.RunAgentID, lane.CheckpointNamespace, gen)
		body, _ := json.Marshal(map[string]any{"id": id, "checkpoint_id": id, "parent_checkpoint_id": nilIfEmpty(parentID), "created_at": time.Now().UTC().Format(time.RFC3339), "tokens_after": 100 * gen})
		hash, err := audit.CheckpointHash(body)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.lanes.PutCheckpoint(ctx, &lanes.Checkpoint{ID: id, Hash: hash, ParentID: parentID, ParentHash: parentHash, Generation: gen, Body: body}); err != nil {
			t.Fatal(err)
		}
		if rev, err = f.advance(ctx, lane, rev, &lanes.Head{Lane: lane, CheckpointID: id, ParentCheckpointID: parentID, Generation: gen, HeadHash: hash}); err != nil {
			t.Fatal(err)
		}
		ev := events.Activated{
			Header: events.Header{V: 1, EventID: id + ":activated", Kind: events.KindActivated, RequestID: id},
			Status: "compacted", CheckpointID: id, Generation: gen, CheckpointHash: hash, Checkpoint: body,
			ParentCheckpointID: strPtr(parentID), ParentCheckpointHash: strPtr(parentHash),
		}
		// Set apart from the literal: the lane fields are promoted into the
		// header, from wherever events declares them.
		ev.RunAgentID, ev.CheckpointNamespace = lane.RunAgentID, lane.CheckpointNamespace
		data, _ := json.Marshal(ev)
		if _, err := f.js.Publish(ctx, events.SubjectActivated, data, jetstream.WithMsgID(ev.EventID)); err != nil {
			t.Fatal(err)
		}
		parentID, parentHash = id, hash
	}
}

func TestVerifyAcceptsIntactChains(t *testing.T) {
	f := newFixture(t)
	f.activate(t, lanes.Lane{RunAgentID: "a", CheckpointNamespace: "root"}, 3)
	f.activate(t, lanes.Lane{RunAgentID: "b", CheckpointNamespace: "root"}, 1)
	r, err := audit.Verify(context.Background(), f.js, f.lanes)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || len(r.Lanes) != 2 || r.Events != 4 || r.Lanes[0].Generations != 3 || r.Lanes[0].HeadID != "a-root-3" {
		t.Fatalf("report = %+v", r)
	}
}

func TestVerifyDetectsATamperedCheckpoint(t *testing.T) {
	f := newFixture(t)
	lane := lanes.Lane{RunAgentID: "a", CheckpointNamespace: "root"}
	f.activate(t, lane, 3)
	ctx := context.Background()
	c, err := f.lanes.GetCheckpoint(ctx, "a-root-2")
	if err != nil || c == nil {
		t.Fatalf("checkpoint: %v", err)
	}
	c.Body = json.RawMessage(strings.Replace(string(c.Body), `"tokens_after":200`, `"tokens_after":1`, 1))
	key, _ := lanes.IDKey(c.ID)
	tampered, _ := json.Marshal(c)
	if _, err := f.stores.Checkpoints.Put(ctx, key, tampered); err != nil {
		t.Fatal(err)
	}
	r, err := audit.Verify(ctx, f.js, f.lanes)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || r.Breaks != 1 || r.Lanes[0].Breaks[0].Generation != 2 || !strings.Contains(r.Lanes[0].Breaks[0].Reason, "tampered") {
		t.Fatalf("report = %+v", r)
	}
}

func TestVerifyDetectsAHeadThatDoesNotMatch(t *testing.T) {
	f := newFixture(t)
	lane := lanes.Lane{RunAgentID: "a", CheckpointNamespace: "root"}
	f.activate(t, lane, 2)
	ctx := context.Background()
	head, rev, err := f.lanes.Head(ctx, lane)
	if err != nil {
		t.Fatal(err)
	}
	head.Generation = 7
	if _, err := f.lanes.Advance(ctx, lane, rev, head); err != nil {
		t.Fatal(err)
	}
	r, err := audit.Verify(ctx, f.js, f.lanes)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || !strings.Contains(r.Lanes[0].Breaks[0].Reason, "head points at") {
		t.Fatalf("report = %+v", r)
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
