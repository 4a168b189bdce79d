package consumer

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// commitGate bounds how many requests run their commit at once and admits
// them first come, first served.
//
// Why: requests pulled together call the model together and, with similar
// model latencies, come back together. Run side by side, their commits share
// the CPU evenly and all finish late, together; the next requests are then
// pulled together again, and the platoon repeats every cycle. Admitted in
// order, the first commits finish early, their workers pull again at once,
// and the requests spread out over the cycle instead.
type commitGate struct {
	slots   chan struct{}
	waiting atomic.Int64
}

func newCommitGate(n int) *commitGate { return &commitGate{slots: make(chan struct{}, n)} }

// enter waits for a slot, in arrival order (blocked channel sends are served
// in order), or until ctx ends.
func (g *commitGate) enter(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *commitGate) leave() { <-g.slots }

// queued is how many requests wait for a slot.
func (g *commitGate) queued() int { return int(g.waiting.Load()) }

// defaultCommits is two commits per CPU: one computing while another waits
// on a round trip to the server.
func defaultCommits(workers int) int {
	return min(2*runtime.GOMAXPROCS(0), workers)
}

// enterCommit takes d's commit slot unless it holds one already, recording
// the wait as the commit_wait stage.
func (p *Processor) enterCommit(ctx context.Context, d *delivery) error {
	if d.slot != nil {
		return nil
	}
	t0 := time.Now()
	if err := p.commits.enter(ctx); err != nil {
		return err
	}
	p.metrics.Stage("commit_wait", time.Since(t0))
	d.slot = p.commits
	return nil
}

// leaveCommit returns d's commit slot, if it holds one.
func (p *Processor) leaveCommit(d *delivery) {
	if d.slot != nil {
		d.slot.leave()
		d.slot = nil
	}
}
