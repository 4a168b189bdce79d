package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/baseline"
	"github.com/cairnhq/cairn/internal/natsrv"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// loopFigures are what one loop, Cairn's or the baseline's, measured.
type loopFigures struct {
	// PerSecond is activated requests ÷ time from the first publish to
	// the last outcome.
	PerSecond       float64 `json:"activated_per_second"`
	CPUPerRequestMs float64 `json:"cpu_per_request_ms"`
	Cores           float64 `json:"cores"`
}

// benchPair is one Cairn run and the baseline run after it.
type benchPair struct {
	Cairn    loopFigures `json:"cairn"`
	Baseline loopFigures `json:"baseline"`
	// Ratio is Cairn's rate ÷ the baseline's, CPURatio Cairn's CPU per
	// request ÷ the baseline's.
	Ratio    float64 `json:"ratio"`
	CPURatio float64 `json:"cpu_ratio"`
	// Sizes are what Cairn wrote in its run, and the baseline then.
	Sizes baseline.Sizes `json:"sizes"`
	// Failed, Missing and Outcomes are the Cairn run's, as in benchReport.
	Failed   int            `json:"failed"`
	Missing  int            `json:"missing,omitempty"`
	Outcomes map[string]int `json:"outcomes,omitempty"`
}

// baselineReport compares Cairn with the baseline loop over alternating
// pairs of runs. The headline figures are medians of the pairs' ratios:
// each pair's two runs share the machine's conditions of their moment.
type baselineReport struct {
	Workers  int     `json:"workers"`
	Ratio    float64 `json:"ratio"`
	RatioMin float64 `json:"ratio_min"`
	RatioMax float64 `json:"ratio_max"`
	CPURatio float64 `json:"cpu_ratio"`
	// Cairn and Baseline are each loop's medians over the pairs.
	Cairn    loopFigures `json:"cairn"`
	Baseline loopFigures `json:"baseline"`
	Pairs    []benchPair `json:"pairs"`
}

// compareWithBaseline runs the baseline after first, Cairn's run, and then
// the further pairs c asks for, each loop on a fresh server.
func compareWithBaseline(ctx context.Context, c benchConfig, first benchReport, progress io.Writer) (*baselineReport, error) {
	r := &baselineReport{Workers: c.baseWorkers}
	cairn := first
	for pair := range c.pairs {
		if pair > 0 {
			var err error
			if cairn, err = bench(ctx, c, progress); err != nil {
				return r, fmt.Errorf("pair %d: %w", pair+1, err)
			}
		}
		fmt.Fprintf(progress, "baseline, pair %d of %d ...\n", pair+1, c.pairs)
		base, err := runBaseline(ctx, c, cairn.sizes, progress)
		if err != nil {
			return r, fmt.Errorf("pair %d: %w", pair+1, err)
		}
		r.add(cairn, base)
	}
	r.summarize()
	return r, nil
}

func (r *baselineReport) add(cairn benchReport, base loopFigures) {
	c := loopFigures{PerSecond: cairn.PerSecond, CPUPerRequestMs: cairn.CPUPerRequestMs, Cores: cairn.Cores}
	p := benchPair{Cairn: c, Baseline: base, Sizes: cairn.sizes, Failed: cairn.Failed, Missing: cairn.Missing, Outcomes: cairn.Outcomes}
	p.Ratio = round3(c.PerSecond / base.PerSecond)
	if base.CPUPerRequestMs > 0 {
		p.CPURatio = round3(c.CPUPerRequestMs / base.CPUPerRequestMs)
	}
	r.Pairs = append(r.Pairs, p)
}

