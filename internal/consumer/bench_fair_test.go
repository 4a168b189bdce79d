package consumer

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/baseline"
	"github.com/cairnhq/cairn/internal/lanegen"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The fair comparison of the processor with a JetStream baseline
// (docs/performance.md, "The benchmarks"): the baseline writes what a request needs with the sizes the
// processor writes, both sides get enough workers to use the machine (and
// report how many cores they used), the two alternate on fresh servers that
// each stop after their own loop, and the headline is the median of the
// pairs' ratios. Run with:
//
//	go test -run '^$' -bench 'ProcessorVsBaselineFair|OpsPerRequest' -benchtime 1000x ./internal/consumer

var (
	fairPairs       = flag.Int("cairn.fair.pairs", 3, "fair benchmark: processor/baseline pairs per lane")
	fairWorkers     = flag.Int("cairn.fair.workers", benchWorkers, "fair benchmark: processor workers")
	fairBaseWorkers = flag.Int("cairn.fair.baseworkers", 32, "fair benchmark: baseline workers")
)

// fairLane is one kind of request the comparison runs.
type fairLane struct {
	name string
	// body is the timed request i of run; its request id is "<run>-<i>" and
	// its lane fairLaneName(run, i).
	body func(b *testing.B, run string, i int) []byte
	// prior, when set, is an untimed request that activates lane i first,
	// so that the timed request meets an existing head.
	prior func(b *testing.B, run string, i int) []byte
}

func fairLaneName(run string, i int) string { return fmt.Sprintf("%s-lane-%d", run, i) }

func fairPriorID(run string, i int) string { return fmt.Sprintf("%s-p-%d", run, i) }

var fairLanes = []fairLane{
	{name: "events=24", body: func(b *testing.B, run string, i int) []byte {
		return engineBody(b, fmt.Sprintf("%s-%d", run, i), fairLaneName(run, i), "", 24, nil)
	}},
	{name: "generated=100", body: func(b *testing.B, run string, i int) []byte {
		return lanegen.RequestJSON(lanegen.RequestOptions{
			Lane:      lanegen.Options{Events: 100, Seed: uint64(i + 1), RunAgentID: fairLaneName(run, i)},
			RequestID: fmt.Sprintf("%s-%d", run, i),
		})
	}},
	{name: "second_activation", body: func(b *testing.B, run string, i int) []byte {
		return engineBody(b, fmt.Sprintf("%s-%d", run, i), fairLaneName(run, i), fairPriorID(run, i), 24, nil)
	}, prior: func(b *testing.B, run string, i int) []byte {
		return engineBody(b, fairPriorID(run, i), fairLaneName(run, i), "", 24, nil)
	}},
}

// fairRun is what one loop measured.
type fairRun struct {
	throughput
	cores float64 // process CPU ÷ wall time
	sizes baseline.Sizes
}

// fairBodies builds n bodies with build and their request ids.
func fairBodies(b *testing.B, n int, id func(int) string, build func(int) []byte) ([][]byte, []string) {
	bodies, ids := make([][]byte, n), make([]string, n)
	for i := range n {
		bodies[i], ids[i] = build(i), id(i)
	}
	return bodies, ids
}

// awaitActivated publishes bodies on js and waits for an activated event of
// each, observed on nc by event id; it returns the latencies for a report.
func awaitActivated(b *testing.B, js jetstream.JetStream, nc *nats.Conn, bodies [][]byte, ids []string) *latencies {
	l := newLatencies(len(ids))
	sub := observe(b, nc, topology.SubjectActivated, func(m *nats.Msg) {
		if id, ok := strings.CutSuffix(m.Header.Get(nats.MsgIdHdr), ":"+kindActivated); ok {
			l.end(id)
		}
	})
	defer func() { _ = sub.Unsubscribe() }()
	publishAll(b, js, topology.SubjectRequested, bodies, ids, l)
	l.wait(b)
	return l
}

