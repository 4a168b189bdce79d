package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn/events"
)

// countingSummarizer is extractive that counts its calls, so that a
// benchmark can check that two methods made the same plan.
type countingSummarizer struct {
	extractive
	calls *atomic.Int64
}

func (s countingSummarizer) Summarize(ctx context.Context, p Payload) (Summary, error) {
	s.calls.Add(1)
	return s.extractive.Summarize(ctx, p)
}

// plan is what a compaction decided: a benchmark comparing methods must
// compare the same plan, not a prune against a summary. (How many events
// the tail keeps may differ: events differ in bytes per token.)
type plan struct {
	status       string
	summaryCalls int64
}

func (p plan) String() string {
	return fmt.Sprintf("%s with %d summary calls", p.status, p.summaryCalls)
}

// method is one way of counting a request: tokenizer "" budgets in bytes.
type method struct {
	name, tokenizer string
	warm            bool
}

var (
	methodBytes     = method{name: "bytes"}
	methodO200kCold = method{name: "o200k_cold", tokenizer: "o200k_base"}
	methodO200kWarm = method{name: "o200k_warm", tokenizer: "o200k_base", warm: true}
)

// accountingRun is one request prepared for one method: its window and
// policy scaled to the method's units, and the cache a warm run reuses.
type accountingRun struct {
	req   *Request
	cache *CountCache
	calls atomic.Int64
	plan  plan
	res   *Result
}

func (r *accountingRun) compact(tb testing.TB) {
	res, err := CompactCounting(context.Background(), r.req, countingSummarizer{calls: &r.calls}, fixedNow, r.cache)
	if err != nil {
		tb.Fatal(err)
	}
	r.res = res
}

// newAccountingRun prepares base for m, every token quantity of the
// request (the window and the policy's token thresholds) multiplied by
// scale; the setup call fills a warm cache and records the plan.
func newAccountingRun(tb testing.TB, base *Request, m method, scale float64) *accountingRun {
	req := *base
	req.ModelProfile.Tokenizer = nil
	if m.tokenizer != "" {
		req.ModelProfile.Tokenizer = ptr(m.tokenizer)
	}
	s := func(n int64) int64 { return max(1, int64(math.Round(float64(n)*scale))) }
	req.ModelProfile.MaxInputTokens = ptr(s(*base.ModelProfile.MaxInputTokens))
	req.ModelProfile.MaxOutputTokens = ptr(s(*base.ModelProfile.MaxOutputTokens))
	p := &req.Policy
	for _, n := range []*int64{&p.RecentTailMinTokens, &p.RecentTailMaxTokens, &p.SummaryOutputMinTokens,
		&p.SummaryOutputMaxTokens, &p.MinimumPruneReclaimTokens, &p.MinimumTotalReclaimTokens, &p.MinimumNewTokensBeforeRecompact} {
		*n = s(*n)
	}
	r := &accountingRun{req: &req}
	if m.warm {
		r.cache = NewCountCache(4 * len(req.Events))
	}
	r.compact(tb)
	r.plan = plan{status: r.res.Status, summaryCalls: r.calls.Load()}
	return r
}

// accountingRuns prepares base, whose window is in o200k tokens, for each
// method. A byte is about a third of a token, so in the same window bytes
// would see the lane three times as full and plan other work (a summary
// where o200k prunes): bytes gets the window and thresholds scaled by the
// ratio of its count of the lane to o200k's. Events differ in that ratio,
// so a chunk boundary may still move; then the nearest scale (in 5 %
// steps, no less than 1) that makes o200k's plan is taken. It fails unless every method
// makes the plan o200k makes.
func accountingRuns(tb testing.TB, base *Request, methods ...method) []*accountingRun {
	tokens := newAccountingRun(tb, base, methodO200kCold, 1)
	probe := newAccountingRun(tb, base, methodBytes, 1)
	ratio := float64(probe.res.TokensBefore) / float64(tokens.res.TokensBefore)
	runs := make([]*accountingRun, len(methods))
	for i, m := range methods {
		if m.tokenizer != "" {
			runs[i] = newAccountingRun(tb, base, m, 1)
		} else {
			runs[i] = bytesRun(tb, base, ratio, tokens.plan)
		}
		if runs[i].plan != tokens.plan {
			tb.Fatalf("%s plans %v, o200k_base %v: the benchmark would compare different work", m.name, runs[i].plan, tokens.plan)
		}
	}
	return runs
}

// bytesRun is the bytes run of base at the scale nearest ratio, between 1
// and 1.5 × ratio, that plans want, else at ratio.
func bytesRun(tb testing.TB, base *Request, ratio float64, want plan) *accountingRun {
	for k := 0; ; k++ {
		step := ratio * 0.05 * float64(k)
		up, down := ratio+step, ratio-step
		if up > 1.5*ratio && down < 1 {
			return newAccountingRun(tb, base, methodBytes, ratio)
		}
		for _, scale := range []float64{up, down} {
			if scale < 1 || scale > 1.5*ratio {
				continue
			}
			if r := newAccountingRun(tb, base, methodBytes, scale); r.plan == want {
				return r
			}
		}
	}
}

// benchmarkAccounting compacts the prepared request over and over, as the
// processor does when a lane is resent with each request, and reports the
// process CPU per compaction.
func benchmarkAccounting(b *testing.B, r *accountingRun) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPUTime()
	for b.Loop() {
		r.compact(b)
	}
	b.ReportMetric(float64(processCPUTime()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(r.res.TokensBefore), "tokens_before")
	b.ReportMetric(float64(r.plan.summaryCalls), "summary_calls")
	b.ReportMetric(float64(r.res.RetainedEventCount), "retained")
}

