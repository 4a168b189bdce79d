package consumer

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
)

// The kept bodies stay within recentBytes, dropping the oldest, and a body
// is returned only under the hash it was kept with.
func TestRecentCheckpointsAreBounded(t *testing.T) {
	r := newRecentCheckpoints()
	body := []byte(strings.Repeat("x", recentBytes/10))
	for i := range 20 {
		r.put(string(rune('a'+i)), "h", body)
	}
	if r.bytes > recentBytes {
		t.Fatalf("%d bytes kept, bound %d", r.bytes, recentBytes)
	}
	if _, ok := r.get("a", "h"); ok {
		t.Fatal("the oldest body was kept")
	}
	if _, ok := r.get("t", "h"); !ok {
		t.Fatal("the newest body was dropped")
	}
	if _, ok := r.get("t", "other"); ok {
		t.Fatal("a body was returned under another hash")
	}
	r.put("huge", "h", make([]byte, recentBytes))
	if _, ok := r.get("huge", "h"); ok {
		t.Fatal("a body larger than an eighth of the bound was kept")
	}
}

// activateFirst activates id on a new lane and waits until the relay
// cleared its head's records.
func activateFirst(t *testing.T, e *env, id, lane string) {
	t.Helper()
	activate(t, e, id, lane, "")
	testenv.Eventually(t, waitLong, func() error {
		if h := e.head(t, laneOf(lane)); h == nil || len(h.Outbox) != 0 {
			return fmt.Errorf("head %+v", h)
		}
		return nil
	})
}

// countGets counts the direct gets of bucket sent from now on.
func countGets(t *testing.T, e *env, bucket string) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	tap := e.js.Conn()
	sub, err := tap.Subscribe("$JS.API.DIRECT.GET.KV_"+bucket+".>", func(*nats.Msg) { n.Add(1) })
	if err == nil {
		err = tap.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return &n
}

// A lane's next compaction in the same processor starts from what the
// processor keeps: the head it committed (cleared by its relay) and the
// active checkpoint's body. It reads neither back.
func TestChainedCompactionReadsNoHeadAndNoCheckpoint(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	activateFirst(t, e, "rc-1", "rc")
	checkpointReads, headReads := countGets(t, e, topology.BucketCheckpoints), countGets(t, e, topology.BucketHeads)
	e.publish(t, engineBody(t, "rc-2", "rc", "rc-1", 40, nil), "rc-2")
	ev := onlyEvent(t, e.awaitOutcome(t, "rc-2"))
	if ev.str("kind") != "activated" || ev.num("generation") != 2 {
		t.Fatalf("second: %v", ev.Body)
	}
	if n, m := checkpointReads.Load(), headReads.Load(); n != 0 || m != 0 {
		t.Fatalf("the chained compaction read %d checkpoints and %d heads", n, m)
	}
}

// A kept head is only a guess: when another writer moved the lane on, a
// request on the lane's real head is activated on it, and one on the
// kept head's checkpoint is stale_head.
func TestAKeptHeadThatIsStaleIsNotTrusted(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	activateFirst(t, e, "kh-1", "kh")
	// Another replica activates "kh-other" on top of kh-1.
	store := lanes.New(e.stores.Heads, e.stores.Checkpoints)
	ctx := context.Background()
	head, rev, err := store.Head(ctx, laneOf("kh"))
	if err != nil {
		t.Fatal(err)
	}
	other := *head
	other.CheckpointID, other.ParentCheckpointID, other.Generation, other.SemanticHash = "kh-other", "kh-1", 2, ""
	if _, err := store.Advance(ctx, laneOf("kh"), rev, &other); err != nil {
		t.Fatal(err)
	}
	e.publish(t, engineBody(t, "kh-3", "kh", "kh-other", 40, nil), "kh-3")
	if ev := onlyEvent(t, e.awaitOutcome(t, "kh-3")); ev.str("kind") != "activated" || ev.num("generation") != 3 {
		t.Fatalf("a request on the lane's real head: %v", ev.Body)
	}
	e.publish(t, engineBody(t, "kh-2", "kh", "kh-1", 40, nil), "kh-2")
	if ev := onlyEvent(t, e.awaitOutcome(t, "kh-2")); ev.code() != errcode.StaleHead {
		t.Fatalf("a request on the first checkpoint: %v", ev.Body)
	}
}

// A kept head is returned only once the relay reported its clear, and not
// after it proved stale until the lane is committed again.
func TestRecentHeadsNeedTheClearAndForget(t *testing.T) {
	r := newRecentHeads()
	h := &lanes.Head{CheckpointID: "c-1"}
	r.committed("k", h, 5)
	if _, _, ok := r.get("k"); ok {
		t.Fatal("a head was returned before its clear")
	}
	r.cleared("k", 4, 6) // the clear of another revision
	if _, _, ok := r.get("k"); ok {
		t.Fatal("a head was returned after the clear of another revision")
	}
	r.cleared("k", 5, 6)
	if got, rev, ok := r.get("k"); !ok || rev != 6 || got.CheckpointID != "c-1" || got == h {
		t.Fatalf("after its clear: %+v at %d (%v); want a copy at 6", got, rev, ok)
	}
	r.forget("k")
	if _, _, ok := r.get("k"); ok {
		t.Fatal("a forgotten head was returned")
	}
	r.committed("k", h, 7)
	r.cleared("k", 7, 8)
	if _, rev, ok := r.get("k"); !ok || rev != 8 || len(r.order) != 1 {
		t.Fatalf("committed again: revision %d (%v), %d keys in order", rev, ok, len(r.order))
	}
}
