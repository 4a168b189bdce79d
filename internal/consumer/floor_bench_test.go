package consumer

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The JetStream floor: the writes and reads the processor makes for one
// request, with the sizes it writes, and nothing else (no engine, no
// middleware, no encoding). It answers how fast any processor could go that
// keeps Cairn's guarantees on this design, so that the processor's gap to
// the baseline splits into what its JetStream work costs and what the rest
// costs. Run with:
//
//	go test -run '^$' -bench ContractFloor -benchtime 1000x ./internal/consumer

// writeSizes are the mean sizes of what one request writes, as stored.
type writeSizes struct {
	checkpoint, headWithRecords, headCleared, activated, job int
}

// meanStoredSize is the mean size of the messages stream holds; the
// stream must hold some.
func meanStoredSize(b *testing.B, js jetstream.JetStream, stream string) int {
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		b.Fatal(err)
	}
	st := s.CachedInfo().State
	if st.Msgs == 0 {
		b.Fatalf("stream %s is empty", stream)
	}
	return int(st.Bytes / st.Msgs)
}

// measureWriteSizes reads the mean stored message sizes of a run that
// activated every request on a fresh lane. The head as written holds both
// records; its size is the sum.
func measureWriteSizes(b *testing.B, js jetstream.JetStream) writeSizes {
	mean := func(stream string) int { return meanStoredSize(b, js, stream) }
	w := writeSizes{
		checkpoint:  mean("KV_" + topology.BucketCheckpoints),
		headCleared: mean("KV_" + topology.BucketHeads),
		activated:   mean(topology.StreamEvents),
		job:         mean(topology.StreamHarvest),
	}
	w.headWithRecords = w.headCleared + w.activated + w.job
	return w
}

// floorWork says which of the processor's JetStream calls a floor makes.
type floorWork struct {
	relay bool // the records' clearing write and the relay's watcher
}

var (
	// processorFloor is what the processor does for a first delivery on a
	// fresh lane (docs/architecture.md, "The commit path").
	processorFloor = floorWork{relay: true}
	// bareFloor keeps only what no design of the contract can leave out:
	// the checkpoint (which also claims the request id), the head's
	// compare-and-swap, the two events in their streams, and the ack. The
	// outbox's clearing write and watcher are gone, as if the head and the
	// events were one atomic write.
	bareFloor = floorWork{}
)

