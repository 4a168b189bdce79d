package consumer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
)

// outcomeClock records when each compaction event was seen.
type outcomeClock struct {
	mu    sync.Mutex
	times []time.Time
}

func (c *outcomeClock) add(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.times = append(c.times, t)
}

func (c *outcomeClock) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.times)
}

// longestGap is the longest time between two outcomes in a row, and
// between the last one and now.
func (c *outcomeClock) longestGap(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var gap time.Duration
	for i := 1; i < len(c.times); i++ {
		gap = max(gap, c.times[i].Sub(c.times[i-1]))
	}
	if n := len(c.times); n > 0 {
		gap = max(gap, now.Sub(c.times[n-1]))
	}
	return gap
}

// steadyRequests publishes a request every interval, up to limit, until
// the test ends.
func (e *env) steadyRequests(t *testing.T, interval time.Duration, limit int) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := 0; i < limit; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			spec := reqSpec{id: fmt.Sprintf("steady-%d", i), lane: fmt.Sprintf("steady-%d", i)}
			msg := nats.NewMsg(topology.SubjectRequested)
			msg.Data = spec.testBody()
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			_, _ = e.js.PublishMsg(pctx, msg)
			pcancel()
		}
	}()
}

// A processor killed while it works leaves its unsettled requests pending
// on the consumer until their AckWait runs out. Those must not take every
// slot of MaxAckPending: the restarted processor has to receive new
// requests at once, through a loop of kills, with Cairn's default
// MaxAckPending. AckWait is longer than the run, so that every kill's
// orphans are still pending at its end, as after kills within one AckWait.
func TestKillLoopKeepsOutcomesFlowing(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a processor for about a minute at most")
	}
	const (
		kills  = 12
		maxGap = 10 * time.Second
	)
	e := singleEnv(t)
	clock := &outcomeClock{}
	sub, err := e.js.Conn().Subscribe("conversation.compact.*", func(m *nats.Msg) {
		if m.Subject != topology.SubjectRequested {
			clock.add(time.Now())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })

	cfg := DefaultConfig() // MaxAckPending as Cairn runs it
	cfg.AckWait = 2 * time.Minute
	cfg.Workers = 4
	cfg.PullWait = 500 * time.Millisecond
	cfg.DrainTimeout = 2 * time.Second
	cfg.Relay.RetryInterval = 50 * time.Millisecond
	sum := &testSummarizer{delay: 50 * time.Millisecond}
	e.steadyRequests(t, 20*time.Millisecond, 5000)

	// Each run works until it produced a few outcomes, then is killed at
	// its next commit step with requests in flight.
	for k := 0; k <= kills; k++ {
		var kill atomic.Bool
		run := cfg
		run.crashAt = func(string) bool { return kill.Load() }
		r := e.start(t, run, nil, sum)
		from := clock.count()
		testenv.Eventually(t, 90*time.Second, func() error {
			if clock.count() < from+3 {
				return fmt.Errorf("run %d: %d outcomes since its start", k, clock.count()-from)
			}
			return nil
		})
		if gap := clock.longestGap(time.Now()); gap >= maxGap {
			t.Fatalf("after %d kills: %s without an outcome (want < %s)", k, gap.Round(100*time.Millisecond), maxGap)
		}
		if k == kills {
			break // the last run is not killed
		}
		kill.Store(true)
		if err := r.wait(t); err == nil {
			t.Fatalf("run %d was not killed", k)
		}
	}
	info, err := e.consumerInfo(t)
	if err != nil {
		t.Fatal(err)
	}
	// The orphans of the kills (still pending: their AckWait has not run
	// out) are more than the workers: with MaxAckPending equal to the
	// workers, the restarted processor would have received nothing.
	if int(info.NumAckPending) <= cfg.Workers {
		t.Fatalf("only %d requests left pending by %d kills; the test killed no work in flight", info.NumAckPending, kills)
	}
	t.Logf("longest gap without an outcome through %d kills: %s (%d outcomes; consumer MaxAckPending %d, AckWait %s, %d pending)",
		kills, clock.longestGap(time.Now()).Round(10*time.Millisecond), clock.count(),
		info.Config.MaxAckPending, info.Config.AckWait, info.NumAckPending)
}
