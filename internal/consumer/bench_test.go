package consumer

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/baseline"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Throughput and latency from publish to activated, beside a baseline that
// does only the JetStream work one request needs (consume, KV get, KV
// update, publish, ack). Run with:
//
//	go test -run '^$' -bench . -benchtime 200x ./internal/consumer

const benchWorkers = 8

// latencies records publish→done times by id.
type latencies struct {
	mu    sync.Mutex
	start map[string]time.Time
	took  []time.Duration
	ended []time.Time // completion times, in order
	done  chan struct{}
	want  int
}

func newLatencies(n int) *latencies {
	return &latencies{start: map[string]time.Time{}, done: make(chan struct{}), want: n}
}

func (l *latencies) begin(id string) {
	l.mu.Lock()
	l.start[id] = time.Now()
	l.mu.Unlock()
}

func (l *latencies) end(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t0, ok := l.start[id]
	if !ok {
		return
	}
	delete(l.start, id)
	now := time.Now()
	l.took = append(l.took, now.Sub(t0))
	l.ended = append(l.ended, now)
	if len(l.took) == l.want {
		close(l.done)
	}
}

func (l *latencies) wait(b *testing.B) {
	select {
	case <-l.done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d finished", len(l.took), l.want)
	}
}

// throughput is what one run measured.
type throughput struct {
	rps       float64       // requests ÷ time from the first publish to the last outcome
	steady    float64       // the same between the 10th and the 90th percentile of completions
	cpuPerReq time.Duration // process CPU (the embedded server's included) per request
}

// report adds req/s, steady req/s, p50, p99 and the process CPU per request
// to the benchmark.
//
// steady_req/s leaves out the first and the last tenth of completions: the
// ramp-up, while the whole backlog is still being published into the same
// process, and the tail, when fewer requests than workers remain. It is the
// rate of the pipeline when every worker is busy.
func (l *latencies) report(b *testing.B, elapsed, cpu time.Duration, prefix string) throughput {
	r := l.measure(elapsed, cpu)
	n := len(l.took)
	b.ReportMetric(r.rps, prefix+"req/s")
	b.ReportMetric(r.steady, prefix+"steady_req/s")
	b.ReportMetric(float64(r.cpuPerReq.Microseconds())/1000, prefix+"cpu_ms/req")
	b.ReportMetric(float64(l.took[n/2].Microseconds())/1000, prefix+"p50_ms")
	b.ReportMetric(float64(l.took[n*99/100].Microseconds())/1000, prefix+"p99_ms")
	return r
}

// measure is report without reporting, for benchmarks that combine runs.
func (l *latencies) measure(elapsed, cpu time.Duration) throughput {
	slices.Sort(l.took)
	n := len(l.took)
	r := throughput{rps: float64(n) / elapsed.Seconds(), cpuPerReq: cpu / time.Duration(n)}
	r.steady = r.rps
	if lo, hi := n/10, n*9/10; hi-lo >= 10 {
		r.steady = float64(hi-lo) / l.ended[hi].Sub(l.ended[lo]).Seconds()
	}
	return r
}

// benchBodies pre-builds n engine requests, one lane each.
func benchBodies(b *testing.B, run string, n int) [][]byte {
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = benchLaneBody(b, run)(i)
	}
	return bodies
}

// publishAll publishes every body at once.
func publishAll(b *testing.B, js jetstream.JetStream, subject string, bodies [][]byte, ids []string, l *latencies) {
	for i, body := range bodies {
		l.begin(ids[i])
		if _, err := js.PublishAsync(subject, body, jetstream.WithMsgID(ids[i])); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("publish did not complete")
	}
}

// benchLaneBody makes request i of run: 24 events on a lane of its own,
// request id "<run>-<i>".
func benchLaneBody(b *testing.B, run string) func(int) []byte {
	return func(i int) []byte {
		return engineBody(b, fmt.Sprintf("%s-%d", run, i), fmt.Sprintf("%s-lane-%d", run, i), "", 24, nil)
	}
}

// benchProcessor runs b.N requests of benchLaneBody through a processor on
// a fresh embedded server.
func benchProcessor(b *testing.B, cfg Config, c Compactor, s engine.Summarizer, run string) throughput {
	return benchProcessorRun(b, cfg, c, s, run, benchRun{body: benchLaneBody(b, run)})
}