// benchFloor runs b.N requests through a loop that makes the processor's
// JetStream calls for the first delivery of a request on a fresh lane with
// the offline summarizer, in the processor's order and with its
// concurrency, leaving out what work does not ask for:
//
//	checkpoint create (with the plan; claims the request id)
//	head create (with the outbox records)
//	publish activated ‖ publish harvest job
//	ack
//	head update (records cleared), queued for one clearing goroutine
//
// while a relay-like watcher follows the heads' revisions (MetaOnly).
func benchFloor(b *testing.B, sizes writeSizes, work floorWork, prefix string) throughput {
	srv := testenv.NATS(b, testenv.Options{})
	js := benchJetStream(b, srv)
	ctx := context.Background()
	stores := testenv.Stores(b, js, 1)
	cons, err := js.CreateOrUpdateConsumer(ctx, topology.StreamRequests, jetstream.ConsumerConfig{Durable: "floor", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: benchWorkers})
	if err != nil {
		b.Fatal(err)
	}
	if work.relay {
		watch, err := stores.Heads.WatchAll(ctx, jetstream.UpdatesOnly(), jetstream.MetaOnly())
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = watch.Stop() }()
		go func() {
			for range watch.Updates() {
			}
		}()
	}
	n := b.N
	bodies := benchBodies(b, prefix+"floor", n)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("floor-%d", i)
	}
	l := newLatencies(n)
	sub := observe(b, srv.Conn(b), topology.SubjectActivated, func(m *nats.Msg) {
		l.end(strings.TrimSuffix(m.Header.Get(nats.MsgIdHdr), ":activated"))
	})
	defer func() { _ = sub.Unsubscribe() }()
	// As the relay does, the clearing writes are queued (up to 1 024) for
	// one goroutine that writes them in turn, off the request's path.
	clears := make(chan func(), 1024)
	cleared := make(chan struct{})
	go func() {
		defer close(cleared)
		for clear := range clears {
			clear()
		}
	}()
	defer func() { close(clears); <-cleared }()
	payload := func(n int) []byte { return bytes.Repeat([]byte("x"), n) }
	cp := payload(sizes.checkpoint)
	withRecords, headCleared := payload(sizes.headWithRecords), payload(sizes.headCleared)
	activated, job := payload(sizes.activated), payload(sizes.job)
	fail := func(err error) {
		if err != nil {
			b.Error(err)
		}
	}
	do := func(m jetstream.Msg) {
		id := m.Headers().Get(jetstream.MsgIDHeader)
		key := "lane." + id
		_, err := stores.Checkpoints.Create(ctx, id, cp)
		fail(err)
		headRev, err := stores.Heads.Create(ctx, key, withRecords)
		fail(err)
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := js.Publish(ctx, topology.SubjectHarvest, job, jetstream.WithMsgID(id+":harvest"))
			fail(err)
		})
		_, err = js.Publish(ctx, topology.SubjectActivated, activated, jetstream.WithMsgID(id+":activated"))
		fail(err)
		wg.Wait()
		if work.relay {
			clear := func() {
				_, err := stores.Heads.Update(ctx, key, headCleared, headRev)
				fail(err)
			}
			select {
			case clears <- clear:
			default:
				clear()
			}
		}
		_ = m.Ack()
	}
	stop := fanOut(b, cons, benchWorkers, do)
	defer stop()
	b.ResetTimer()
	t0, cpu0 := time.Now(), processCPU()
	publishAll(b, js, topology.SubjectRequested, bodies, ids, l)
	l.wait(b)
	elapsed, cpu := time.Since(t0), processCPU()-cpu0
	b.StopTimer()
	return l.report(b, elapsed, cpu, prefix)
}

// BenchmarkContractFloor runs the processor, the two JetStream floors with
// the sizes the processor wrote, and the baseline on the same number of
// requests. floor_ratio (floor ÷ baseline) bounds the processor's ratio
// on this design from above: an engine and a pipeline that cost nothing
// would reach it. bare_ratio does the same for any design of the contract.
// proc_of_floor is the processor's share of the floor's throughput.
func BenchmarkContractFloor(b *testing.B) {
	var sizes writeSizes
	proc := benchProcessorInspect(b, benchConfig(benchWorkers), EngineCompactor{}, offline.New(offline.DefaultOptions()), "cal", func(js jetstream.JetStream) {
		sizes = measureWriteSizes(b, js)
	})
	floor := benchFloor(b, sizes, processorFloor, "floor_")
	bare := benchFloor(b, sizes, bareFloor, "bare_")
	base := benchBaseline(b, benchWorkers, "base_")
	b.ReportMetric(floor.rps/base.rps, "floor_ratio")
	b.ReportMetric(bare.rps/base.rps, "bare_ratio")
	b.ReportMetric(proc.rps/base.rps, "ratio")
	b.ReportMetric(proc.rps/floor.rps, "proc_of_floor")
	b.ReportMetric(float64(floor.cpuPerReq)/float64(base.cpuPerReq), "floor_cpu_ratio")
	b.Logf("n=%d sizes %+v", b.N, sizes)
	b.Logf("baseline %.0f req/s %v CPU/req; bare floor %.0f req/s %v CPU/req; floor %.0f req/s %v CPU/req; processor %.0f req/s %v CPU/req",
		base.rps, base.cpuPerReq, bare.rps, bare.cpuPerReq, floor.rps, floor.cpuPerReq, proc.rps, proc.cpuPerReq)
}
