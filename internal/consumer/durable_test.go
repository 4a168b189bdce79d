package consumer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
)

// A durable deleted while a request is in flight comes back: the request
// in flight still ends in exactly one outcome (its redelivery by the new
// durable finds it in the ledger), and later requests are processed.
func TestDurableDeletedMidRequestComesBack(t *testing.T) {
	e := singleEnv(t)
	slow := &testSummarizer{delay: 300 * time.Millisecond}
	e.start(t, testConfig(), nil, slow)
	one := reqSpec{id: "mid-1", lane: "mid1"}
	e.publish(t, e.body(one), one.id)
	testenv.Eventually(t, waitLong, func() error {
		if slow.calls.Load() == 0 {
			return fmt.Errorf("not started")
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.js.DeleteConsumer(ctx, topology.StreamRequests, topology.ConsumerProcessor); err != nil {
		t.Fatal(err)
	}
	two := reqSpec{id: "mid-2", lane: "mid2"}
	e.publish(t, e.body(two), two.id)
	if ev := onlyEvent(t, e.awaitOutcome(t, two.id)); ev.str("kind") != "activated" {
		t.Fatalf("after the durable came back: %v", ev.Body)
	}
	testenv.Eventually(t, waitLong, func() error {
		c, err := e.js.Consumer(ctx, topology.StreamRequests, topology.ConsumerProcessor)
		if err != nil {
			return err
		}
		ci, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if ci.NumAckPending != 0 || ci.NumPending != 0 {
			return fmt.Errorf("%d awaiting ack, %d pending", ci.NumAckPending, ci.NumPending)
		}
		return nil
	})
	if ev := onlyEvent(t, e.eventsFor(t, one.id)); ev.str("kind") != "activated" {
		t.Fatalf("the request in flight: %v", ev.Body)
	}
}