// startFairProcessor starts a processor with the real engine and the
// offline summarizer on a fresh server, and returns the server, the
// processor's env, a publishing connection of its own and the running
// processor. The caller shuts the server down.
func startFairProcessor(b *testing.B) (*testenv.Server, *env, jetstream.JetStream, *running) {
	srv := testenv.NATS(b, testenv.Options{})
	e := newEnv(b, benchJetStream(b, srv), 1)
	e.realEngine = true
	r := e.startQuiet(b, benchConfig(*fairWorkers), EngineCompactor{}, offline.New(offline.DefaultOptions()))
	return srv, e, srv.JetStream(b), r
}

// activatePriors activates the first request of n lanes that lane's
// measured requests then activate again.
func activatePriors(b *testing.B, srv *testenv.Server, pub jetstream.JetStream, lane fairLane, run string, n int) {
	bodies, ids := fairBodies(b, n, func(i int) string { return fairPriorID(run, i) }, func(i int) []byte { return lane.prior(b, run, i) })
	awaitActivated(b, pub, srv.Conn(b), bodies, ids)
}

// runFairProcessor runs lane's requests through a processor on a fresh
// server, stopping both before it returns. The requests are published from
// a connection of their own, so that the processor's connection carries
// only its own work.
func runFairProcessor(b *testing.B, lane fairLane, run string) fairRun {
	srv, e, pub, r := startFairProcessor(b)
	defer srv.Shutdown()
	n := b.N
	if lane.prior != nil {
		activatePriors(b, srv, pub, lane, run, n)
	}
	bodies, ids := fairBodies(b, n, func(i int) string { return fmt.Sprintf("%s-%d", run, i) }, func(i int) []byte { return lane.body(b, run, i) })
	t0, cpu0 := time.Now(), processCPU()
	l := awaitActivated(b, pub, srv.Conn(b), bodies, ids)
	elapsed, cpu := time.Since(t0), processCPU()-cpu0
	r.stop()
	if err := r.wait(b); err != nil {
		b.Fatal(err)
	}
	return fairRun{throughput: l.measure(elapsed, cpu), cores: cpu.Seconds() / elapsed.Seconds(), sizes: readFairSizes(b, e.js)}
}

// readFairSizes reads the mean stored sizes from a processor run's streams.
func readFairSizes(b *testing.B, js jetstream.JetStream) baseline.Sizes {
	sizes, err := baseline.ReadSizes(context.Background(), js)
	if err != nil {
		b.Fatal(err)
	}
	return sizes
}

