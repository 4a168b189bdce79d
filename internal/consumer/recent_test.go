package consumer

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn/internal/topology"
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

// A lane's next compaction in the same processor takes the active
// checkpoint's semantic from memory: it reads no checkpoint.
func TestChainedCompactionReadsNoCheckpoint(t *testing.T) {
	e := singleEnv(t)
	e.realEngine = true
	e.start(t, testConfig(), nil, nil)
	e.publish(t, engineBody(t, "rc-1", "rc", "", 40, nil), "rc-1")
	if ev := onlyEvent(t, e.awaitOutcome(t, "rc-1")); ev.str("kind") != "activated" {
		t.Fatalf("first: %v", ev.Body)
	}
	var reads atomic.Int32
	tap := e.js.Conn()
	sub, err := tap.Subscribe("$JS.API.DIRECT.GET.KV_"+topology.BucketCheckpoints+".>", func(*nats.Msg) { reads.Add(1) })
	if err == nil {
		err = tap.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	e.publish(t, engineBody(t, "rc-2", "rc", "rc-1", 40, nil), "rc-2")
	ev := onlyEvent(t, e.awaitOutcome(t, "rc-2"))
	if ev.str("kind") != "activated" || ev.num("generation") != 2 {
		t.Fatalf("second: %v", ev.Body)
	}
	if n := reads.Load(); n != 0 {
		t.Fatalf("the chained compaction read %d checkpoints", n)
	}
}