// benchInProcess makes the benchmarks connect to the embedded server
// in-process, as processor serve does by default, instead of over loopback
// TCP (as a processor with --nats-url does).
var benchInProcess = flag.Bool("cairn.inprocess", false, "benchmarks connect to the embedded server in-process")

// benchJetStream connects to srv over loopback TCP, or in-process with
// -cairn.inprocess.
func benchJetStream(b *testing.B, srv *testenv.Server) jetstream.JetStream {
	if !*benchInProcess {
		return srv.JetStream(b)
	}
	js, err := jetstream.New(srv.Conn(b, nats.InProcessServer(srv.Server())))
	if err != nil {
		b.Fatal(err)
	}
	return js
}

// observe subscribes handle to subject on nc and returns once the server
// has the subscription: a publish right after Subscribe alone may reach the
// server first, and a benchmark that waits for its observation would wait
// in vain.
func observe(b *testing.B, nc *nats.Conn, subject string, handle nats.MsgHandler) *nats.Subscription {
	sub, err := nc.Subscribe(subject, handle)
	if err != nil {
		b.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	return sub
}

// benchProcessorInspect is benchProcessor, and then calls inspect with the
// server's JetStream once the processor stopped.
func benchProcessorInspect(b *testing.B, cfg Config, c Compactor, s engine.Summarizer, run string, inspect func(jetstream.JetStream)) throughput {
	return benchProcessorRun(b, cfg, c, s, run, benchRun{body: benchLaneBody(b, run), inspect: inspect})
}

// benchRun says what a processor benchmark publishes and how.
type benchRun struct {
	body func(int) []byte // request i's body (request id "<run>-<i>")
	// backlog publishes every request before the processor starts; the
	// clock starts with the processor. Otherwise the processor runs first
	// and the clock starts with the publishing.
	backlog bool
	// inspect, when set, is called with the server's JetStream once the
	// processor stopped.
	inspect func(jetstream.JetStream)
}

func benchProcessorRun(b *testing.B, cfg Config, c Compactor, s engine.Summarizer, run string, opts benchRun) throughput {
	srv := testenv.NATS(b, testenv.Options{})
	e := newEnv(b, benchJetStream(b, srv), 1)
	e.realEngine = true
	n := b.N
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = opts.body(i)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", run, i)
	}
	l := newLatencies(n)
	nc := srv.Conn(b)
	// The event id (Nats-Msg-Id) names the request, so the observer need not
	// decode the event: its cost would count as the processor's CPU.
	sub := observe(b, nc, topology.SubjectActivated, func(m *nats.Msg) {
		if id, ok := strings.CutSuffix(m.Header.Get(nats.MsgIdHdr), ":"+kindActivated); ok {
			l.end(id)
		}
	})
	defer func() { _ = sub.Unsubscribe() }()
	var r *running
	var t0 time.Time
	var cpu0 time.Duration
	if opts.backlog {
		publishAll(b, e.js, topology.SubjectRequested, bodies, ids, l)
		b.ResetTimer()
		t0, cpu0 = time.Now(), processCPU()
		r = e.startQuiet(b, cfg, c, s)
	} else {
		r = e.startQuiet(b, cfg, c, s)
		b.ResetTimer()
		t0, cpu0 = time.Now(), processCPU()
		publishAll(b, e.js, topology.SubjectRequested, bodies, ids, l)
	}
	l.wait(b)
	elapsed, cpu := time.Since(t0), processCPU()-cpu0
	b.StopTimer()
	if opts.inspect != nil {
		r.stop()
		if err := r.wait(b); err != nil {
			b.Fatal(err)
		}
		opts.inspect(e.js)
	}
	return l.report(b, elapsed, cpu, "")
}

