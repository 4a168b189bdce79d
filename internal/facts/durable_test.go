package facts

import (
	"context"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/topology"
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
