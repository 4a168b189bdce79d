package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/pause"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
)

func TestCommitGateAdmitsInArrivalOrder(t *testing.T) {
	g := newCommitGate(1)
	ctx := context.Background()
	if err := g.enter(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 5
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := g.enter(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			g.leave()
		})
		// The next one arrives only once this one queues.
		testenv.Eventually(t, waitLong, func() error {
			if q := g.queued(); q != i+1 {
				return fmt.Errorf("%d queued, want %d", q, i+1)
			}
			return nil
		})
	}
	g.leave()
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("admitted in order %v, want arrival order", order)
		}
	}
}

func TestCommitGateWaitEndsWithContext(t *testing.T) {
	g := newCommitGate(1)
	if err := g.enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.enter(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("enter on a full gate with an ended context: %v", err)
	}
	if g.queued() != 0 {
		t.Fatalf("%d still queued", g.queued())
	}
}

func TestCommitConcurrencyBounds(t *testing.T) {
	for _, c := range []struct {
		commits int
		ok      bool
	}{{0, true}, {1, true}, {4, true}, {-1, false}, {5, false}} {
		cfg := testConfig()
		cfg.CommitConcurrency = c.commits
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("CommitConcurrency %d (Workers %d): %v", c.commits, cfg.Workers, err)
		}
	}
	cfg := testConfig()
	if got := cfg.EffectiveCommitConcurrency(); got < 1 || got > cfg.Workers {
		t.Fatalf("default commit concurrency %d, want 1..%d", got, cfg.Workers)
	}
}

// Four requests call the model at once (the gate never bounds model calls);
// what follows each call runs one at a time with CommitConcurrency 1, and
// all four at once with 4.
func TestCommitsAreBoundedAndModelCallsAreNot(t *testing.T) {
	for _, commits := range []int{1, 4} {
		t.Run(fmt.Sprintf("commit concurrency %d", commits), func(t *testing.T) {
			e := singleEnv(t)
			cfg := testConfig()
			cfg.Workers, cfg.CommitConcurrency = 4, commits
			cfg.AttemptTimeout = waitLong // the barrier waits for the slowest of the four
			cfg.AckWait = waitLong
			probe := &commitProbe{calls: 4}
			model := &barrierSummarizer{n: 4}
			r := e.start(t, cfg, probe, model)
			probe.proc.Store(r.p)
			ids := make([]string, 4)
			for i := range ids {
				ids[i] = fmt.Sprintf("gate-%d-%d", commits, i)
				spec := reqSpec{id: ids[i], lane: ids[i]}
				e.publish(t, e.body(spec), spec.id)
			}
			for _, id := range ids {
				if ev := onlyEvent(t, e.awaitOutcome(t, id)); ev.Subject != topology.SubjectActivated {
					t.Fatalf("%s: %s %v", id, ev.Subject, ev.Body)
				}
			}
			if calls := model.inner.calls.Load(); calls != 4 {
				t.Fatalf("%d model calls answered, want 4", calls)
			}
			if got := probe.max.Load(); got != int64(commits) {
				t.Fatalf("%d requests committed at once, want %d", got, commits)
			}
		})
	}
}

// barrierSummarizer answers once n calls have been running at the same
// time.
type barrierSummarizer struct {
	n       int64
	running atomic.Int64
	open    atomic.Bool
	inner   testSummarizer
}

func (s *barrierSummarizer) Summarize(ctx context.Context, p engine.Payload) (engine.Summary, error) {
	defer s.running.Add(-1)
	if s.running.Add(1) >= s.n {
		s.open.Store(true)
	}
	if err := pollUntil(ctx, s.open.Load); err != nil {
		return engine.Summary{}, err
	}
	return s.inner.Summarize(ctx, p)
}

// commitProbe runs testCompactor and then, inside the commit slot, counts
// how many requests are there at once. It holds its slot until every other
// request is there too (the slots allow it) or queues for a slot (they do
// not), so the count is the bound.
type commitProbe struct {
	calls  int64
	proc   atomic.Pointer[Processor]
	active atomic.Int64
	done   atomic.Int64
	max    atomic.Int64
}

func (c *commitProbe) Compact(ctx context.Context, in Input, s engine.Summarizer, now time.Time) (*Result, error) {
	res, err := testCompactor{}.Compact(ctx, in, s, now)
	if err != nil {
		return nil, err
	}
	n := c.active.Add(1)
	defer c.active.Add(-1)
	for old := c.max.Load(); n > old && !c.max.CompareAndSwap(old, n); old = c.max.Load() {
	}
	everyOneSeen := func() bool {
		here, queued := c.active.Load(), int64(c.proc.Load().commits.queued())
		return here+queued+c.done.Load() >= c.calls
	}
	if err := pollUntil(ctx, everyOneSeen); err != nil {
		return nil, err
	}
	c.done.Add(1)
	return res, nil
}

// pollUntil checks cond every millisecond until it holds or ctx ends.
func pollUntil(ctx context.Context, cond func() bool) error {
	for !cond() {
		if !pause.For(ctx, time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}
