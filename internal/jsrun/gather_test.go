package jsrun

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
)

// gatherFixture runs 8 workers over a backlog of 40 jobs whose handlers
// each wait for a release, and counts the pull requests the runner sends.
func gatherFixture(t *testing.T, busy bool) (release chan struct{}, started, pulls *atomic.Int32) {
	t.Helper()
	f := newFixture(t, true)
	f.cfg.Workers, f.cfg.Gather, f.cfg.PullWait = 8, 5*time.Second, time.Second
	f.cfg.Busy = func() bool { return busy }
	pulls, started = new(atomic.Int32), new(atomic.Int32)
	tap := f.srv.Conn(t)
	sub, err := tap.Subscribe("$JS.API.CONSUMER.MSG.NEXT."+testStream+"."+testDurable, func(*nats.Msg) { pulls.Add(1) })
	if err == nil {
		err = tap.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	for i := range 40 {
		f.publish(t, fmt.Sprint("job-", i))
	}
	release = make(chan struct{})
	f.start(t, func(ctx context.Context, msg Msg) Decision {
		started.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return Decision{Action: Ack}
	})
	t.Cleanup(func() { close(release) })
	return release, started, pulls
}

func awaitStarted(t *testing.T, started *atomic.Int32, want int32, within time.Duration) {
	t.Helper()
	testenv.Eventually(t, within, func() error {
		if n := started.Load(); n != want {
			return fmt.Errorf("%d handlers started, want %d", n, want)
		}
		return nil
	})
}

// Under a backlog, while Busy says the handlers have more work than they
// can run, a pull waits for half the workers to come free: freeing the
// workers one by one costs a pull per four jobs, not one per job.
func TestGathersFreeWorkersUnderABacklogWhenBusy(t *testing.T) {
	release, started, pulls := gatherFixture(t, true)
	awaitStarted(t, started, 8, 10*time.Second)
	for range 32 {
		release <- struct{}{}
	}
	awaitStarted(t, started, 40, 10*time.Second)
	if n := pulls.Load(); n > 12 {
		t.Fatalf("%d pulls for 40 jobs freed one by one; gathering should need about 9", n)
	}
}

// When the handlers are not busy, a free worker pulls at once.
func TestPullsAtOnceWhenNotBusy(t *testing.T) {
	release, started, _ := gatherFixture(t, false)
	awaitStarted(t, started, 8, 10*time.Second)
	release <- struct{}{}
	// Well before Gather's 5 s: the freed worker did not wait for others.
	awaitStarted(t, started, 9, 2*time.Second)
}
