package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/lanegen"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	// killLoopLanded is how many kills must find requests delivered to the
	// process and not settled; killLoopMaxKills bounds the kills it takes.
	killLoopLanded   = 10
	killLoopMaxKills = 20
	// killLoopMaxGap bounds the wall-clock time without any outcome.
	killLoopMaxGap = 10 * time.Second
	// killLoopAckWait is above killLoopMaxGap on purpose: requests a killed
	// process held come back only after it, so a restarted process that
	// received nothing until then (MaxAckPending equal to the workers) shows
	// as a gap over the limit. It is above the 10 s default for that reason
	// alone, and short enough to keep the run short, as the last kill's
	// requests are waited for.
	killLoopAckWait = 20 * time.Second
	// killLoopBudget bounds the whole run.
	killLoopBudget = 85 * time.Second
	// killLoopPublishEvery paces the steady stream of requests.
	killLoopPublishEvery = 40 * time.Millisecond
)

// TestKillLoopAgainstAServer runs `processor serve` against a separate
// server and kills it with SIGKILL, then restarts it, again and again while
// requests it has not answered yet are in the stream, and finally lets it
// drain. Every request must end with exactly one outcome event, and the
// outcomes must never stop for killLoopMaxGap.
func TestKillLoopAgainstAServer(t *testing.T) {
	if testing.Short() {
		t.Skip("kill loop of the processor binary is not run in -short mode")
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), killLoopBudget)
	defer cancel()
	srv := testenv.NATS(t, testenv.Options{})
	js := srv.JetStream(t)
	testenv.Stores(t, js, 1)
	rec := newOutcomeRecord()
	followed := rec.follow(ctx, js)
	pub := startPublisher(ctx, "kill", killLoopPublishEvery, rec, func(ctx context.Context, id string, body []byte) error {
		_, err := events.PublishRaw(ctx, js, id, body, "")
		return err
	})
	args := []string{"--nats-url", srv.URL(), "--workers", "4", "--ack-wait", killLoopAckWait.String()}

	var kills []time.Time
	var orphaned orphanLedger
	landed, orphans := 0, 0
	for len(kills) < killLoopMaxKills && landed < killLoopLanded {
		svc := startServe(t, args...)
		// Some outcomes first, so that the kill hits a process at work; a
		// different number each time, so that it hits it at different points.
		from, k := rec.outcomeCount(), len(kills)
		waitFor(ctx, t, func() error {
			if n := rec.outcomeCount() - from; n < 3+k%5 {
				return fmt.Errorf("%d outcomes since start %d", n, k+1)
			}
			if ackPending(ctx, js) <= orphaned.waiting(time.Now()) {
				return fmt.Errorf("serve %d holds no request", k+1)
			}
			return nil
		})
		if err := svc.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-svc.done
		now := time.Now()
		kills = append(kills, now)
		// What is unacknowledged beyond the earlier kills' orphans still
		// waiting for their AckWait was delivered to the dead process.
		if held := ackPending(ctx, js) - orphaned.waiting(now); held > 0 {
			landed++
			orphans += held
			orphaned.add(now, held)
		}
	}
	startServe(t, args...)

	// The stream goes on until the requests the last process left behind
	// have come back, so that a gap measures a stall and not an idle drain.
	waitFor(ctx, t, func() error {
		if n := rec.unanswered(kills[len(kills)-1]); n > 0 {
			return fmt.Errorf("%d requests from before the last kill have no outcome", n)
		}
		return nil
	})
	if err := pub.stop(); err != nil {
		t.Fatal(err)
	}
	waitDrained(ctx, t, js, rec)
	cancel()
	<-followed

	rec.check(t)
	gap := rec.longestGap()
	t.Logf("kills %d, on in-flight work %d (%d requests held by the killed processes), requests %d, outcomes %d %v, longest gap without an outcome %s, last kill at %s, run %s",
		len(kills), landed, orphans, rec.requestCount(), rec.outcomeCount(), rec.kindCounts(), gap.Round(time.Millisecond), kills[len(kills)-1].Sub(began).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	if landed < killLoopLanded {
		t.Errorf("%d of %d kills landed on in-flight work, want at least %d", landed, len(kills), killLoopLanded)
	}
	if gap >= killLoopMaxGap {
		t.Errorf("longest gap without an outcome %s, want < %s", gap, killLoopMaxGap)
	}
}

// orphanLedger remembers how many requests each kill left unacknowledged.
// They stay pending until their AckWait ends, and are then delivered to
// the process running at that time: a count of pending requests says that
// process holds some only beyond the orphans still waiting.
type orphanLedger []struct {
	at   time.Time
	held int
}

func (l *orphanLedger) add(at time.Time, held int) {
	*l = append(*l, struct {
		at   time.Time
		held int
	}{at, held})
}

// waiting is how many orphans have not reached their AckWait at now.
func (l orphanLedger) waiting(now time.Time) int {
	n := 0
	for _, o := range l {
		if now.Sub(o.at) < killLoopAckWait {
			n += o.held
		}
	}
	return n
}

// waitFor polls f until it returns nil within the test's budget.
func waitFor(ctx context.Context, t *testing.T, f func() error) {
	t.Helper()
	deadline, _ := ctx.Deadline()
	testenv.Eventually(t, time.Until(deadline), f)
}

// ackPending is how many requests the processor's consumer has delivered
// and not had settled, or 0 when its info cannot be read.
func ackPending(ctx context.Context, js jetstream.JetStream) int {
	c, err := js.Consumer(ctx, topology.StreamRequests, topology.ConsumerProcessor)
	if err != nil {
		return 0
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0
	}
	return info.NumAckPending
}