func benchBaseline(b *testing.B, workers int, prefix string) throughput {
	srv := testenv.NATS(b, testenv.Options{})
	js := benchJetStream(b, srv)
	ctx := context.Background()
	n := b.N
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "BASE_REQ", Subjects: []string{"base.req"}, Storage: jetstream.FileStorage}); err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "BASE_EV", Subjects: []string{"base.ev"}, Storage: jetstream.FileStorage}); err != nil {
		b.Fatal(err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "base_heads", Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "BASE_REQ", jetstream.ConsumerConfig{Durable: "base", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: workers})
	if err != nil {
		b.Fatal(err)
	}
	bodies := benchBodies(b, prefix+"base", n)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("base-%d", i)
	}
	l := newLatencies(n)
	sub := observe(b, srv.Conn(b), "base.ev", func(m *nats.Msg) { l.end(string(m.Data)) })
	defer func() { _ = sub.Unsubscribe() }()
	work := func(m jetstream.Msg) {
		id := m.Headers().Get(jetstream.MsgIDHeader)
		key := "k" + id[len("base-"):]
		rev := uint64(0)
		if en, err := kv.Get(ctx, key); err == nil {
			rev = en.Revision()
		}
		if rev == 0 {
			_, err = kv.Create(ctx, key, []byte(id))
		} else {
			_, err = kv.Update(ctx, key, []byte(id), rev)
		}
		if err != nil {
			b.Error(err)
		}
		if _, err := js.Publish(ctx, "base.ev", []byte(id), jetstream.WithMsgID(id+":done")); err != nil {
			b.Error(err)
		}
		_ = m.Ack() // as the processor settles
	}
	stop := fanOut(b, cons, workers, work)
	defer stop()
	b.ResetTimer()
	t0, cpu0 := time.Now(), processCPU()
	publishAll(b, js, "base.req", bodies, ids, l)
	l.wait(b)
	elapsed, cpu := time.Since(t0), processCPU()-cpu0
	b.StopTimer()
	return l.report(b, elapsed, cpu, prefix)
}

// fanOut is baseline.FanOut, the pull loop every baseline and floor
// benchmark shares.
func fanOut(b *testing.B, cons jetstream.Consumer, workers int, work func(jetstream.Msg)) (stop func()) {
	stop, err := baseline.FanOut(cons, workers, work)
	if err != nil {
		b.Fatal(err)
	}
	return stop
}

// benchCommits overrides Config.CommitConcurrency (0: the default; the
// number of workers lets every request commit at once, as without the gate).
var benchCommits = flag.Int("cairn.commits", 0, "benchmarks: commit concurrency (0: default)")

// benchGather overrides Config.PullGather (negative: the default).
var benchGather = flag.Duration("cairn.gather", -1, "benchmarks: pull gather wait (negative: default)")

func benchConfig(workers int) Config {
	c := DefaultConfig()
	c.Workers = workers
	c.CommitConcurrency = min(*benchCommits, workers)
	if *benchGather >= 0 {
		c.PullGather = *benchGather
	}
	c.AckWait = 30 * time.Second
	c.PullWait = time.Second
	c.DrainTimeout = 5 * time.Second
	return c
}

// BenchmarkJetStreamBaseline is the JetStream work alone.
func BenchmarkJetStreamBaseline(b *testing.B) { benchBaseline(b, benchWorkers, "") }

// BenchmarkProcessor is the full processor with the offline summarizer.
func BenchmarkProcessor(b *testing.B) {
	benchProcessor(b, benchConfig(benchWorkers), EngineCompactor{}, offline.New(offline.DefaultOptions()), "proc")
}

// BenchmarkProcessorVsBaseline runs both on the same number of requests and
// reports processor req/s ÷ baseline req/s (goal ≥ 0.5).
func BenchmarkProcessorVsBaseline(b *testing.B) {
	base := benchBaseline(b, benchWorkers, "base_")
	proc := benchProcessor(b, benchConfig(benchWorkers), EngineCompactor{}, offline.New(offline.DefaultOptions()), "ratio")
	b.ReportMetric(proc.rps/base.rps, "ratio")
	b.ReportMetric(proc.steady/base.steady, "steady_ratio")
	b.ReportMetric(float64(proc.cpuPerReq)/float64(base.cpuPerReq), "cpu_ratio")
	b.Logf("n=%d baseline %.0f req/s %v CPU/req, processor %.0f req/s %v CPU/req, ratio %.3f", b.N, base.rps, base.cpuPerReq, proc.rps, proc.cpuPerReq, proc.rps/base.rps)
}

// benchBacklog runs the processor with 32 workers on requests of body (24
// events each when nil) published before it starts, as the fixed-latency
// benchmarks measure it. Published once the clock runs, the 1 000 requests
// (37 MB) kept the embedded server ingesting for about 250 ms, and the first
// model call came only after the last publish was acknowledged, on the
// processor's connection or another: a quarter of a model latency charged
// to a pipeline that had nothing to do with it.
func benchBacklog(b *testing.B, c Compactor, s engine.Summarizer, run string, body func(int) []byte) throughput {
	if body == nil {
		body = benchLaneBody(b, run)
	}
	return benchProcessorRun(b, benchConfig(32), c, s, run, benchRun{body: body, backlog: true})
}

