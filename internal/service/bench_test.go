package service_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
)

// statusRate is the pace of BenchmarkStatusWhileCompacting's asks.
const statusRate = 500

// compactionRate is the pace of the requests compacted meanwhile:
// CAIRN_BENCH_COMPACTIONS per second, 20 by default (a 60-event lane
// takes the offline summarizer about 10 ms of CPU, so 20 per second keep
// about a fifth of this machine's two cores busy).
func compactionRate(b *testing.B) int {
	v := os.Getenv("CAIRN_BENCH_COMPACTIONS")
	if v == "" {
		return 20
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("CAIRN_BENCH_COMPACTIONS=%q: want a positive integer", v)
	}
	return n
}

// BenchmarkStatusWhileCompacting asks status at 500 asks per second, each
// for one of the requests already finished, while the processor compacts a
// stream of new 60-event requests, and reports the asks' latency
// percentiles (p50-ms, p99-ms, max-ms) and their number (asks). Asks are
// sent on schedule whether or not the previous one was answered, so that a
// slow answer delays none of those behind it in the count. The requests
// compacted meanwhile are built before the asks start (busyRequests).
//
//	go test -run '^$' -bench StatusWhileCompacting -benchtime 5000x ./internal/service/
func BenchmarkStatusWhileCompacting(b *testing.B) {
	c := startCairn(b, topology.DefaultOptions().Duplicates)
	producer := connect(b, c.srv, "producer")
	finished := finishRequests(b, c.ctx, producer, 20)

	ctx, stop := context.WithCancel(c.ctx)
	rate := compactionRate(b)
	compacted := compactMeanwhile(ctx, producer, busyRequests(b.N, rate), rate)
	defer stop()

	nc := producer.Conn()
	latencies := make([]time.Duration, b.N)
	var failures atomic.Int64
	var asks sync.WaitGroup
	tick := time.NewTicker(time.Second / statusRate)
	defer tick.Stop()
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		asks.Go(func() {
			ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
			defer cancel()
			ask := []byte(`{"request_id":"` + finished[i%len(finished)] + `"}`)
			start := time.Now()
			msg, err := nc.RequestWithContext(ctx, events.SubjectStatus, ask)
			latencies[i] = time.Since(start)
			// The asker here shares the process with the server and the
			// processor: it checks the state without decoding the outcome,
			// so that its own work weighs little on what is measured.
			if err != nil || msg.Header.Get(micro.ErrorCodeHeader) != "" || !bytes.Contains(msg.Data[:min(len(msg.Data), 512)], []byte(`"state":"activated"`)) {
				failures.Add(1)
			}
		})
	}
	asks.Wait()
	b.StopTimer()
	stop()
	if n := failures.Load(); n > 0 {
		b.Fatalf("%d of %d asks failed or had no outcome", n, b.N)
	}
	if os.Getenv("CAIRN_BENCH_TRACE") != "" {
		for i, l := range latencies {
			if l > 5*time.Millisecond {
				b.Logf("ask %d: %s", i, l)
			}
		}
	}
	slices.Sort(latencies)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(latencies[len(latencies)/2]), "p50-ms")
	b.ReportMetric(ms(latencies[(len(latencies)*99)/100]), "p99-ms")
	b.ReportMetric(ms(latencies[len(latencies)-1]), "max-ms")
	b.ReportMetric(float64(b.N), "asks")
	b.ReportMetric(float64(compacted.Load()), "compaction-requests")
	b.ReportMetric(0, "ns/op")
}

// finishRequests publishes n requests and waits for their outcomes.
func finishRequests(b *testing.B, ctx context.Context, js jetstream.JetStream, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("req-done-%d", i)
		since := time.Now().Add(-time.Second)
		if _, err := events.PublishRaw(ctx, js, ids[i], request(ids[i], nil), ""); err != nil {
			b.Fatal(err)
		}
		if _, err := events.WaitOutcome(ctx, readerOnly{js}, ids[i], since); err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

// busyRequests builds the new 60-event requests compactMeanwhile publishes
// over the run of n asks, with a margin: their producer is not Cairn, so
// building them is kept off the cores the measured asks share.
func busyRequests(n, rate int) [][]byte {
	bodies := make([][]byte, (n/statusRate+5)*rate)
	for i := range bodies {
		bodies[i] = request(fmt.Sprintf("req-busy-%d", i), nil)
	}
	return bodies
}

// compactMeanwhile publishes bodies at rate per second until ctx ends or
// they run out, and returns how many it published.
func compactMeanwhile(ctx context.Context, js jetstream.JetStream, bodies [][]byte, rate int) *atomic.Int64 {
	var published atomic.Int64
	go func() {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i, body := range bodies {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if _, err := events.PublishRaw(ctx, js, fmt.Sprintf("req-busy-%d", i), body, ""); err != nil {
				return
			}
			published.Add(1)
		}
	}()
	return &published
}
