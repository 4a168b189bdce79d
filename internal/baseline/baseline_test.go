package baseline_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/baseline"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
)

// The loop answers every request with one activated event named by its
// Nats-Msg-Id and writes what it was told to write: ReadSizes, run on its
// own streams, gives back the sizes it was started with, so the sizes a
// baseline writes are the processor's when they come from its streams.
func TestLoopWritesTheSizesItIsGiven(t *testing.T) {
	srv := testenv.NATS(t, testenv.Options{})
	ctx := context.Background()
	js := srv.JetStream(t)
	want := baseline.Sizes{Head: 300, Checkpoint: 5000, Activated: 1200}
	loop, err := baseline.Start(ctx, js, baseline.Options{Workers: 4, Sizes: want, HeadKey: func(id string) string { return "lane.l-" + id }})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	seen := make(chan string, 2*n)
	nc := srv.Conn(t)
	sub, err := nc.Subscribe(topology.SubjectActivated, func(m *nats.Msg) { seen <- m.Header.Get(nats.MsgIdHdr) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Request 0's lane has a head already: the loop must update it, not
	// create it, or its create fails and Stop reports it.
	if err := loop.Prime(ctx, "r0", "prior"); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := events.PublishRaw(ctx, js, fmt.Sprintf("r%d", i), []byte(`{}`), ""); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	testenv.Eventually(t, 30*time.Second, func() error {
		for len(seen) > 0 {
			got[<-seen] = true
		}
		if len(got) < n {
			return fmt.Errorf("%d of %d activated", len(got), n)
		}
		return nil
	})
	for i := range n {
		if id := fmt.Sprintf("r%d:%s", i, events.KindActivated); !got[id] {
			t.Errorf("no activated event %s among %v", id, got)
		}
	}
	if err := loop.Stop(); err != nil {
		t.Fatal(err)
	}
	sizes, err := baseline.ReadSizes(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	// Stored sizes add the subject and headers to each value.
	for _, x := range [][2]int{{sizes.Head, want.Head}, {sizes.Checkpoint, want.Checkpoint}, {sizes.Activated, want.Activated}} {
		if x[0] < x[1] || x[0] > x[1]+200 {
			t.Errorf("read %+v, wrote %+v", sizes, want)
			break
		}
	}
}
