package jsrun

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	testStream  = "JOBS"
	testSubject = "jobs.run"
	testDurable = "runner"
)

// fixture is one embedded JetStream server and a runner's configuration.
type fixture struct {
	srv *testenv.Server
	js  jetstream.JetStream
	cfg Config
}

func newFixture(t *testing.T, withStream bool) *fixture {
	t.Helper()
	srv := testenv.NATS(t, testenv.Options{})
	f := &fixture{srv: srv, js: srv.JetStream(t), cfg: Config{
		Stream: testStream,
		Consumer: jetstream.ConsumerConfig{
			Durable: testDurable, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 3 * time.Second,
			MaxDeliver: 5, MaxAckPending: 64, FilterSubject: testSubject,
		},
		Workers: 2, PullWait: 100 * time.Millisecond, DrainTimeout: 5 * time.Second, Metrics: noMetrics{},
	}}
	if withStream {
		f.createStream(t)
	}
	return f
}

func (f *fixture) createStream(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := f.js.CreateStream(ctx, jetstream.StreamConfig{Name: testStream, Subjects: []string{testSubject}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) publish(t *testing.T, body string) {
	t.Helper()
	if _, err := f.js.Publish(context.Background(), testSubject, []byte(body)); err != nil {
		t.Fatal(err)
	}
}

// start runs a runner of h until the test ends; stop cancels it and waits
// for Run to return.
func (f *fixture) start(t *testing.T, h Handler) (stop func()) {
	t.Helper()
	r, err := New(f.js, f.cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Error("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// info returns the durable's state, failing the test when it does not
// exist.
func (f *fixture) info(t *testing.T) *jetstream.ConsumerInfo {
	t.Helper()
	ci, err := f.tryInfo()
	if err != nil {
		t.Fatal(err)
	}
	return ci
}

// acked waits until the durable's ack floor reaches seq with nothing
// awaiting an ack (the runner may not have created the durable yet).
func (f *fixture) acked(t *testing.T, seq uint64) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() error {
		ci, err := f.tryInfo()
		if err != nil {
			return err
		}
		if ci.AckFloor.Stream != seq || ci.NumAckPending != 0 || ci.NumPending != 0 {
			return fmt.Errorf("ack floor %d, %d awaiting ack, %d pending", ci.AckFloor.Stream, ci.NumAckPending, ci.NumPending)
		}
		return nil
	})
}

func (f *fixture) tryInfo() (*jetstream.ConsumerInfo, error) {
	c, err := f.js.Consumer(context.Background(), testStream, testDurable)
	if err != nil {
		return nil, err
	}
	return c.Info(context.Background())
}

// seen records the bodies handled, in order, with their delivery counts.
type seen struct {
	mu  sync.Mutex
	got []string
}

func (s *seen) add(msg Msg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, fmt.Sprintf("%s#%d", msg.Data(), msg.Delivered))
}

func (s *seen) has(want string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.got {
		if g == want {
			return nil
		}
	}
	return fmt.Errorf("handled %v, want %s", s.got, want)
}

func TestPullsNoMoreThanFreeWorkers(t *testing.T) {
	f := newFixture(t, true)
	release := make(chan struct{})
	var running atomic.Int32
	f.start(t, func(ctx context.Context, msg Msg) Decision {
		running.Add(1)
		<-release
		return Decision{Action: Ack}
	})
	for i := range 5 {
		f.publish(t, fmt.Sprint("job-", i))
	}
	testenv.Eventually(t, 10*time.Second, func() error {
		if running.Load() != 2 {
			return fmt.Errorf("%d running, want 2", running.Load())
		}
		return nil
	})
	if ci := f.info(t); ci.NumAckPending != 2 {
		t.Fatalf("%d messages delivered to 2 busy workers", ci.NumAckPending)
	}
	close(release)
	f.acked(t, 5)
}

// Nak redelivers after its delay, Term ends the message, and a panic
// settles nothing, so the message returns after AckWait; the runner goes on.
func TestSettlesAsTheHandlerDecides(t *testing.T) {
	f := newFixture(t, true)
	f.cfg.Consumer.AckWait = time.Second
	var s seen
	f.start(t, func(ctx context.Context, msg Msg) Decision {
		s.add(msg)
		switch {
		case msg.Delivered > 1:
			return Decision{Action: AckSync}
		case string(msg.Data()) == "nak":
			return Decision{Action: Nak, Delay: 50 * time.Millisecond}
		case string(msg.Data()) == "term":
			return Decision{Action: Term, Reason: "bad input"}
		case string(msg.Data()) == "panic":
			panic("boom")
		}
		return Decision{Action: Ack}
	})
	for _, body := range []string{"nak", "term", "panic", "ok"} {
		f.publish(t, body)
	}
	for _, want := range []string{"nak#2", "panic#2", "ok#1", "term#1"} {
		testenv.Eventually(t, 10*time.Second, func() error { return s.has(want) })
	}
	f.acked(t, 4)
	if err := s.has("term#2"); err == nil {
		t.Fatal("a terminated message was redelivered")
	}
}

// A handler that outlives AckWait is not redelivered while it runs.
func TestHeartbeatHoldsSlowWork(t *testing.T) {
	f := newFixture(t, true)
	f.cfg.Consumer.AckWait = time.Second
	var calls atomic.Int32
	f.start(t, func(ctx context.Context, msg Msg) Decision {
		calls.Add(1)
		select {
		case <-time.After(2500 * time.Millisecond): // well past AckWait
		case <-ctx.Done():
		}
		return Decision{Action: Ack}
	})
	f.publish(t, "slow")
	f.acked(t, 1)
	if ci := f.info(t); calls.Load() != 1 || ci.NumRedelivered != 0 {
		t.Fatalf("%d calls, %d redelivered while the handler ran", calls.Load(), ci.NumRedelivered)
	}
}

// Shutdown waits DrainTimeout for running handlers, then cancels them and
// Naks what they did not finish, at once: the next runner gets it.
func TestDrainNaksWhatOutlivesTheTimeout(t *testing.T) {
	f := newFixture(t, true)
	f.cfg.DrainTimeout = 50 * time.Millisecond
	f.cfg.Consumer.AckWait = time.Minute
	started := make(chan struct{})
	stop := f.start(t, func(ctx context.Context, msg Msg) Decision {
		close(started)
		<-ctx.Done()
		return Decision{Action: Term, Reason: "cancelled"}
	})
	f.publish(t, "long")
	<-started
	stop()
	var s seen
	f.start(t, func(ctx context.Context, msg Msg) Decision {
		s.add(msg)
		return Decision{Action: Ack}
	})
	testenv.Eventually(t, 10*time.Second, func() error { return s.has("long#2") })
}

// A durable deleted while the runner runs is created again, and messages
// published meanwhile are handled.
func TestRecreatesDeletedDurable(t *testing.T) {
	f := newFixture(t, true)
	var s seen
	f.start(t, func(ctx context.Context, msg Msg) Decision {
		s.add(msg)
		return Decision{Action: Ack}
	})
	f.publish(t, "before")
	testenv.Eventually(t, 10*time.Second, func() error { return s.has("before#1") })
	for round := range 2 {
		if err := f.js.DeleteConsumer(context.Background(), testStream, testDurable); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprint("after-", round)
		f.publish(t, body)
		testenv.Eventually(t, 10*time.Second, func() error { return s.has(body + "#1") })
	}
}

// A runner started before its stream exists waits for it instead of giving
// up, and handles what is published once it does.
func TestWaitsForAMissingStream(t *testing.T) {
	f := newFixture(t, false)
	var s seen
	f.start(t, func(ctx context.Context, msg Msg) Decision {
		s.add(msg)
		return Decision{Action: Ack}
	})
	f.createStream(t)
	f.publish(t, "late")
	testenv.Eventually(t, 20*time.Second, func() error { return s.has("late#1") })
}

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	f := newFixture(t, false)
	ok := func(context.Context, Msg) Decision { return Decision{} }
	for name, mutate := range map[string]func(*Config){
		"no stream":  func(c *Config) { c.Stream = "" },
		"no durable": func(c *Config) { c.Consumer.Durable = "" },
		"no workers": func(c *Config) { c.Workers = 0 },
		"no ackwait": func(c *Config) { c.Consumer.AckWait = 0 },
		"no metrics": func(c *Config) { c.Metrics = nil },
	} {
		cfg := f.cfg
		mutate(&cfg)
		if _, err := New(f.js, cfg, ok); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

type noMetrics struct{}

func (noMetrics) Delivered(string, uint64) {}
func (noMetrics) InFlight(string, int)     {}

// While the durable cannot be created, the runner retries with a growing
// pause (100, 200, 400 ms after the first three failures), never in a tight
// loop, and logs each failure.
func TestRetriesAMissingDurableWithBackoff(t *testing.T) {
	f := newFixture(t, false)
	var rec failureLog
	f.cfg.Logger = slog.New(&rec)
	f.start(t, func(ctx context.Context, msg Msg) Decision { return Decision{Action: Ack} })
	var at []time.Time
	testenv.Eventually(t, 10*time.Second, func() error {
		if at = rec.times(); len(at) < 4 {
			return fmt.Errorf("%d failures logged", len(at))
		}
		return nil
	})
	if gap := at[3].Sub(at[0]); gap < 700*time.Millisecond {
		t.Fatalf("four failed creates within %v: no backoff", gap)
	}
}

// failureLog is a slog handler that keeps the times of warnings.
type failureLog struct {
	mu sync.Mutex
	at []time.Time
}

func (l *failureLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *failureLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *failureLog) WithGroup(string) slog.Handler            { return l }

func (l *failureLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.at = append(l.at, r.Time)
	}
	return nil
}

func (l *failureLog) times() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at...)
}