func (r *baselineReport) summarize() {
	of := func(f func(benchPair) float64) []float64 {
		xs := make([]float64, len(r.Pairs))
		for i, p := range r.Pairs {
			xs[i] = f(p)
		}
		return xs
	}
	ratios := of(func(p benchPair) float64 { return p.Ratio })
	r.Ratio, r.RatioMin, r.RatioMax = baseline.Median(ratios), slices.Min(ratios), slices.Max(ratios)
	r.CPURatio = baseline.Median(of(func(p benchPair) float64 { return p.CPURatio }))
	medians := func(f func(benchPair) loopFigures) loopFigures {
		return loopFigures{
			PerSecond:       baseline.Median(of(func(p benchPair) float64 { return f(p).PerSecond })),
			CPUPerRequestMs: baseline.Median(of(func(p benchPair) float64 { return f(p).CPUPerRequestMs })),
			Cores:           baseline.Median(of(func(p benchPair) float64 { return f(p).Cores })),
		}
	}
	r.Cairn = medians(func(p benchPair) loopFigures { return p.Cairn })
	r.Baseline = medians(func(p benchPair) loopFigures { return p.Baseline })
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// runBaseline runs the baseline loop on a fresh embedded server, which it
// stops before returning, with as many requests as c, generated as Cairn's
// were. As in Cairn's run, the loop connects in-process and the requests
// are published over TCP from a connection of their own.
func runBaseline(ctx context.Context, c benchConfig, sizes baseline.Sizes, progress io.Writer) (loopFigures, error) {
	dir, err := os.MkdirTemp("", "cairn-bench-baseline-")
	if err != nil {
		return loopFigures{}, err
	}
	defer os.RemoveAll(dir)
	srv, err := natsrv.Start(natsrv.Config{DataDir: dir, Listen: "127.0.0.1:-1", ReadyTimeout: 15 * time.Second})
	if err != nil {
		return loopFigures{}, err
	}
	defer srv.Shutdown()
	lc, err := srv.Connect()
	if err != nil {
		return loopFigures{}, err
	}
	defer lc.Close()
	ljs, _ := jetstream.New(lc)
	run := "bench-" + strconv.FormatInt(time.Now().UnixMilli(), 36) + "-"
	headKey := func(id string) string { return "lane.bench-agent-" + strings.TrimPrefix(id, "bench-") }
	loop, err := baseline.Start(ctx, ljs, baseline.Options{Workers: c.baseWorkers, Sizes: sizes, HeadKey: headKey})
	if err != nil {
		return loopFigures{}, err
	}
	ids, bodies := make([]string, c.requests), make([][]byte, c.requests)
	for i := range ids {
		ids[i] = run + strconv.Itoa(i)
		bodies[i], _ = benchRequest(c, ids[i], uint64(i+1), headKey(ids[i])[len("lane."):])
	}
	figures, err := timeBaseline(ctx, c, srv.ClientURL(), ids, bodies, progress)
	if lerr := loop.Stop(); err == nil && lerr != nil {
		err = fmt.Errorf("baseline loop: %w", lerr)
	}
	return figures, err
}

// timeBaseline publishes bodies to the server at url and times them until
// each request's activated event has arrived.
func timeBaseline(ctx context.Context, c benchConfig, url string, ids []string, bodies [][]byte, progress io.Writer) (loopFigures, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return loopFigures{}, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	var mu sync.Mutex
	pending := make(map[string]bool, len(ids))
	for _, id := range ids {
		pending[id] = true
	}
	all := make(chan struct{})
	// The loop's events are not JSON, only of the right size: they are
	// told apart by their event id, as Cairn's are.
	sub, err := nc.Subscribe(topology.SubjectActivated, func(m *nats.Msg) {
		id, _ := strings.CutSuffix(m.Header.Get(nats.MsgIdHdr), ":"+events.KindActivated)
		mu.Lock()
		defer mu.Unlock()
		if pending[id] {
			delete(pending, id)
			if len(pending) == 0 {
				close(all)
			}
		}
	})
	if err != nil {
		return loopFigures{}, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		return loopFigures{}, err
	}
	arrived := func() int { mu.Lock(); defer mu.Unlock(); return len(ids) - len(pending) }
	stopProgress := showProgress(progress, c.progressEvery, "baseline", len(ids), arrived)
	defer stopProgress()
	cpu0, cpuOK := processCPU()
	start := time.Now()
	body := func(i int) []byte { b := bodies[i]; bodies[i] = nil; return b }
	if _, err := publishEach(ctx, js, c, ids, body, start, func(string) {}); err != nil {
		return loopFigures{}, err
	}
	select {
	case <-all:
	case <-ctx.Done():
		return loopFigures{}, fmt.Errorf("baseline: waiting for its events: %w (%d of %d arrived)", ctx.Err(), arrived(), len(ids))
	}
	elapsed := time.Since(start)
	f := loopFigures{PerSecond: float64(len(ids)) / elapsed.Seconds()}
	if cpu1, ok := processCPU(); ok && cpuOK {
		f.CPUPerRequestMs = math.Round((cpu1-cpu0)/float64(len(ids))*1e6) / 1e3
		f.Cores = math.Round((cpu1-cpu0)/elapsed.Seconds()*100) / 100
	}
	return f, nil
}

func printBaseline(out io.Writer, r *baselineReport) {
	fmt.Fprintf(out, "  baseline: a loop doing only the JetStream work a request needs (internal/baseline), %d workers, the sizes Cairn wrote, a fresh server per loop; %d pair(s), Cairn first\n", r.Workers, len(r.Pairs))
	for i, p := range r.Pairs {
		fmt.Fprintf(out, "    pair %d: Cairn %s; baseline %s; ratio %.3f, CPU ratio %.2f (head %d B, checkpoint %d B, activated %d B)\n",
			i+1, formatLoop(p.Cairn), formatLoop(p.Baseline), p.Ratio, p.CPURatio, p.Sizes.Head, p.Sizes.Checkpoint, p.Sizes.Activated)
	}
	fmt.Fprintf(out, "    median of the pairs' ratios: throughput %.3f (%.3f–%.3f), CPU per request %.2f; medians: Cairn %s, baseline %s\n",
		r.Ratio, r.RatioMin, r.RatioMax, r.CPURatio, formatLoop(r.Cairn), formatLoop(r.Baseline))
}

func formatLoop(f loopFigures) string {
	return fmt.Sprintf("%.1f activated/s, %.3f ms CPU/request, %.2f cores", f.PerSecond, f.CPUPerRequestMs, f.Cores)
}

// failureLine names the requests that failed or had no outcome in any of
// the report's Cairn runs, with their codes; "" when there are none.
// Skipped requests are Cairn's answer, not failures.
func failureLine(r benchReport) string {
	runs := []benchPair{{Failed: r.Failed, Missing: r.Missing, Outcomes: r.Outcomes}}
	if r.Baseline != nil && len(r.Baseline.Pairs) > 1 {
		runs = append(runs, r.Baseline.Pairs[1:]...)
	}
	failed, missing, codes := 0, 0, map[string]int{}
	for _, run := range runs {
		failed, missing = failed+run.Failed, missing+run.Missing
		for k, n := range run.Outcomes {
			if !strings.HasPrefix(k, "skipped:") {
				codes[k] += n
			}
		}
	}
	if failed+missing == 0 {
		return ""
	}
	if missing > 0 {
		codes["missing at the timeout"] = missing
	}
	return fmt.Sprintf("%d of %d requests failed (%s)", failed+missing, r.Requests*len(runs), formatOutcomes(codes))
}
