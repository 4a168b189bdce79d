package facts

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
)

// env is one embedded JetStream server with Cairn's topology and a fact
// store whose clock the test controls.
type env struct {
	srv   *testenv.Server
	js    jetstream.JetStream
	store *Store
	clock *testClock
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := testenv.NATS(t, testenv.Options{})
	js := srv.JetStream(t)
	stores := testenv.Stores(t, js, 1)
	clock := &testClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	return &env{srv: srv, js: js, store: NewStore(stores.Facts, clock.Now), clock: clock}
}

// testClock advances one second on every reading, so successive writes get
// distinct, ordered timestamps.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// testConfig is a worker configuration with short delays.
func (e *env) testConfig(t *testing.T) Config {
	cfg := DefaultConfig()
	cfg.Workers = 2
	cfg.AckWait = 3 * time.Second
	cfg.ExtractTimeout = 10 * time.Second
	cfg.Retry = []time.Duration{20 * time.Millisecond}
	cfg.PullWait = 100 * time.Millisecond
	cfg.MemoryDir = t.TempDir()
	cfg.Now = e.clock.Now
	return cfg
}

// startWorker runs a worker until the test ends and returns a stop function
// that cancels it and waits for Run to return.
func (e *env) startWorker(t *testing.T, cfg Config) (w *Worker, stop func()) {
	t.Helper()
	w, err := NewWorker(e.js, e.store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Errorf("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return w, stop
}

// publishJob enqueues job the way the processor does (Nats-Msg-Id =
// job.MsgID()), or with msgID when it is set, to force a second delivery.
func (e *env) publishJob(t *testing.T, job Job, msgID string) {
	t.Helper()
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	if msgID == "" {
		msgID = job.MsgID()
	}
	msg := nats.NewMsg(topology.SubjectHarvest)
	msg.Data = data
	if _, err := e.js.PublishMsg(context.Background(), msg, jetstream.WithMsgID(msgID)); err != nil {
		t.Fatal(err)
	}
}

// memoryEvents returns every message of MEMORY_EVENTS in order.
func (e *env) memoryEvents(t *testing.T) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, topology.StreamMemory)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// waitEvents waits until MEMORY_EVENTS holds n messages and returns them.
func (e *env) waitEvents(t *testing.T, n int) []*jetstream.RawStreamMsg {
	t.Helper()
	var got []*jetstream.RawStreamMsg
	testenv.Eventually(t, 20*time.Second, func() error {
		got = e.memoryEvents(t)
		if len(got) < n {
			return fmt.Errorf("%d memory events, want %d", len(got), n)
		}
		return nil
	})
	return got
}

// waitSettled waits until the harvester has delivered every job in the
// stream and none is awaiting an ack.
func (e *env) waitSettled(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, 20*time.Second, func() error {
		s, err := e.js.Stream(ctx, topology.StreamHarvest)
		if err != nil {
			return err
		}
		si, err := s.Info(ctx)
		if err != nil {
			return err
		}
		c, err := e.js.Consumer(ctx, topology.StreamHarvest, topology.ConsumerHarvester)
		if err != nil {
			return err
		}
		ci, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if ci.Delivered.Stream < si.State.LastSeq || ci.NumAckPending > 0 || ci.NumPending > 0 {
			return fmt.Errorf("delivered %d of %d, %d awaiting ack", ci.Delivered.Stream, si.State.LastSeq, ci.NumAckPending)
		}
		return nil
	})
}

// scripted is an extractor whose behaviour the test sets per call.
type scripted struct {
	name  string
	calls atomic.Int32
	fn    func(ctx context.Context, call int, job Job) ([]Candidate, error)
}

func (s *scripted) Name() string { return s.name }

func (s *scripted) Extract(ctx context.Context, job Job) (Extraction, error) {
	cands, err := s.fn(ctx, int(s.calls.Add(1)), job)
	n := len(jobEntries(job))
	return Extraction{Candidates: cands, Coverage: Coverage{EntriesCut: n, EntriesRead: n, Complete: true}}, err
}

func routerOf(t *testing.T, ex Extractor) *Router {
	t.Helper()
	r, err := NewRouter(ex)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