// runFairBaseline runs the baseline loop (internal/baseline) with the
// processor's sizes on a fresh server it stops before returning. With
// prior, every lane has a head already.
func runFairBaseline(b *testing.B, lane fairLane, sizes baseline.Sizes, run string) fairRun {
	srv := testenv.NATS(b, testenv.Options{})
	defer srv.Shutdown()
	ctx := context.Background()
	n := b.N
	id := func(i int) string { return fmt.Sprintf("%s-%d", run, i) }
	headKey := func(requestID string) string {
		i := 0
		_, _ = fmt.Sscanf(requestID[strings.LastIndexByte(requestID, '-')+1:], "%d", &i)
		return "lane." + fairLaneName(run, i)
	}
	loop, err := baseline.Start(ctx, benchJetStream(b, srv), baseline.Options{Workers: *fairBaseWorkers, Sizes: sizes, HeadKey: headKey})
	if err != nil {
		b.Fatal(err)
	}
	if lane.prior != nil {
		for i := range n {
			if err := loop.Prime(ctx, id(i), fairPriorID(run, i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	bodies, ids := fairBodies(b, n, id, func(i int) []byte { return lane.body(b, run, i) })
	t0, cpu0 := time.Now(), processCPU()
	l := awaitActivated(b, srv.JetStream(b), srv.Conn(b), bodies, ids)
	elapsed, cpu := time.Since(t0), processCPU()-cpu0
	if err := loop.Stop(); err != nil {
		b.Error(err)
	}
	return fairRun{throughput: l.measure(elapsed, cpu), cores: cpu.Seconds() / elapsed.Seconds(), sizes: sizes}
}

// BenchmarkProcessorVsBaselineFair alternates processor and baseline loops
// (processor, baseline, processor, ...; -cairn.fair.pairs pairs) on each
// lane. ratio is the median of the pairs' processor req/s ÷ baseline
// req/s, cpu_ratio the median of their CPU per request processor ÷
// baseline; the proc_ and base_ figures are medians over the pairs.
func BenchmarkProcessorVsBaselineFair(b *testing.B) {
	for _, lane := range fairLanes {
		b.Run(lane.name, func(b *testing.B) {
			b.StopTimer() // each loop times itself
			var ratio, cpuRatio, steadyRatio, procRPS, baseRPS, procCPU, baseCPU, procCores, baseCores []float64
			for pair := range *fairPairs {
				proc := runFairProcessor(b, lane, fmt.Sprintf("fp%d", pair))
				base := runFairBaseline(b, lane, proc.sizes, fmt.Sprintf("fb%d", pair))
				ratio = append(ratio, proc.rps/base.rps)
				steadyRatio = append(steadyRatio, proc.steady/base.steady)
				cpuRatio = append(cpuRatio, float64(proc.cpuPerReq)/float64(base.cpuPerReq))
				procRPS, baseRPS = append(procRPS, proc.rps), append(baseRPS, base.rps)
				procCPU, baseCPU = append(procCPU, ms(proc.cpuPerReq)), append(baseCPU, ms(base.cpuPerReq))
				procCores, baseCores = append(procCores, proc.cores), append(baseCores, base.cores)
				b.Logf("%s pair %d n=%d: processor %.0f req/s %.3f ms CPU/req %.2f cores; baseline %.0f req/s %.3f ms CPU/req %.2f cores (sizes %+v); ratio %.3f cpu_ratio %.2f",
					lane.name, pair, b.N, proc.rps, ms(proc.cpuPerReq), proc.cores, base.rps, ms(base.cpuPerReq), base.cores, proc.sizes, ratio[pair], cpuRatio[pair])
			}
			b.ReportMetric(baseline.Median(ratio), "ratio")
			b.ReportMetric(slices.Min(ratio), "ratio_min")
			b.ReportMetric(slices.Max(ratio), "ratio_max")
			b.ReportMetric(baseline.Median(steadyRatio), "steady_ratio")
			b.ReportMetric(baseline.Median(cpuRatio), "cpu_ratio")
			b.ReportMetric(baseline.Median(procRPS), "proc_req/s")
			b.ReportMetric(baseline.Median(baseRPS), "base_req/s")
			b.ReportMetric(baseline.Median(procCPU), "proc_cpu_ms/req")
			b.ReportMetric(baseline.Median(baseCPU), "base_cpu_ms/req")
			b.ReportMetric(baseline.Median(procCores), "proc_cores")
			b.ReportMetric(baseline.Median(baseCores), "base_cores")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// opTally counts, by kind, the messages Cairn's processor sends to the
// server while it handles requests, and the bytes of those that a stream
// or bucket stores (revisions that a later one replaces included).
type opTally struct {
	mu    sync.Mutex
	ops   map[string]int
	bytes map[string]int
}

// opKind names the JetStream operation a message seen on subject is, or ""
// for what is not the processor's work: replies, the benchmark's own
// requests, the server's advisories. stored says whether a stream keeps
// the message.
func opKind(subject string, data []byte) (kind string, stored bool) {
	switch {
	case subject == topology.SubjectRequested, strings.HasPrefix(subject, "_INBOX."), strings.HasPrefix(subject, "$JS.EVENT."), strings.HasPrefix(subject, "$SYS."):
		return "", false
	case strings.HasPrefix(subject, "$JS.API.DIRECT.GET."):
		return "get " + strings.TrimPrefix(strings.SplitN(strings.TrimPrefix(subject, "$JS.API.DIRECT.GET."), ".", 2)[0], "KV_"), false
	case strings.HasPrefix(subject, "$JS.API.CONSUMER.MSG.NEXT."):
		return "pull request", false
	case strings.HasPrefix(subject, "$JS.API."):
		parts := strings.Split(subject, ".")
		return "api " + strings.Join(parts[2:min(len(parts), 5)], "."), false
	case strings.HasPrefix(subject, "$JS.ACK."):
		if len(data) == 0 || string(data) == "+ACK" {
			return "ack", false
		}
		return "ack " + string(data[:min(len(data), 4)]), false
	case strings.HasPrefix(subject, "$KV."):
		return "kv put " + strings.SplitN(strings.TrimPrefix(subject, "$KV."), ".", 2)[0], true
	case strings.HasPrefix(subject, "$O."):
		return "object put " + strings.SplitN(strings.TrimPrefix(subject, "$O."), ".", 2)[0], true
	}
	return "publish " + subject, true
}

func (t *opTally) tap(m *nats.Msg) {
	kind, stored := opKind(m.Subject, m.Data)
	if kind == "" {
		return
	}
	if strings.HasPrefix(m.Reply, "$JS.ACK.") {
		// A consumer's delivery, which a subscription to every subject
		// sees under the stored message's subject: the relay's heads
		// watcher receives each head write this way. It is the
		// server's work, not an operation of the processor.
		kind, stored = "(received by a watcher: "+kind+")", false
	}
	size := 0
	if stored {
		size = len(m.Data)
		for k, vs := range m.Header {
			for _, v := range vs {
				size += len(k) + len(v) + 4 // "k: v\r\n"
			}
		}
	}
	t.mu.Lock()
	t.ops[kind]++
	t.bytes[kind] += size
	t.mu.Unlock()
}

// jsz reads the server's account statistics in-process, so that the
// reading sends nothing a tap or a connection's counters would see.
func jsz(b *testing.B, srv *testenv.Server) *server.AccountDetail {
	info, err := srv.Server().Jsz(&server.JSzOptions{Accounts: true, Streams: true})
	if err != nil || len(info.AccountDetails) != 1 {
		b.Fatalf("jsz: %v (%d accounts)", err, len(info.AccountDetails))
	}
	return info.AccountDetails[0]
}

// storedBytes is the sum of State.Bytes over every stream but the requests.
func storedBytes(b *testing.B, srv *testenv.Server) uint64 {
	var total uint64
	for _, st := range jsz(b, srv).Streams {
		if st.Name != topology.StreamRequests {
			total += st.State.Bytes
		}
	}
	return total
}

func headsLastSeq(b *testing.B, srv *testenv.Server) uint64 {
	for _, st := range jsz(b, srv).Streams {
		if st.Name == "KV_"+topology.BucketHeads {
			return st.State.LastSeq
		}
	}
	b.Fatal("no heads bucket")
	return 0
}

// awaitHeadWrites waits until the heads bucket's stream has had want more
// writes than at seq0: the head's compare-and-swap and the relay's
// clearing write per request.
func awaitHeadWrites(b *testing.B, srv *testenv.Server, seq0, want uint64) {
	testenv.Eventually(b, 30*time.Second, func() error {
		if got := headsLastSeq(b, srv) - seq0; got < want {
			return fmt.Errorf("%d of %d head writes", got, want)
		}
		return nil
	})
}

// BenchmarkOpsPerRequest counts the processor's JetStream operations and
// written bytes per request on its happy path, by kind: a subscription to
// every subject sees each API request, publish, KV write and ack the
// processor sends, and the processor's connection's OutMsgs gives the
// total. written_B/req sums the messages that streams and buckets store,
// revisions later replaced included; stored_B/req is the growth of the
// streams' State.Bytes (without replaced revisions); body_B/req is the
// request body.
func BenchmarkOpsPerRequest(b *testing.B) {
	for _, lane := range fairLanes {
		b.Run(lane.name, func(b *testing.B) {
			b.StopTimer()
			countOps(b, lane, "ops")
		})
	}
}

func countOps(b *testing.B, lane fairLane, run string) {
	srv, e, pub, r := startFairProcessor(b)
	defer srv.Shutdown()
	n := b.N
	if lane.prior != nil {
		activatePriors(b, srv, pub, lane, run, n)
		awaitHeadWrites(b, srv, 0, 2*uint64(n))
	}
	bodies, ids := fairBodies(b, n, func(i int) string { return fmt.Sprintf("%s-%d", run, i) }, func(i int) []byte { return lane.body(b, run, i) })
	body := 0
	for _, x := range bodies {
		body += len(x)
	}
	t := &opTally{ops: map[string]int{}, bytes: map[string]int{}}
	tapConn := srv.Conn(b)
	sub := observe(b, tapConn, ">", t.tap)
	defer func() { _ = sub.Unsubscribe() }()
	seq0, stored0, conn0 := headsLastSeq(b, srv), storedBytes(b, srv), e.js.Conn().Stats()
	awaitActivated(b, pub, srv.Conn(b), bodies, ids)
	awaitHeadWrites(b, srv, seq0, 2*uint64(n))
	if err := tapConn.Flush(); err != nil {
		b.Fatal(err)
	}
	conn := e.js.Conn().Stats()
	stored := storedBytes(b, srv) - stored0
	_ = sub.Unsubscribe()
	r.stop()
	if err := r.wait(b); err != nil {
		b.Fatal(err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	kinds := slices.Sorted(maps.Keys(t.ops))
	ops, written := 0, 0
	for _, k := range kinds {
		if !strings.HasPrefix(k, "(") {
			ops += t.ops[k]
		}
		written += t.bytes[k]
		b.Logf("%s n=%d %-40s %6.2f /req %8.0f B/req", lane.name, n, k, float64(t.ops[k])/float64(n), float64(t.bytes[k])/float64(n))
	}
	per := func(x int) float64 { return float64(x) / float64(n) }
	// The tap must see what the processor's connection sent, else the
	// breakdown misses a kind of operation; a pull request whose wait
	// expires may fall on either side of the count.
	if out, slack := int(conn.OutMsgs-conn0.OutMsgs), n/20+2; out-ops > slack || ops-out > slack {
		b.Errorf("the tap saw %d operations, the processor's connection sent %d messages", ops, out)
	}
	b.ReportMetric(per(ops), "ops/req")
	b.ReportMetric(per(int(conn.OutMsgs-conn0.OutMsgs)), "conn_out_msgs/req")
	b.ReportMetric(per(t.ops["pull request"]), "pulls/req")
	b.ReportMetric(per(written), "written_B/req")
	b.ReportMetric(per(int(stored)), "stored_B/req")
	b.ReportMetric(per(body), "body_B/req")
	b.ReportMetric(float64(written)/float64(body), "written_of_body")
}

// BenchmarkFairProcessor is the fair benchmark's processor loop alone, one
// per lane, for a CPU profile of the whole processor without a baseline's
// samples in it:
//
//	go test -run '^$' -bench 'FairProcessor/events=24' -benchtime 2000x -cpuprofile cpu.prof ./internal/consumer
func BenchmarkFairProcessor(b *testing.B) {
	for _, lane := range fairLanes {
		b.Run(lane.name, func(b *testing.B) {
			b.StopTimer()
			r := runFairProcessor(b, lane, "prof")
			b.ReportMetric(r.rps, "req/s")
			b.ReportMetric(ms(r.cpuPerReq), "cpu_ms/req")
			b.ReportMetric(r.cores, "cores")
		})
	}
}