// reportOfIdeal reports throughput × model calls per request as a share of
// workers / latency (32 / 200 ms = 160 calls/s), the rate of a pipeline that
// keeps every worker in a model call: over the whole run (of_ideal) and with
// every worker busy (steady_of_ideal).
func reportOfIdeal(b *testing.B, r throughput, callsPerReq float64) {
	const ideal = 32 / 0.2
	b.ReportMetric(r.rps*callsPerReq/ideal, "of_ideal")
	b.ReportMetric(r.steady*callsPerReq/ideal, "steady_of_ideal")
}

// BenchmarkSlowModel200ms measures throughput with a model of fixed 200 ms
// latency at 32 workers; without head-of-line blocking it approaches
// workers / latency = 160 req/s (goal ≥ 0.9 × that, per model call).
func BenchmarkSlowModel200ms(b *testing.B) {
	slow := &testSummarizer{delay: 200 * time.Millisecond, inner: offline.New(offline.DefaultOptions())}
	r := benchBacklog(b, EngineCompactor{}, slow, "slow", nil)
	calls := float64(slow.calls.Load()) / float64(b.N)
	b.ReportMetric(calls, "model_calls/req")
	reportOfIdeal(b, r, calls)
}

// BenchmarkSlowModel200msSpread is BenchmarkSlowModel200ms with model
// latencies spread evenly over 150..250 ms (mean 200 ms). With one fixed
// latency, requests that start together keep returning together and queue
// for the CPU as a platoon; real model latencies vary, which breaks such
// platoons up. Compare the two to see how much of the gap to the ideal is
// that queueing.
func BenchmarkSlowModel200msSpread(b *testing.B) {
	slow := &testSummarizer{delay: 200 * time.Millisecond, spread: 100 * time.Millisecond, inner: offline.New(offline.DefaultOptions())}
	r := benchBacklog(b, EngineCompactor{}, slow, "spread", nil)
	reportOfIdeal(b, r, float64(slow.calls.Load())/float64(b.N))
}

// BenchmarkSlowModel200msHTTP is BenchmarkSlowModel200ms over the production
// model path: openaisum and the real openai-go client, calling testenv's
// fake OpenAI-compatible server, which answers each request after 200 ms
// with the offline summary of its payload. It adds HTTP, the JSON of the
// model call, and connection reuse to what is measured.
func BenchmarkSlowModel200msHTTP(b *testing.B) {
	f := testenv.OpenAI(b)
	answer := answerWithOffline(b)
	f.SetHandler(func(r testenv.RecordedRequest) testenv.Reply {
		reply := answer(r)
		reply.Delay = 200 * time.Millisecond
		return reply
	})
	r := benchBacklog(b, EngineCompactor{}, modelSummarizer(b, f), "http", nil)
	calls := float64(len(f.Requests())) / float64(b.N)
	b.ReportMetric(calls, "model_calls/req")
	reportOfIdeal(b, r, calls)
	b.ReportMetric(float64(f.Conns()), "connections")
}

// BenchmarkSlowModel200msSmallLanes isolates the pipeline: 4-event lanes and
// the small test compactor, one 200 ms model call per request, 32 workers.
// It shows whether slots stay busy (no head-of-line blocking) when the
// per-request payload work is small.
func BenchmarkSlowModel200msSmallLanes(b *testing.B) {
	slow := &testSummarizer{delay: 200 * time.Millisecond}
	r := benchBacklog(b, testCompactor{}, slow, "small", func(i int) []byte {
		return reqSpec{id: fmt.Sprintf("small-%d", i), lane: fmt.Sprintf("small-lane-%d", i), events: 4}.testBody()
	})
	reportOfIdeal(b, r, float64(slow.calls.Load())/float64(b.N))
}

// BenchmarkEngineCompactor is the engine's share of one benchmark request
// (24 events, offline summarizer) without NATS: decode, compact, result.
func BenchmarkEngineCompactor(b *testing.B) {
	body := engineBody(b, "eng-0", "eng", "", 24, nil)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		b.Fatal(err)
	}
	in := Input{Body: body, Events: m["events"]}
	s := offline.New(offline.DefaultOptions())
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		res, err := EngineCompactor{}.Compact(context.Background(), in, s, now)
		if err != nil || res.Status != StatusCompacted {
			b.Fatal(res, err)
		}
	}
}
