package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/baseline"
	"github.com/cairnhq/cairn/internal/consumer"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/lanegen"
	"github.com/cairnhq/cairn/internal/pause"
	"github.com/cairnhq/cairn/internal/tokens"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func init() {
	register(command{name: "bench", summary: "measure requests/s, latency and memory on an embedded server", run: runBench})
}

// benchConfig is what `processor bench` measures.
type benchConfig struct {
	requests     int
	events       int
	workers      int
	commits      int
	modelLatency time.Duration
	spread       time.Duration
	rate         float64
	timeout      time.Duration
	natsURL      string
	// tokenizer is every request's model_profile.tokenizer ("" for none:
	// budgeted in bytes).
	tokenizer string
	// cpuProfile is a file to write a CPU profile of the measured span to
	// (first publish to last outcome, as cpu_per_request_ms); "" for none.
	cpuProfile string
	// deadline, when positive, is every request's deadline_at, this long
	// after its body is generated.
	deadline time.Duration
	// progressEvery is how often the outcomes that arrived are counted on
	// stderr; 0 never.
	progressEvery time.Duration
	// baseline runs the baseline loop (internal/baseline) after each of
	// pairs Cairn runs, with baseWorkers workers.
	baseline    bool
	pairs       int
	baseWorkers int
}

// benchReport is the outcome of one run.
type benchReport struct {
	Requests  int `json:"requests"`
	Activated int `json:"activated"`
	Skipped   int `json:"skipped"`
	Failed    int `json:"failed"`
	// Outcomes counts the outcomes other than activated by skip reason or
	// error code ("skipped:<reason>", "failed:<code>").
	Outcomes map[string]int `json:"outcomes,omitempty"`
	// Statuses counts the activated outcomes by status (pruned, compacted).
	Statuses map[string]int `json:"activated_status,omitempty"`
	// Tokenizer is the requests' model_profile.tokenizer, Window the
	// smallest and largest max_input_tokens they were given.
	Tokenizer     string        `json:"tokenizer,omitempty"`
	Window        [2]int64      `json:"max_input_tokens"`
	Workers       int           `json:"workers"`
	Commits       int           `json:"commit_concurrency"`
	Rate          float64       `json:"publish_rate,omitempty"`
	ModelLatency  time.Duration `json:"model_latency_ns"`
	LatencySpread time.Duration `json:"model_latency_spread_ns,omitempty"`
	// Missing counts the requests whose outcome had not arrived when the
	// run timed out.
	Missing int           `json:"missing,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// PerSecond counts only the activated outcomes (skipped and failed ones
	// are not work done) over the time from the first publish to the last
	// outcome.
	PerSecond float64 `json:"requests_per_second"`
	// SteadyPerSecond leaves out the first and last tenth of activated
	// completions (ramp-up and tail): the rate while every worker is busy.
	SteadyPerSecond float64 `json:"steady_requests_per_second"`
	// P50 and P99 are of publish → activated.
	P50, P99     time.Duration `json:"-"`
	P50ms, P99ms float64
	// CPUSeconds is the process's user + system CPU from the first publish
	// to the last outcome (embedded server, processor and publisher; not the
	// lanes' generation); 0 where /proc is not there to read it.
	CPUSeconds      float64 `json:"cpu_seconds"`
	CPUPerRequestMs float64 `json:"cpu_per_request_ms"`
	// Cores is CPUSeconds ÷ Elapsed: how much of the machine the run got.
	Cores         float64   `json:"cores"`
	RSSSamplesMiB []float64 `json:"rss_mib"`
	// Heap samples the Go runtime's view of memory at the same instants as
	// RSSSamplesMiB: what the resident size is made of.
	Heap []heapSample `json:"heap"`
	// Baseline is the comparison with the baseline loop (--baseline).
	Baseline *baselineReport `json:"baseline,omitempty"`
	// Harvests counts the harvest jobs of the run (one per request activated
	// as compacted), HarvestsFlushed and HarvestsFailed how they ended,
	// FactsStored the facts their memory.flushed events stored, and
	// HarvestTail how long after the last outcome the last one ended.
	Harvests        int           `json:"harvests"`
	HarvestsFlushed int           `json:"harvests_flushed"`
	HarvestsFailed  int           `json:"harvests_failed"`
	FactsStored     int           `json:"facts_stored"`
	HarvestTail     time.Duration `json:"harvest_tail_ns"`
	// sizes are what the run wrote, read back for the baseline.
	sizes baseline.Sizes
	// compacted are the requests activated as compacted.
	compacted map[string]bool
}

// heapSample is one reading of the runtime's memory classes, in MiB.
type heapSample struct {
	// Live is the heap marked live by the last GC (objects allocated while it
	// marked included), Goal the heap size at which the next GC starts:
	// without a memory limit, Live × (1 + GOGC/100).
	Live float64 `json:"live_mib"`
	Goal float64 `json:"goal_mib"`
	// Objects is the heap in use now, Unused the space in spans not taken by
	// objects, Free the free pages not yet returned to the OS, Released the
	// free pages returned.
	Objects  float64 `json:"objects_mib"`
	Unused   float64 `json:"unused_mib"`
	Free     float64 `json:"free_mib"`
	Released float64 `json:"released_mib"`
	// Stacks are goroutine stacks; Total everything the runtime has mapped,
	// released pages included.
	Stacks float64 `json:"stacks_mib"`
	Total  float64 `json:"total_mib"`
}

// heapMetrics are read in heapSample's field order.
var heapMetrics = []string{
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/total:bytes",
}

// readHeap samples heapMetrics.
func readHeap() heapSample {
	samples := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples)
	mib := make([]float64, len(samples))
	for i, x := range samples {
		if x.Value.Kind() == metrics.KindUint64 {
			mib[i] = math.Round(float64(x.Value.Uint64())/(1<<20)*10) / 10
		}
	}
	return heapSample{Live: mib[0], Goal: mib[1], Objects: mib[2], Unused: mib[3], Free: mib[4], Released: mib[5], Stacks: mib[6], Total: mib[7]}
}

func runBench(ctx context.Context, args []string, io stdio) int {
	fs := newFlagSet("bench", "bench [flags]", io)
	var c benchConfig
	fs.IntVar(&c.requests, "requests", 300, "requests to publish, one lane each")
	fs.IntVar(&c.events, "events", 200, "events per generated lane")
	fs.IntVar(&c.workers, "workers", 8, "processor workers")
	fs.IntVar(&c.commits, "commit-concurrency", 0, "requests committing at once (as serve's flag; default two per CPU, at most --workers)")
	fs.DurationVar(&c.modelLatency, "model-latency", 0, "add this latency to every summarizer call (a stand-in for a model)")
	fs.DurationVar(&c.spread, "model-latency-spread", 0, "vary --model-latency from call to call over this range around it (mean unchanged), as real models do")
	fs.Float64Var(&c.rate, "rate", 0, "publish this many requests per second, each generated as it is sent (a sustained run, for memory over time); 0 publishes all at once")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "give up after this long")
	fs.StringVar(&c.natsURL, "nats-url", "", "run against this NATS server instead of an embedded one, so that the resident memory reported is the processor's alone")
	fs.StringVar(&c.tokenizer, "tokenizer", "", "name this tokenizer as every request's model_profile.tokenizer (o200k_base, cl100k_base, gpt-4o, ...), so the processor counts tokens; window and thresholds stay those of the lane in bytes, so the plan is the same. Empty: none named, budgeted in bytes")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile from the first publish to the last harvest to this file, for go tool pprof; samples carry the label cairn_stage (compact, harvest, relay): go tool pprof -tags FILE splits them")
	fs.DurationVar(&c.deadline, "deadline", 0, "give every request a deadline_at this long after its body is generated (0: none); requests still unfinished then fail with deadline_exceeded")
	fs.DurationVar(&c.progressEvery, "progress-every", 5*time.Second, "count the outcomes that arrived on stderr this often (0: never)")
	fs.BoolVar(&c.baseline, "baseline", false, "after Cairn's run, run a loop doing only the JetStream work a request needs (internal/baseline) with the sizes Cairn wrote, on the same number of requests and a fresh server, and print it beside Cairn")
	fs.IntVar(&c.pairs, "baseline-pairs", 1, "with --baseline: alternate this many Cairn and baseline runs (C, B, C, B, ...), each on a fresh server; the headline is the median of the pairs' ratios")
	fs.IntVar(&c.baseWorkers, "baseline-workers", 32, "with --baseline: the baseline loop's workers")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if ok, code := parseFlags(fs, args, nil); !ok {
		return code
	}
	if msg := c.invalid(); msg != "" {
		fmt.Fprintln(io.err, "processor bench: "+msg)
		return 2
	}
	ctx, cancel := withTimeout(ctx, c.timeout)
	defer cancel()
	report, err := bench(ctx, c, io.err)
	if err != nil && report.Elapsed == 0 {
		return fail(io, err)
	}
	if err == nil && c.baseline {
		report.Baseline, err = compareWithBaseline(ctx, c, report, io.err)
	}
	printBenchReport(io.out, c, report, *asJSON)
	if err != nil {
		return fail(io, err)
	}
	if line := failureLine(report); line != "" {
		fmt.Fprintln(io.err, "processor bench: "+line)
		if hint := smallLaneHint(c, report); hint != "" {
			fmt.Fprintln(io.err, "processor bench: "+hint)
		}
		return 1
	}
	return 0
}

// minEffectiveEvents is the smallest generated lane length at which every
// lane of a sample compacted. A compaction keeps the last two user events and
// everything after them verbatim, and in lanegen's lanes that is 63 % of a
// 24-event lane on average, 32 % of a 48-event one (100 seeds each). Of 300
// seeds, lanes of 28 events failed with ineffective_compaction 188 times, of
// 36 events 6 times, of 48 never.
const minEffectiveEvents = 48

// smallLaneHint explains ineffective compactions of generated lanes too
// short to compact reliably, or returns "".
func smallLaneHint(c benchConfig, r benchReport) string {
	if c.events >= minEffectiveEvents || r.Outcomes["failed:"+errcode.Ineffective] == 0 {
		return ""
	}
	return fmt.Sprintf("a compaction keeps the last two user turns, and in generated lanes of fewer than %d events they are most of the lane, so many compactions reclaim too little (ineffective_compaction): try --events %d or more",
		minEffectiveEvents, minEffectiveEvents)
}

// invalid says which flags are out of bounds, or "".
func (c benchConfig) invalid() string {
	switch {
	case c.requests < 1 || c.events < 8 || c.workers < 1 || c.rate < 0 || c.commits < 0 || c.commits > c.workers:
		return "--requests ≥ 1, --events ≥ 8, --workers ≥ 1, --rate ≥ 0 and 0 ≤ --commit-concurrency ≤ --workers"
	case c.deadline < 0 || c.progressEvery < 0:
		return "--deadline and --progress-every ≥ 0"
	case c.baseline && (c.pairs < 1 || c.baseWorkers < 1):
		return "--baseline-pairs ≥ 1 and --baseline-workers ≥ 1"
	case c.baseline && (c.natsURL != "" || c.rate > 0):
		// Each loop needs a fresh server of its own, and a publish rate
		// would bound both rates alike.
		return "--baseline runs on embedded servers, all at once: without --nats-url and --rate"
	}
	return ""
}

func printBenchReport(out io.Writer, c benchConfig, report benchReport, asJSON bool) {
	if asJSON {
		printJSON(out, report)
		return
	}
	io := stdio{out: out}
	spread := ""
	if report.LatencySpread > 0 {
		spread = fmt.Sprintf(" ± %s", report.LatencySpread/2)
	}
	fmt.Fprintf(io.out, "%d requests (%d events each), %d workers (%d committing at once), model latency %s%s\n",
		report.Requests, c.events, report.Workers, report.Commits, report.ModelLatency, spread)
	fmt.Fprintf(io.out, "  %s, max_input_tokens %s\n", describeTokenizer(c.tokenizer), formatWindow(report.Window))
	missing := ""
	if report.Missing > 0 {
		missing = fmt.Sprintf(", %d without an outcome at the timeout", report.Missing)
	}
	fmt.Fprintf(io.out, "  activated %d, skipped %d, failed %d%s in %s: %.1f activated/s, only activated outcomes counted (steady, 10th to 90th percentile of activations: %.1f)\n",
		report.Activated, report.Skipped, report.Failed, missing, report.Elapsed.Round(time.Millisecond), report.PerSecond, report.SteadyPerSecond)
	if len(report.Statuses) > 0 {
		fmt.Fprintf(io.out, "  activated: %s\n", formatOutcomes(report.Statuses))
	}
	if len(report.Outcomes) > 0 {
		fmt.Fprintf(io.out, "  not activated: %s\n", formatOutcomes(report.Outcomes))
	}
	if report.CPUSeconds > 0 {
		fmt.Fprintf(io.out, "  process CPU (user + system, first publish to last outcome): %.2f s, %.2f ms per request, %.2f cores\n", report.CPUSeconds, report.CPUPerRequestMs, report.Cores)
	}
	if report.Harvests > 0 {
		fmt.Fprintf(io.out, "  harvest: %d of %d jobs flushed (%d facts stored), %d failed; the last %s after the last outcome\n",
			report.HarvestsFlushed, report.Harvests, report.FactsStored, report.HarvestsFailed, report.HarvestTail.Round(time.Millisecond))
	}
	fmt.Fprintf(io.out, "  publish → activated latency: p50 %.1f ms, p99 %.1f ms\n", report.P50ms, report.P99ms)
	if c.modelLatency > 0 {
		ideal := float64(c.workers) / c.modelLatency.Seconds()
		fmt.Fprintf(io.out, "  %.2f of the no-head-of-line-blocking ideal (workers / latency = %.1f/s); steady %.2f\n", report.PerSecond/ideal, ideal, report.SteadyPerSecond/ideal)
	}
	if c.rate > 0 {
		fmt.Fprintf(io.out, "  published at %.1f requests/s\n", c.rate)
	}
	fmt.Fprintf(io.out, "  resident memory (MiB) over the run: %s (peak %.0f; --json has every second)\n", formatSamples(report.RSSSamplesMiB), slices.Max(append([]float64{0}, report.RSSSamplesMiB...)))
	live, goal := make([]float64, len(report.Heap)), make([]float64, len(report.Heap))
	for i, h := range report.Heap {
		live[i], goal[i] = h.Live, h.Goal
	}
	fmt.Fprintf(io.out, "  heap marked live by the last GC (MiB): %s; next GC at: %s (--json has the rest)\n", formatSamples(live), formatSamples(goal))
	if report.Baseline != nil {
		printBaseline(io.out, report.Baseline)
	}
}

func bench(ctx context.Context, c benchConfig, progress io.Writer) (benchReport, error) {
	// A server given with --nats-url keeps earlier runs' ledger and lanes:
	// each run names its requests and lanes afresh.
	run := strconv.FormatInt(time.Now().UnixMilli(), 36)
	ids := make([]string, c.requests)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%s-%d", run, i)
	}
	window := [2]int64{math.MaxInt64, 0}
	body := func(i int) []byte {
		b, limit := benchRequest(c, ids[i], uint64(i+1), fmt.Sprintf("bench-agent-%s-%d", run, i))
		window = [2]int64{min(window[0], limit), max(window[1], limit)}
		return b
	}
	if c.rate == 0 {
		// All at once: generate first, so the run times only Cairn.
		bodies := make([][]byte, c.requests)
		for i := range bodies {
			bodies[i] = body(i)
		}
		body = func(i int) []byte { b := bodies[i]; bodies[i] = nil; return b }
	}
	dir, err := os.MkdirTemp("", "cairn-bench-")
	if err != nil {
		return benchReport{}, err
	}
	defer os.RemoveAll(dir)
	cfg := demoConfig(dir)
	cfg.harvest.MemoryDir = "" // as serve's default: facts go to the facts bucket only
	cfg.nats.url = c.natsURL
	cfg.processor.Workers = c.workers
	cfg.processor.CommitConcurrency = c.commits
	cfg.wrapSummarizer = func(s engine.Summarizer) engine.Summarizer {
		return &delayed{Summarizer: s, latency: c.modelLatency, spread: c.spread}
	}
	// The run's timeout starts with the generation: a service slow to
	// start still gets a run, whose report covers what arrived.
	info, stop, err := serveInBackground(context.WithoutCancel(ctx), cfg)
	if err != nil {
		return benchReport{}, err
	}
	defer stop()
	nc, err := nats.Connect(info.NATSURL)
	if err != nil {
		return benchReport{}, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	// A vocabulary is decoded on its first use (tens of milliseconds):
	// decode it before the clock starts, so that the CPU per request is the
	// counting's, as in a long-running serve.
	if enc, ok := tokens.Lookup(c.tokenizer); ok {
		enc.Count(nil)
	}
	stopProfile, err := startCPUProfile(c.cpuProfile)
	if err != nil {
		return benchReport{}, err
	}
	fmt.Fprintf(progress, "publishing %d requests ...\n", c.requests)
	report, err := measure(ctx, js, c, ids, body, progress)
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err == nil && c.baseline {
		report.sizes, err = baseline.ReadSizes(ctx, js)
	}
	report.Tokenizer, report.Window = c.tokenizer, window
	return report, err
}

// startCPUProfile starts profiling the process's CPU into path; the
// function it returns stops and closes it. An empty path profiles nothing.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// benchRequest is request id's body and the max_input_tokens its profile
// was given. A tokenizer keeps the window and thresholds of the lane in
// bytes: against the window the engine's fixed reserves then weigh as they
// do in bytes and it makes the same plan (lanegen.RequestOptions.Tokenizer),
// so a run with one and a run without differ only in counting.
func benchRequest(c benchConfig, id string, seed uint64, agent string) ([]byte, int64) {
	req := lanegen.Request(lanegen.RequestOptions{
		RequestID: id,
		Lane:      lanegen.Options{Events: c.events, Seed: seed, RunAgentID: agent},
		Tokenizer: c.tokenizer,
	})
	if c.deadline > 0 {
		at := time.Now().Add(c.deadline).UTC()
		req.DeadlineAt = &at
	}
	return lanegen.Encode(req), *req.ModelProfile.MaxInputTokens
}

func describeTokenizer(name string) string {
	switch _, known := tokens.Lookup(name); {
	case name == "":
		return "no tokenizer named (budgeted in UTF-8 bytes)"
	case known:
		return fmt.Sprintf("tokenizer %s counts (window and thresholds those of the lane in bytes, for the same plan)", name)
	default:
		return fmt.Sprintf("tokenizer %s, unknown to Cairn, estimates (window and thresholds those of the lane in bytes)", name)
	}
}

func formatWindow(w [2]int64) string {
	if w[0] == w[1] {
		return strconv.FormatInt(w[0], 10)
	}
	return fmt.Sprintf("%d–%d", w[0], w[1])
}

// measure publishes every request, at once or at c.rate, and times each
// one's outcome. When the outcomes stop arriving before the run ends (a
// timeout), the report covers those that did, with the rest Missing.
func measure(ctx context.Context, js jetstream.JetStream, c benchConfig, ids []string, body func(int) []byte, progress io.Writer) (benchReport, error) {
	var mu sync.Mutex
	published := make(map[string]time.Time, len(ids))
	latencies := make([]time.Duration, 0, len(ids))
	ended := make([]time.Time, 0, len(ids)) // of the activated outcomes
	arrived := 0
	report := benchReport{Requests: len(ids), Workers: c.workers, ModelLatency: c.modelLatency, LatencySpread: c.spread, Rate: c.rate,
		Commits: consumer.Config{Workers: c.workers, CommitConcurrency: c.commits}.EffectiveCommitConcurrency()}
	rss := newRSSSampler()
	defer rss.stop()

	cpu0, cpuOK := processCPU()
	start := time.Now()
	followCtx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	stopProgress := showProgress(progress, c.progressEvery, "Cairn", len(ids), func() int { mu.Lock(); defer mu.Unlock(); return arrived })
	defer stopProgress()
	harvests := followHarvests(followCtx, js, ids, start)
	followed := make(chan error, 1)
	go func() {
		followed <- events.Follow(followCtx, js, events.FollowOptions{StartTime: &start}, func(ev events.Event) error {
			mu.Lock()
			defer mu.Unlock()
			t0, ok := published[ev.RequestID()]
			if !ok {
				return nil
			}
			delete(published, ev.RequestID())
			arrived++
			if ev.Activated != nil {
				now := time.Now()
				latencies = append(latencies, now.Sub(t0))
				ended = append(ended, now)
			}
			report.count(ev)
			if arrived == len(ids) {
				return errStop
			}
			return nil
		})
	}()
	sent, err := publishEach(ctx, js, c, ids, body, start, func(id string) { mu.Lock(); published[id] = time.Now(); mu.Unlock() })
	if err != nil && ctx.Err() == nil {
		return report, err
	}
	// A timeout while publishing leaves the rest without an outcome, as
	// one while waiting does: both are reported.
	if ferr := <-followed; !errors.Is(ferr, errStop) {
		report.Missing = len(ids) - arrived
		err = fmt.Errorf("waiting for outcomes: %w (%d published, %d of %d outcomes arrived)", ferr, sent, arrived, len(ids))
	}
	report.Elapsed = time.Since(start)
	if cpu1, ok := processCPU(); ok && cpuOK {
		report.CPUSeconds = cpu1 - cpu0
		report.CPUPerRequestMs = math.Round(report.CPUSeconds/float64(len(ids))*1e6) / 1e3
		report.Cores = math.Round(report.CPUSeconds/report.Elapsed.Seconds()*100) / 100
	}
	report.PerSecond = float64(report.Activated) / report.Elapsed.Seconds()
	report.SteadyPerSecond = steadyRate(ended, report.PerSecond)
	slices.Sort(latencies)
	report.P50, report.P99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
	report.P50ms, report.P99ms = float64(report.P50.Microseconds())/1000, float64(report.P99.Microseconds())/1000
	if err == nil {
		err = harvests.wait(ctx, &report)
	}
	report.RSSSamplesMiB, report.Heap = rss.stop()
	return report, err
}

// harvestFollower collects the memory events of a run's harvest jobs: a
// compacted request's job is named by its request id (head_entry_id).
type harvestFollower struct {
	done     chan events.Event // each job's first memory event, at most one per request
	followed chan error
}

func followHarvests(ctx context.Context, js jetstream.JetStream, ids []string, start time.Time) *harvestFollower {
	run := make(map[string]bool, len(ids))
	for _, id := range ids {
		run[id] = true
	}
	h := &harvestFollower{done: make(chan events.Event, len(ids)), followed: make(chan error, 1)}
	go func() {
		h.followed <- events.Follow(ctx, js, events.FollowOptions{Stream: events.StreamMemory, StartTime: &start}, func(ev events.Event) error {
			id := harvestOf(ev)
			if run[id] {
				delete(run, id)
				h.done <- ev
			}
			return nil
		})
	}()
	return h
}

// harvestOf is the request whose harvest job a memory event reports.
func harvestOf(ev events.Event) string {
	switch {
	case ev.MemoryFlushed != nil:
		return ev.MemoryFlushed.HeadEntryID
	case ev.MemoryFailed != nil:
		return ev.MemoryFailed.HeadEntryID
	}
	return ""
}

// wait returns once every compacted request's harvest job has reported,
// counting them into report, or when ctx ends.
func (h *harvestFollower) wait(ctx context.Context, report *benchReport) error {
	outcomesAt := time.Now()
	pending := maps.Clone(report.compacted)
	report.Harvests = len(pending)
	for len(pending) > 0 {
		select {
		case ev := <-h.done:
			id := harvestOf(ev)
			if !pending[id] {
				continue
			}
			delete(pending, id)
			report.HarvestTail = time.Since(outcomesAt)
			if ev.MemoryFlushed != nil {
				report.HarvestsFlushed++
				report.FactsStored += ev.MemoryFlushed.Count
			} else {
				report.HarvestsFailed++
			}
		case err := <-h.followed:
			return fmt.Errorf("following memory events: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("waiting for harvests: %w (%d of %d reported)", ctx.Err(), report.Harvests-len(pending), report.Harvests)
		}
	}
	return nil
}

// publishEach publishes request i's body(i), all at once or at c.rate
// from start, calling sending just before each; it returns how many it
// published.
func publishEach(ctx context.Context, js jetstream.JetStream, c benchConfig, ids []string, body func(int) []byte, start time.Time, sending func(id string)) (int, error) {
	for i := range ids {
		if c.rate > 0 && !pause.For(ctx, time.Until(start.Add(time.Duration(float64(i)/c.rate*float64(time.Second))))) {
			return i, ctx.Err()
		}
		b := body(i)
		sending(ids[i])
		if _, err := events.PublishRaw(ctx, js, ids[i], b, ""); err != nil {
			return i, err
		}
	}
	return len(ids), nil
}

// showProgress writes how many of total outcomes have arrived to w every
// interval, until the returned stop; an interval of 0 writes nothing.
func showProgress(w io.Writer, every time.Duration, loop string, total int, arrived func() int) (stop func()) {
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		start := time.Now()
		for {
			select {
			case <-tick.C:
				fmt.Fprintf(w, "%s: %d of %d outcomes after %s\n", loop, arrived(), total, time.Since(start).Round(time.Second))
			case <-done:
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// steadyRate is the completion rate between the 10th and the 90th
// percentile of completion times, or whole when there are too few.
func steadyRate(ended []time.Time, whole float64) float64 {
	lo, hi := len(ended)/10, len(ended)*9/10
	if hi-lo < 10 || !ended[hi].After(ended[lo]) {
		return whole
	}
	return float64(hi-lo) / ended[hi].Sub(ended[lo]).Seconds()
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// delayed adds a latency to every summarizer call, honouring ctx: latency
// itself, or with a spread, latency - spread/2 plus a share of spread that
// varies deterministically from call to call (mean: latency).
type delayed struct {
	engine.Summarizer
	latency, spread time.Duration
	calls           atomic.Int64
}

// Local reports the inner summarizer's answer when no latency is added;
// with one, delayed stands in for a remote model, whose calls are recorded.
func (d *delayed) Local() bool {
	return d.latency == 0 && d.spread == 0 && consumer.IsLocal(d.Summarizer)
}

func (d *delayed) Summarize(ctx context.Context, p engine.Payload) (engine.Summary, error) {
	if wait := d.wait(d.calls.Add(1)); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return engine.Summary{}, ctx.Err()
		}
	}
	return d.Summarizer.Summarize(ctx, p)
}

// wait is the latency of call n.
func (d *delayed) wait(n int64) time.Duration {
	if d.spread <= 0 {
		return d.latency
	}
	const steps = 100 // 7919 is prime, so n*7919 walks every step
	return d.latency - d.spread/2 + time.Duration(n*7919%steps)*d.spread/(steps-1)
}

// rssSampler reads the process's resident memory and the runtime's memory
// classes once a second.
type rssSampler struct {
	mu      sync.Mutex
	samples []float64
	heap    []heapSample
	done    chan struct{}
	once    sync.Once
}

func newRSSSampler() *rssSampler {
	s := &rssSampler{done: make(chan struct{})}
	s.sample()
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				s.sample()
			case <-s.done:
				return
			}
		}
	}()
	return s
}

func (s *rssSampler) sample() {
	if mib, ok := residentMiB(); ok {
		h := readHeap()
		s.mu.Lock()
		s.samples = append(s.samples, mib)
		s.heap = append(s.heap, h)
		s.mu.Unlock()
	}
}

func (s *rssSampler) stop() ([]float64, []heapSample) {
	s.once.Do(func() { s.sample(); close(s.done) })
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]float64(nil), s.samples...), append([]heapSample(nil), s.heap...)
}

// processCPU reads the process's user + system CPU seconds from /proc
// (Linux only): utime and stime, fields 14 and 15 of /proc/self/stat, in
// clock ticks of 1/100 s.
func processCPU() (float64, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	_, rest, found := strings.Cut(string(b), ") ")
	fields := strings.Fields(rest)
	if !found || len(fields) < 13 {
		return 0, false
	}
	user, err1 := strconv.ParseFloat(fields[11], 64)
	system, err2 := strconv.ParseFloat(fields[12], 64)
	return (user + system) / 100, err1 == nil && err2 == nil
}

// residentMiB reads VmRSS from /proc (Linux only).
func residentMiB() (float64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err == nil
		}
	}
	return 0, false
}

func formatSamples(s []float64) string {
	if len(s) == 0 {
		return "unavailable"
	}
	parts := make([]string, 0, len(s))
	step := max(1, len(s)/12) // at most about a dozen numbers
	for i := 0; i < len(s); i += step {
		parts = append(parts, strconv.FormatFloat(s[i], 'f', 0, 64))
	}
	return strings.Join(parts, " ")
}

// count adds one request's outcome event to the report.
func (r *benchReport) count(ev events.Event) {
	switch {
	case ev.Activated != nil:
		r.Activated++
		if r.Statuses == nil {
			r.Statuses = map[string]int{}
		}
		r.Statuses[ev.Activated.Status]++
		if ev.Activated.Status == events.StatusCompacted {
			if r.compacted == nil {
				r.compacted = map[string]bool{}
			}
			r.compacted[ev.Activated.RequestID] = true
		}
		return
	case ev.Skipped != nil:
		r.Skipped++
		r.outcome("skipped:" + ev.Skipped.Reason)
	case ev.Failed != nil:
		r.Failed++
		r.outcome("failed:" + ev.Failed.Error.Code)
	default:
		r.Failed++
		r.outcome(ev.Kind)
	}
}

func (r *benchReport) outcome(key string) {
	if r.Outcomes == nil {
		r.Outcomes = map[string]int{}
	}
	r.Outcomes[key]++
}

// formatOutcomes lists outcome counts, most frequent first.
func formatOutcomes(counts map[string]int) string {
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}