// accountingLane is a lane of the accounting benchmarks.
type accountingLane struct {
	name string
	req  func(testing.TB) *Request
}

var accountingLanes = []accountingLane{
	{"example", func(tb testing.TB) *Request { return loadExample(tb, "coding-agent-lane.json") }},
	{"coding1000", func(tb testing.TB) *Request {
		return laneRequest(tb, "0192b6e4-0000-7000-8000-00000000b000", codingLane(tb, 1_000, 25), 200_000)
	}},
	{"coding10000", func(tb testing.TB) *Request {
		return laneRequest(tb, "0192b6e4-0000-7000-8000-00000000b000", codingLane(tb, 10_000, 25), 2_000_000)
	}},
	{"processor24", processorLane},
	{"lanegen100", func(tb testing.TB) *Request { return generatedLane(tb, 100, 1) }},
	{"lanegen1000", func(tb testing.TB) *Request { return generatedLane(tb, 1_000, 1) }},
}

// processorLane is the request of the processor benchmark
// (internal/consumer's engineBody): 24 events of about 1.1 KB of prose,
// a 40 000-token window and a small policy.
func processorLane(tb testing.TB) *Request {
	laneEvents := make([]events.InputEvent, 24)
	for i := range laneEvents {
		role := []string{events.RoleUser, events.RoleAssistant}[i%2]
		content := fmt.Sprintf("eng-0 turn %d: we decided the deploy must use blue-green releases; ", i+1) +
			strings.Repeat(fmt.Sprintf("detail %d of the investigation into the flaky integration test. ", i), 16)
		laneEvents[i] = event(tb, i+1, role, content, func(e *events.InputEvent) {
			e.TokenCount = nil
			e.RunAgentID = "agent-coder"
			e.Provenance = map[string]any{"origin": "direct_user"}
		})
	}
	req := laneRequest(tb, "0192b6e4-0000-7000-8000-00000000b024", laneEvents, 40_000)
	req.ModelProfile.MaxOutputTokens = ptr(int64(8_192))
	p := &req.Policy
	p.RecentTailMinTokens, p.RecentTailMaxTokens = 1_000, 2_000
	p.SummaryOutputMinTokens, p.SummaryOutputMaxTokens = 1_024, 4_096
	p.MinimumTotalReclaimTokens, p.MinimumPruneReclaimTokens = 1_000, 1_000
	return req
}

// BenchmarkAccounting runs the engine on the example lane, the engine's
// coding lanes of 1 000 and 10 000 events, the processor benchmark's
// 24-event lane and lanegen lanes (`processor bench`'s) with bytes and
// with o200k_base counted cold and warm, each method with the window that
// makes it plan what bytes plans (accountingRuns).
func BenchmarkAccounting(b *testing.B) {
	methods := []method{methodBytes, methodO200kCold, methodO200kWarm}
	for _, lane := range accountingLanes {
		runs := accountingRuns(b, lane.req(b), methods...)
		for i, m := range methods {
			b.Run(lane.name+"/"+m.name, func(b *testing.B) { benchmarkAccounting(b, runs[i]) })
		}
	}
}

// cpuOf is the process CPU one call of f takes.
func cpuOf(f func()) int64 {
	t := processCPUTime()
	f()
	return processCPUTime() - t
}

// BenchmarkAccountingOverhead alternates a compaction counted in bytes
// with the same plan counted cold with o200k_base, call by call, so that
// both see the same machine load, and reports the CPU per request of each
// and o200k's overhead (o200k ÷ bytes − 1).
func BenchmarkAccountingOverhead(b *testing.B) {
	for _, lane := range accountingLanes {
		if lane.name == "coding10000" {
			continue // BenchmarkAccountingScaling's
		}
		runs := accountingRuns(b, lane.req(b), methodBytes, methodO200kCold)
		b.Run(lane.name, func(b *testing.B) {
			var cpu [2]int64
			for b.Loop() {
				for i, r := range runs {
					cpu[i] += cpuOf(func() { r.compact(b) })
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(cpu[0])/n, "bytes-cpu-ns/req")
			b.ReportMetric(float64(cpu[1])/n, "o200k-cpu-ns/req")
			b.ReportMetric(100*(float64(cpu[1])/float64(cpu[0])-1), "overhead-%")
		})
	}
}

// BenchmarkAccountingScaling alternates the 1 000- and 10 000-event coding
// lanes, call by call, and reports the CPU ratio of the long lane to the
// short one for each method (the goal is at most 12).
func BenchmarkAccountingScaling(b *testing.B) {
	short := laneRequest(b, "0192b6e4-0000-7000-8000-00000000b000", codingLane(b, 1_000, 25), 200_000)
	long := laneRequest(b, "0192b6e4-0000-7000-8000-00000000b000", codingLane(b, 10_000, 25), 2_000_000)
	for _, m := range []method{methodBytes, methodO200kCold, methodO200kWarm} {
		runs := [2]*accountingRun{accountingRuns(b, short, m)[0], accountingRuns(b, long, m)[0]}
		b.Run(m.name, func(b *testing.B) {
			var cpu [2]int64
			for b.Loop() {
				for i, r := range runs {
					cpu[i] += cpuOf(func() { r.compact(b) })
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(cpu[0])/n, "1k-cpu-ns/req")
			b.ReportMetric(float64(cpu[1])/n, "10k-cpu-ns/req")
			b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "10k/1k")
		})
	}
}
