package facts

import (
	"context"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
)

// A worker whose durable consumer is deleted while it runs re-creates it and
// goes on harvesting.
func TestWorkerRecreatesDeletedDurable(t *testing.T) {
	e := newEnv(t)
	e.startWorker(t, e.testConfig(t))
	first := sampleJob()
	e.publishJob(t, first, "")
	e.waitEvents(t, 1)
	e.waitSettled(t)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.js.DeleteConsumer(ctx, topology.StreamHarvest, topology.ConsumerHarvester); err != nil {
		t.Fatal(err)
	}
	second := sampleJob()
	second.HeadEntryID = "ckpt-0002"
	e.publishJob(t, second, "")
	msgs := e.waitEvents(t, 2)
	if ev := decodeFlushed(t, msgs[1].Data); ev.HeadEntryID != "ckpt-0002" {
		t.Fatalf("after the durable was deleted: %+v", ev)
	}
	e.waitSettled(t)
}

// A worker started before the harvest stream exists keeps trying to create
// its durable instead of giving up, and harvests once the stream is there.
func TestWorkerWaitsForTheHarvestStream(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.js.DeleteStream(ctx, topology.StreamHarvest); err != nil {
		t.Fatal(err)
	}
	e.startWorker(t, e.testConfig(t))
	testenv.Stores(t, e.js, 1)
	e.publishJob(t, sampleJob(), "")
	e.waitEvents(t, 1)
	e.waitSettled(t)
}