// waitDrained waits until the processor's consumer has nothing pending or
// unacknowledged and the record has read the events stream up to its end,
// so that a late double would be seen.
func waitDrained(ctx context.Context, t *testing.T, js jetstream.JetStream, rec *outcomeRecord) {
	t.Helper()
	waitFor(ctx, t, func() error {
		if n := rec.unanswered(time.Now()); n > 0 {
			return fmt.Errorf("%d requests have no outcome", n)
		}
		c, err := js.Consumer(ctx, topology.StreamRequests, topology.ConsumerProcessor)
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending > 0 || info.NumAckPending > 0 {
			return fmt.Errorf("processor consumer: %d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
		}
		st, err := js.Stream(ctx, topology.StreamEvents)
		if err != nil {
			return err
		}
		if last, seen := st.CachedInfo().State.LastSeq, rec.lastSeq(); seen < last {
			return fmt.Errorf("read events up to #%d of %d", seen, last)
		}
		return nil
	})
}

// requestPublisher publishes valid requests, each on its own lane, one
// every tick until stopped, through publish. A request counts as sent at
// its first attempt.
type requestPublisher struct {
	stopped chan struct{}
	done    chan error
}

func startPublisher(ctx context.Context, run string, every time.Duration, rec *outcomeRecord, publish func(ctx context.Context, id string, body []byte) error) *requestPublisher {
	p := &requestPublisher{stopped: make(chan struct{}), done: make(chan error, 1)}
	run = fmt.Sprintf("%s-%d", run, time.Now().UnixNano())
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; ; i++ {
			id := fmt.Sprintf("%s-%d", run, i)
			body := lanegen.RequestJSON(lanegen.RequestOptions{RequestID: id,
				Lane: lanegen.Options{Events: 40, Seed: uint64(i + 1), RunAgentID: fmt.Sprintf("%s-agent-%d", run, i)}})
			rec.published(id, time.Now())
			if err := publish(ctx, id, body); err != nil {
				p.done <- err
				return
			}
			select {
			case <-p.stopped:
				p.done <- nil
				return
			case <-ctx.Done():
				p.done <- ctx.Err()
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// stop ends the publisher; a second call returns nil.
func (p *requestPublisher) stop() error {
	select {
	case <-p.stopped:
		return nil
	default:
	}
	close(p.stopped)
	return <-p.done
}

// outcomeRecord keeps when each request was published and when each of its
// outcome events arrived.
type outcomeRecord struct {
	mu        sync.Mutex
	order     []string
	sent      map[string]time.Time
	outcomes  map[string][]time.Time
	arrivals  []time.Time
	kinds     map[string]int
	produced  map[string]time.Time // the first outcome's occurred_at
	seq       uint64
	followErr error
}

func newOutcomeRecord() *outcomeRecord {
	return &outcomeRecord{sent: map[string]time.Time{}, outcomes: map[string][]time.Time{}, kinds: map[string]int{}, produced: map[string]time.Time{}}
}

// follow reads every terminal outcome from the start of the events stream
// until ctx ends; the channel closes when it has stopped.
func (r *outcomeRecord) follow(ctx context.Context, js jetstream.JetStream) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		o := events.FollowOptions{FromStart: true, Subjects: []string{events.SubjectActivated, events.SubjectSkipped, events.SubjectFailed}}
		err := events.Follow(ctx, js, o, func(ev events.Event) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			now := time.Now()
			r.outcomes[ev.RequestID()] = append(r.outcomes[ev.RequestID()], now)
			var header struct {
				OccurredAt time.Time `json:"occurred_at"`
			}
			if _, seen := r.produced[ev.RequestID()]; !seen && json.Unmarshal(ev.Raw, &header) == nil {
				r.produced[ev.RequestID()] = header.OccurredAt
			}
			r.arrivals = append(r.arrivals, now)
			kind := ev.Kind
			if ev.Failed != nil {
				kind += ":" + ev.Failed.Error.Code
			}
			r.kinds[kind]++
			r.seq = ev.Sequence
			return nil
		})
		if ctx.Err() == nil {
			r.mu.Lock()
			r.followErr = err
			r.mu.Unlock()
		}
	}()
	return done
}

func (r *outcomeRecord) published(id string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.order = append(r.order, id)
	r.sent[id] = at
}

// unanswered counts the requests published before t with no outcome yet.
func (r *outcomeRecord) unanswered(t time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id, at := range r.sent {
		if at.Before(t) && len(r.outcomes[id]) == 0 {
			n++
		}
	}
	return n
}

// longestGap is the longest time from the first publish to the last
// outcome in which no outcome arrived.
func (r *outcomeRecord) longestGap() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) == 0 {
		return 0
	}
	times := append([]time.Time{r.sent[r.order[0]]}, r.arrivals...)
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	for i := 1; i < len(times); i++ {
		longest = max(longest, times[i].Sub(times[i-1]))
	}
	return longest
}

// check fails the test unless every request has exactly one outcome and
// every outcome belongs to a request of this run.
func (r *outcomeRecord) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.followErr != nil {
		t.Errorf("reading the events ended early: %v", r.followErr)
	}
	for _, id := range r.order {
		if n := len(r.outcomes[id]); n != 1 {
			t.Errorf("request %s has %d outcome events, want 1", id, n)
		}
	}
	for id := range r.outcomes {
		if _, ok := r.sent[id]; !ok {
			t.Errorf("outcome for %s, which was never published", id)
		}
	}
}

func (r *outcomeRecord) outcomeCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.arrivals)
}

func (r *outcomeRecord) requestCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.order)
}

func (r *outcomeRecord) lastSeq() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

func (r *outcomeRecord) kindCounts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.kinds)
}
